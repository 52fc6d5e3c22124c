"""alie:Z: "a little is enough" (Baruch et al. 2019; docs/theory.md §8): the Byzantine rows become, per coordinate,
mu_i - z sd_i, with mu_i and sd_i the mean and population standard deviation of the honest rows. Omniscient."""

import math

from signsim.stages.base import Param

NAME = "alie"
PARAMS = (Param("z", "float", default=1.0, low=0.0),)
SUMMARY = "honest mean - z honest standard deviation, per coordinate"
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
        var = 0.0
        for m in range(B, M):
            var += (msg[m, i] - mu) ** 2
        value = mu - p[0] * math.sqrt(var / H)
        for m in range(B):
            msg[m, i] = value


def reference(msg, p, gen):
    return msg


def reference_rows(msgs, B, p):
    honest = msgs[B:]
    out = msgs.copy()
    out[:B] = honest.mean(axis=0) - p[0] * honest.std(axis=0)
    return out
