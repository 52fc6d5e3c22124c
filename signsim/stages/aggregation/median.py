"""median: agg_i = the coordinate-wise median of msg[:, i], the mean of the two middle values for even M
(Yin et al. 2018; docs/theory.md §8). 32 d bits."""

import numpy as np

from signsim.stages.base import FLOAT_BITS
from signsim.stages.sorting import block_width, load_block, network_size, sort_columns, sort_in_place, sorting_network

NAME = "median"
PARAMS = ()
SUMMARY = "coordinate-wise median"
THEORY = "§8.4"
SUMMED = False  # ``robust`` reads every message


def finish(agg, M, p, tie, gen):
    return


def _median_by_heapsort(msg, i, col):
    M = msg.shape[0]
    for m in range(M):
        col[m] = msg[m, i]
    sort_in_place(col)
    if M % 2 == 1:
        return col[M // 2]
    return 0.5 * (col[M // 2 - 1] + col[M // 2])


def robust(msg, agg, p):
    M, d = msg.shape
    W = block_width(M, 65536)
    buf = np.empty((M, W))
    chk = np.empty(W)
    redo = np.empty(W, dtype=np.bool_)
    pairs = np.empty((network_size(M), 2), dtype=np.int64)
    nc = sorting_network(M, pairs)
    col = np.empty(M)
    lo = (M - 1) // 2
    hi = M // 2
    for i0 in range(0, d, W):
        w = min(W, d - i0)
        dst = agg[i0:i0 + w]
        if load_block(msg, i0, w, buf, chk):  # a NaN maybe: the heapsort's order, column by column
            for j in range(w):
                redo[j] = True
        else:
            sort_columns(buf, w, pairs, nc)  # each column in increasing order, as the heapsort's
            for j in range(w):
                dst[j] = 0.5 * (buf[lo, j] + buf[hi, j]) if lo != hi else buf[lo, j]
                redo[j] = buf[lo, j] == 0.0 or buf[hi, j] == 0.0  # a middle 0: its sign is the heapsort's
        for j in range(w):
            if redo[j]:
                dst[j] = _median_by_heapsort(msg, i0 + j, col)


def sparse(compressor):
    return False


def down_bits(compressor, cparams, M, d, sign_zero, tie):
    return FLOAT_BITS * d


def reference(msgs, p, tie, server, prev):
    return np.median(msgs, axis=0)


def work(n, d, p):
    return n * d * max(1, n.bit_length())  # a sort of each column
