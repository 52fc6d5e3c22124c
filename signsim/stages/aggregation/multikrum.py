"""multikrum:F[:K[:blanchard|byzfl]]: Multi-Krum (Blanchard et al. 2017; docs/theory.md §8.4): each message m gets
Krum's score s(m) = sum of ||msg_m - msg_j||^2 over its n nearest other messages j (n = M - F - 2, Blanchard et al.'s,
by default; M - F - 1 with ``byzfl``, as ByzFL's MultiKrum scores); the server broadcasts the mean of the K messages of
smallest score (ties: the lower worker index; K = M - F when omitted). K = 1 is Krum. Needs M > 2 F + 2 (ByzFL's
convention: M > 2 F and M >= 2) and K <= M. 32 d bits."""

import numpy as np

from signsim.errors import InputError
from signsim.stages.base import FLOAT_BITS, Param
from signsim.stages.rows import (
    KRUM_SCORES,
    distance_lanes,
    krum_neighbours,
    krum_scores_of,
    mean_of_rows_blocked,
    pair_distances,
)
from signsim.stages.sorting import stable_order

NAME = "multikrum"
PARAMS = (Param("f", "int", low=0, high=2 ** 31),
          Param("k", "int", low=0, high=2 ** 31, default=0.0, default_text="M - f"),
          Param("scores", "choice", default="blanchard", choices=KRUM_SCORES, omit_default=True))
SUMMARY = "mean of the K messages of smallest Krum score (K = M - f when omitted or 0; Blanchard et al. 2017)"
THEORY = "§8.4"
SUMMED = False


def check_workers(M, byzantine, spec):
    from signsim.stages import registry

    f, k, convention = (int(v) for v in registry.parse("aggregation", spec).params)
    if convention == 0 and not M > 2 * f + 2:
        raise InputError(f"--aggregate {spec} with --workers {M}: Multi-Krum needs M > 2 f + 2")
    if convention == 1 and not (M > 2 * f and M >= 2):
        raise InputError(f"--aggregate {spec} with --workers {M}: ByzFL's Multi-Krum needs M > 2 f and M >= 2")
    if k > M:
        raise InputError(f"--aggregate {spec} with --workers {M}: averages k <= M messages")


def finish(agg, M, p, tie, gen):
    return


def robust(msg, agg, p):
    M = msg.shape[0]
    k = int(p[1]) if p[1] > 0 else M - int(p[0])
    D = np.empty((M, distance_lanes(M)))
    pair_distances(msg, M, D)
    score = np.empty(M)
    krum_scores_of(D, M, krum_neighbours(M, int(p[0]), int(p[2])), score)
    order = np.empty(M, dtype=np.int64)
    stable_order(score, order)  # ties to the lower index
    mean_of_rows_blocked(msg, order, k, agg)


def sparse(compressor):
    return False


def down_bits(compressor, cparams, M, d, sign_zero, tie):
    return FLOAT_BITS * d


def reference(msgs, p, tie, server, prev):
    M = msgs.shape[0]
    f = int(p[0])
    k = int(p[1]) if p[1] > 0 else M - f
    dist = ((msgs[:, None, :] - msgs[None, :, :]) ** 2).sum(axis=2)
    n = M - f - (1 if int(p[2]) else 2)
    scores = [np.sort(np.delete(dist[m], m))[:n].sum() for m in range(M)]
    chosen = sorted(range(M), key=lambda m: (scores[m], m))[:k]
    return msgs[chosen].mean(axis=0)


def work(n, d, p):
    return n * n * d  # every pair's squared distance

def memory(n, d, p):
    return 8 * n * ((n + 7) // 8 * 8)  # every pair's squared distance (rows.pair_distances)
