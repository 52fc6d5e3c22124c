"""gaussian:SIGMA[:MU]: a Byzantine worker sends a vector of independent N(MU, SIGMA^2) draws from its own stream
(ByzFL's Gaussian attack; docs/theory.md §8.5). Blind. ByzFL's defaults MU = 0, SIGMA = 1."""

from signsim.stages.base import Param

NAME = "gaussian"
PARAMS = (Param("sigma", "float", low=0.0, default=1.0), Param("mu", "float", default=0.0))
SUMMARY = "send independent N(mu, sigma^2) draws (default 1:0)"
THEORY = "§8.5"
OMNISCIENT = False


def row(out, p, gen):
    for i in range(out.shape[0]):
        out[i] = p[1] + p[0] * gen.standard_normal()


def rows(msg, B, p):
    return


def reference(msg, p, gen):
    return p[1] + p[0] * gen.standard_normal(msg.size)


def reference_rows(msgs, B, p):
    return msgs
