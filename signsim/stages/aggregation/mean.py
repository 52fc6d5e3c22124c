"""mean: the server broadcasts (1/M) sum_m msg_m, summed coordinate by coordinate in worker order (docs/theory.md
§2). Its size depends on the messages (docs/theory.md §7): 32 d for floats; ceil(log2(M + 1)) d for the sum of
M signs (ceil(log2(2 M + 1)) d when they may be 0); for sparse messages the cheaper of dense floats and
(index, float) pairs, 1 + min(32 d, n (32 + I)), counted as the run goes."""

import math

from signsim.stages.base import FLOAT_BITS, index_bits

NAME = "mean"
PARAMS = ()
SUMMARY = "(1/M) sum of the messages"
THEORY = "§8.4"
SUMMED = True  # the loop sums the messages, then ``finish``


def finish(agg, M, p, tie, gen):
    for i in range(agg.shape[0]):
        agg[i] /= M


def robust(msg, agg, p):
    return


def sparse(compressor):
    """Is the broadcast sent sparse (its size counted as the run goes)?"""
    return compressor.BROADCAST == "sparse"


def down_bits(compressor, cparams, M, d, sign_zero, tie):
    """Bits of the broadcast to one worker (a sparse broadcast: its dense upper bound)."""
    if compressor.BROADCAST == "sparse":
        return 1 + min(FLOAT_BITS * d, d * (FLOAT_BITS + index_bits(d)))
    if compressor.BROADCAST == "sign-sum":
        return math.ceil(math.log2(compressor.sum_values(M, sign_zero))) * d
    return FLOAT_BITS * d


def reference(msgs, p, tie, server, prev):
    import numpy as np

    total = np.zeros(msgs.shape[1])
    for row in msgs:  # in worker order, as the kernel sums
        total = total + row
    return total / msgs.shape[0]
