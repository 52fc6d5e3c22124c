"""median: agg_i = the coordinate-wise median of msg[:, i], the mean of the two middle values for even M
(Yin et al. 2018; docs/theory.md §8). 32 d bits."""

import numpy as np

from signsim.stages.base import FLOAT_BITS
from signsim.stages.sorting import sort_in_place

NAME = "median"
PARAMS = ()
SUMMARY = "coordinate-wise median"
THEORY = "§8.4"
SUMMED = False  # ``robust`` reads every message


def finish(agg, M, p, tie, gen):
    return


def robust(msg, agg, p):
    M, d = msg.shape
    col = np.empty(M)
    for i in range(d):
        for m in range(M):
            col[m] = msg[m, i]
        sort_in_place(col)
        if M % 2 == 1:
            agg[i] = col[M // 2]
        else:
            agg[i] = 0.5 * (col[M // 2 - 1] + col[M // 2])


def sparse(compressor):
    return False


def down_bits(compressor, cparams, M, d, sign_zero, tie):
    return FLOAT_BITS * d


def reference(msgs, p, tie, server, prev):
    return np.median(msgs, axis=0)


def work(n, d, p):
    return n * d * max(1, n.bit_length())  # a sort of each column
