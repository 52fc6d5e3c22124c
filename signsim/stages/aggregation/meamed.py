"""meamed:F: mean around the median (Xie, Koyejo and Gupta 2018; ByzFL's Meamed; docs/theory.md §8.4): per
coordinate, the mean of the M - F values closest to the coordinate's median (the mean of the two middle values
for even M; ties: the lower worker index). Needs M > 2 F. 32 d bits."""

import numpy as np

from signsim.errors import InputError
from signsim.stages.base import FLOAT_BITS, Param
from signsim.stages.sorting import sort_in_place, stable_order

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


def robust(msg, agg, p):
    M, d = msg.shape
    k = M - int(p[0])
    col = np.empty(M)
    srt = np.empty(M)
    gap = np.empty(M)
    order = np.empty(M, dtype=np.int64)
    for i in range(d):
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
        agg[i] = s / k


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
