"""krum:F: Krum (Blanchard et al. 2017; docs/theory.md §8.4). Each message m gets the score
s(m) = sum of ||msg_m - msg_j||^2 over its M - F - 2 nearest other messages j; the server broadcasts the message
of smallest score (ties: the lower worker index). Needs M > 2 F + 2. 32 d bits."""

import numpy as np

from signsim.errors import InputError
from signsim.stages.base import FLOAT_BITS, Param
from signsim.stages.sorting import sort_in_place

NAME = "krum"
PARAMS = (Param("f", "int", low=0, high=2 ** 31),)
SUMMARY = "the message closest to its M - f - 2 nearest others (Blanchard et al. 2017)"
THEORY = "§8.4"
SUMMED = False


def check_workers(M, byzantine, spec):
    f = int(float(str(spec).partition(":")[2] or 0))
    if not M > 2 * f + 2:
        raise InputError(f"--aggregate {spec} with --workers {M}: Krum needs M > 2 f + 2")


def finish(agg, M, p, tie, gen):
    return


def robust(msg, agg, p):
    M, d = msg.shape
    n = M - int(p[0]) - 2
    row = np.empty(M - 1)
    best = 0
    best_score = np.inf
    for m in range(M):
        c = 0
        for j in range(M):
            if j != m:
                s = 0.0
                for i in range(d):
                    t = msg[m, i] - msg[j, i]
                    s += t * t
                row[c] = s
                c += 1
        sort_in_place(row)
        score = 0.0
        for c in range(n):
            score += row[c]
        if score < best_score:
            best_score = score
            best = m
    for i in range(d):
        agg[i] = msg[best, i]


def sparse(compressor):
    return False


def down_bits(compressor, cparams, M, d, sign_zero, tie):
    return FLOAT_BITS * d


def reference(msgs, p, tie, server, prev):
    M = msgs.shape[0]
    n = M - int(p[0]) - 2
    dist = ((msgs[:, None, :] - msgs[None, :, :]) ** 2).sum(axis=2)
    scores = [np.sort(np.delete(dist[m], m))[:n].sum() for m in range(M)]
    return msgs[int(np.argmin(scores))].copy()
