"""ipm:EPS: inner-product manipulation (Xie et al. 2020; docs/theory.md §8): the Byzantine rows become -eps times
the honest mean. Omniscient."""

from signsim.stages.base import Param

NAME = "ipm"
PARAMS = (Param("eps", "float", default=0.1, low=0.0, low_open=True),)
SUMMARY = "-eps honest mean"
THEORY = "§8.5"
OMNISCIENT = True


def row(out, p, gen):
    return


def rows(msg, B, p):
    M, d = msg.shape
    H = M - B
    for i in range(d):
        mu = 0.0
        for m in range(B, M):
            mu += msg[m, i]
        mu /= H
        value = -p[0] * mu
        for m in range(B):
            msg[m, i] = value


def reference(msg, p, gen):
    return msg


def reference_rows(msgs, B, p):
    out = msgs.copy()
    out[:B] = -p[0] * msgs[B:].mean(axis=0)
    return out
