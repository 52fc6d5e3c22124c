"""trimmed:BETA: sort each column, drop t = floor(beta M) values at each end (beta M as written in decimal,
``signsim.numbers.floor_share``: trimmed:0.29 of 100 drops 29), average the rest in sorted order
(Yin et al. 2018; docs/theory.md §8); beta in [0, 1/2), default 0.1. 32 d bits."""


import numpy as np

from signsim.numbers import floor_share
from signsim.stages.base import FLOAT_BITS, Param
from signsim.stages.sorting import block_width, load_block, network_size, sort_columns, sort_in_place, sorting_network

NAME = "trimmed"
PARAMS = (Param("beta", "float", default=0.1, low=0.0, high=0.5, high_open=True),)
SUMMARY = "coordinate-wise mean without the floor(beta M) largest and smallest values"
THEORY = "§8.4"
SUMMED = False


def finish(agg, M, p, tie, gen):
    return


def robust(msg, agg, p):
    M, d = msg.shape
    t = floor_share(p[0], M)
    W = block_width(M, 65536)
    buf = np.empty((M, W))
    acc = np.empty(W)
    pairs = np.empty((network_size(M), 2), dtype=np.int64)
    nc = sorting_network(M, pairs)
    col = np.empty(M)
    for i0 in range(0, d, W):
        w = min(W, d - i0)
        if load_block(msg, i0, w, buf, acc):  # a NaN maybe: the heapsort's order, column by column
            for i in range(i0, i0 + w):
                for m in range(M):
                    col[m] = msg[m, i]
                sort_in_place(col)
                s = 0.0
                for m in range(t, M - t):
                    s += col[m]
                agg[i] = s / (M - 2 * t)
            continue
        sort_columns(buf, w, pairs, nc)  # each column in increasing order, as the heapsort's
        for j in range(w):
            acc[j] = 0.0
        for m in range(t, M - t):  # summed in that order (the sum starts at +0.0: where a +0.0 and a -0.0 come
            for j in range(w):     # out of the two sorts in the other order, the sums are the same)
                acc[j] += buf[m, j]
        dst = agg[i0:i0 + w]
        for j in range(w):
            dst[j] = acc[j] / (M - 2 * t)


def sparse(compressor):
    return False


def down_bits(compressor, cparams, M, d, sign_zero, tie):
    return FLOAT_BITS * d


def reference(msgs, p, tie, server, prev):
    M = msgs.shape[0]
    t = floor_share(p[0], M)
    return np.sort(msgs, axis=0)[t:M - t].mean(axis=0)


def work(n, d, p):
    return n * d * max(1, n.bit_length())  # a sort of each column
