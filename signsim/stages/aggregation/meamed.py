"""meamed:F: mean around the median (Xie, Koyejo and Gupta 2018; ByzFL's Meamed; docs/theory.md §8.4): per
coordinate, the mean of the M - F values closest to the coordinate's median (the mean of the two middle values
for even M; ties: the lower worker index). Needs M > 2 F. 32 d bits."""

import numpy as np

from signsim.errors import InputError
from signsim.stages.base import FLOAT_BITS, Param
from signsim.stages.sorting import (
    block_width,
    load_block,
    network_size,
    sort_columns,
    sort_in_place,
    sorting_network,
    stable_order,
)

NAME = "meamed"
PARAMS = (Param("f", "int", low=0, high=2 ** 31),)
SUMMARY = "per coordinate, the mean of the M - f values closest to the median (Xie et al. 2018)"
THEORY = "§8.4"
SUMMED = False


def check_workers(M, byzantine, spec):
    f = int(float(str(spec).partition(":")[2] or 0))
    if not M > 2 * f:
        raise InputError(f"--aggregate {spec} with --workers {M}: the mean around the median needs M > 2 f")


def finish(agg, M, p, tie, gen):
    return


def _meamed_column(msg, i, k, col, srt, gap, order):
    M = msg.shape[0]
    for m in range(M):
        col[m] = msg[m, i]
        srt[m] = col[m]
    sort_in_place(srt)
    med = srt[M // 2] if M % 2 else 0.5 * (srt[M // 2 - 1] + srt[M // 2])
    for m in range(M):
        gap[m] = abs(col[m] - med)
    stable_order(gap, order)  # ties to the lower index
    s = 0.0
    for c in range(k):
        s += col[order[c]]
    return s / k


def robust(msg, agg, p):
    M, d = msg.shape
    k = M - int(p[0])
    W = block_width(M, 32768)
    buf = np.empty((M, W))  # a block of columns
    srt = np.empty((M, W))  # ... sorted
    gp = np.empty((M, W))  # ... their distances to the column's median
    sel = np.empty((k + 1, W))  # sel[c, j]: the value of rank c by (distance, index) in column j; row k: the rest
    chk = np.empty(W)
    med = np.empty(W)
    rank = np.empty(W, dtype=np.int64)
    pairs = np.empty((network_size(M), 2), dtype=np.int64)
    nc = sorting_network(M, pairs)
    col = np.empty(M)
    srt1 = np.empty(M)
    gap1 = np.empty(M)
    order = np.empty(M, dtype=np.int64)
    for i0 in range(0, d, W):
        w = min(W, d - i0)
        load_block(msg, i0, w, buf, chk)
        finite = True
        for j in range(w):
            if not chk[j] - chk[j] == 0.0:  # a NaN or an infinity maybe: column by column, as before
                finite = False
        if not finite:
            for i in range(i0, i0 + w):
                agg[i] = _meamed_column(msg, i, k, col, srt1, gap1, order)
            continue
        for m in range(M):
            for j in range(w):
                srt[m, j] = buf[m, j]
        sort_columns(srt, w, pairs, nc)  # the same values in each place as the heapsort's (up to a zero's sign,
        if M % 2:                        # which no distance below sees)
            for j in range(w):
                med[j] = srt[M // 2, j]
        else:
            for j in range(w):
                med[j] = 0.5 * (srt[M // 2 - 1, j] + srt[M // 2, j])
        for m in range(M):
            for j in range(w):
                gp[m, j] = abs(buf[m, j] - med[j])
        for m in range(M):  # m's place in the order by increasing distance, ties to the lower index (stable_order's)
            for j in range(w):
                rank[j] = 0
            for q in range(M):
                before = q < m
                for j in range(w):
                    rank[j] += gp[q, j] < gp[m, j] or (before and gp[q, j] == gp[m, j])
            for j in range(w):
                sel[min(rank[j], k), j] = buf[m, j]
        for j in range(w):
            chk[j] = 0.0
        for c in range(k):  # summed in that order
            for j in range(w):
                chk[j] += sel[c, j]
        dst = agg[i0:i0 + w]
        for j in range(w):
            dst[j] = chk[j] / k


def sparse(compressor):
    return False


def down_bits(compressor, cparams, M, d, sign_zero, tie):
    return FLOAT_BITS * d


def reference(msgs, p, tie, server, prev):
    M, d = msgs.shape
    k = M - int(p[0])
    out = np.empty(d)
    for i in range(d):
        col = list(msgs[:, i])
        med = float(np.median(col))
        keep = sorted(range(M), key=lambda m: (abs(col[m] - med), m))[:k]
        out[i] = np.mean([col[m] for m in keep])
    return out


def work(n, d, p):
    return n * d * max(1, n.bit_length())  # a sort of each column
