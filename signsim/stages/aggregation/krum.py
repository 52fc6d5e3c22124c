"""krum:F[:blanchard|byzfl]: Krum (Blanchard et al. 2017; docs/theory.md §8.4). Each message m gets the score
s(m) = sum of ||msg_m - msg_j||^2 over its n nearest other messages j, n = M - F - 2 as Blanchard et al. score
(the default) or n = M - F - 1 as ByzFL's Krum does (``byzfl``); the server broadcasts the message of smallest score
(ties: the lower worker index). Needs M > 2 F + 2 (ByzFL's convention: M > 2 F and M >= 2). 32 d bits."""

import numpy as np

from signsim.errors import InputError
from signsim.stages.base import FLOAT_BITS, Param
from signsim.stages.rows import (
    KRUM_SCORES,
    distance_lanes,
    krum_neighbours,
    krum_scores_of,
    pair_distances,
)

NAME = "krum"
PARAMS = (Param("f", "int", low=0, high=2 ** 31),
          Param("scores", "choice", default="blanchard", choices=KRUM_SCORES, omit_default=True))
SUMMARY = ("the message closest to its M - f - 2 nearest others (Blanchard et al. 2017; :byzfl scores M - f - 1, as "
           "ByzFL)")
THEORY = "§8.4"
SUMMED = False


def check_workers(M, byzantine, spec):
    from signsim.stages import registry

    f, convention = (int(v) for v in registry.parse("aggregation", spec).params)
    if convention == 0 and not M > 2 * f + 2:
        raise InputError(f"--aggregate {spec} with --workers {M}: Krum needs M > 2 f + 2")
    if convention == 1 and not (M > 2 * f and M >= 2):
        raise InputError(f"--aggregate {spec} with --workers {M}: ByzFL's Krum needs M > 2 f and M >= 2")


def finish(agg, M, p, tie, gen):
    return


def robust(msg, agg, p):
    M, d = msg.shape
    D = np.empty((M, distance_lanes(M)))
    pair_distances(msg, M, D)
    score = np.empty(M)
    krum_scores_of(D, M, krum_neighbours(M, int(p[0]), int(p[1])), score)
    best = 0
    best_score = np.inf
    for m in range(M):  # the smallest score, ties to the lower index (a NaN score is never chosen over another)
        if score[m] < best_score:
            best_score = score[m]
            best = m
    for i in range(d):
        agg[i] = msg[best, i]


def sparse(compressor):
    return False


def down_bits(compressor, cparams, M, d, sign_zero, tie):
    return FLOAT_BITS * d


def reference(msgs, p, tie, server, prev):
    M = msgs.shape[0]
    n = M - int(p[0]) - (1 if int(p[1]) else 2)
    dist = ((msgs[:, None, :] - msgs[None, :, :]) ** 2).sum(axis=2)
    scores = [np.sort(np.delete(dist[m], m))[:n].sum() for m in range(M)]
    return msgs[int(np.argmin(scores))].copy()


def work(n, d, p):
    return n * n * d  # every pair's squared distance

def memory(n, d, p):
    return 8 * n * ((n + 7) // 8 * 8)  # every pair's squared distance (rows.pair_distances)
