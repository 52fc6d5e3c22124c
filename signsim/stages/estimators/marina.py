"""MARINA (docs/theory.md §8.10; Gorbunov, Burlachenko, Li and Richtárik 2021, Algorithm 1, and PP-MARINA, its
partial participation): the server keeps g (hbar[0]) and draws a coin c_k ~ Bernoulli(p) each round (c_0 = 1).
When c_k = 1 (``fresh``) every worker sends its exact gradient uncompressed and g <- their mean; otherwise each
participant sends msg = C(grad f_m(x^k) - grad f_m(x^{k-1})), the difference of its oracle at the iterate and at the
previous one (hbar[2], which the loop keeps: the estimator's TWO_POINT), and g <- g + the mean of the messages. The
server steps x <- x - gamma g. Needs exact local gradients and the mean."""

from signsim.stages.base import Param

# what MARINA does as no estimator does (its work is the loop's TWO_POINT difference and its server state)
from signsim.stages.estimators.none import (  # noqa: F401
    after,
    before,
    extra_bits,
    reference_after,
    reference_before,
    reference_correct,
)

NAME = "marina"
PARAMS = (Param("p", default=0.1, low=0.0, high=1.0, low_open=True),)
SUMMARY = ("with probability p (and in round 0) every worker sends its exact gradient and g <- their mean; else "
           "msg = C(grad f_m(x^k) - grad f_m(x^{k-1})), g <- g + mean")
THEORY = "§8.10"
STATE = False  # no per-worker state
SERVER_STATE = True  # g (hbar[0]), the coin of the round (hbar[1][0]), the previous iterate (hbar[2])
TWO_POINT = True  # the loop sends the difference of the oracle at the iterate and at hbar[2]



def fresh(k, hbar, p, gen):
    full = k == 0 or gen.random() < p[0]
    hbar[1, 0] = 1.0 if full else 0.0
    return full




def direction(agg, hbar, p, S, M, H):
    g = hbar[0]
    if hbar[1, 0] == 1.0:  # a round of exact gradients: g is their mean
        for i in range(agg.shape[0]):
            g[i] = agg[i]
    else:
        for i in range(agg.shape[0]):
            g[i] += agg[i]
    return g





def reference_direction(broadcast, hbar, p, S, M, H):
    hbar[0] = broadcast.copy() if hbar[1, 0] == 1.0 else hbar[0] + broadcast
    return hbar[0].copy()
