"""multikrum:F[:K]: Multi-Krum (Blanchard et al. 2017; docs/theory.md §8.4): each message m gets Krum's score
s(m) = sum of ||msg_m - msg_j||^2 over its M - F - 2 nearest other messages j; the server broadcasts the mean of the
K messages of smallest score (ties: the lower worker index; K = M - F when omitted). K = 1 is Krum. ByzFL's MultiKrum
scores the M - F - 1 nearest instead. Needs M > 2 F + 2 and K <= M. 32 d bits."""

import numpy as np

from signsim.errors import InputError
from signsim.stages.base import FLOAT_BITS, Param
from signsim.stages.rows import mean_of_rows, squared_distance
from signsim.stages.sorting import sort_in_place, stable_order

NAME = "multikrum"
PARAMS = (Param("f", "int", low=0, high=2 ** 31),
          Param("k", "int", low=0, high=2 ** 31, default=0.0, default_text="M - f"))
SUMMARY = "mean of the K messages of smallest Krum score (K = M - f when omitted or 0; Blanchard et al. 2017)"
THEORY = "§8.4"
SUMMED = False


def check_workers(M, byzantine, spec):
    parts = str(spec).split(":")
    f = int(float(parts[1])) if len(parts) > 1 and parts[1] else 0
    k = int(float(parts[2])) if len(parts) > 2 and parts[2] else 0
    if not M > 2 * f + 2:
        raise InputError(f"--aggregate {spec} with --workers {M}: Multi-Krum needs M > 2 f + 2")
    if k > M:
        raise InputError(f"--aggregate {spec} with --workers {M}: averages k <= M messages")


def finish(agg, M, p, tie, gen):
    return


def robust(msg, agg, p):
    M = msg.shape[0]
    n = M - int(p[0]) - 2
    k = int(p[1]) if p[1] > 0 else M - int(p[0])
    row = np.empty(M - 1)
    score = np.empty(M)
    for m in range(M):
        c = 0
        for j in range(M):
            if j != m:
                row[c] = squared_distance(msg, m, j)
                c += 1
        sort_in_place(row)
        total = 0.0
        for c in range(n):
            total += row[c]
        score[m] = total
    order = np.empty(M, dtype=np.int64)
    stable_order(score, order)  # ties to the lower index
    mean_of_rows(msg, order, k, agg)


def sparse(compressor):
    return False


def down_bits(compressor, cparams, M, d, sign_zero, tie):
    return FLOAT_BITS * d


def reference(msgs, p, tie, server, prev):
    M = msgs.shape[0]
    f = int(p[0])
    k = int(p[1]) if p[1] > 0 else M - f
    dist = ((msgs[:, None, :] - msgs[None, :, :]) ** 2).sum(axis=2)
    scores = [np.sort(np.delete(dist[m], m))[:M - f - 2].sum() for m in range(M)]
    chosen = sorted(range(M), key=lambda m: (scores[m], m))[:k]
    return msgs[chosen].mean(axis=0)
