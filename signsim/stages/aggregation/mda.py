"""mda:F: minimum-diameter averaging (El Mhamdi, Guerraoui, Guirguis, Hoang and Rouault 2020; ByzFL's MDA;
docs/theory.md §8.4): the mean of the M - F messages whose largest pairwise Euclidean distance is smallest (among
equal diameters, the first subset in lexicographic order of worker indices). It tries all C(M, F) subsets: refused
above MAX_SUBSETS. Needs M > 2 F. 32 d bits."""

import math

import numpy as np

from signsim.errors import InputError
from signsim.stages.base import FLOAT_BITS, Param
from signsim.stages.rows import mean_of_rows, squared_distance
from signsim.stages.sorting import next_subset

NAME = "mda"
PARAMS = (Param("f", "int", low=0, high=2 ** 31),)
SUMMARY = "mean of the M - f messages of smallest diameter, over every subset (El Mhamdi et al. 2020)"
THEORY = "§8.4"
SUMMED = False
#: the most subsets a round may try (C(M, f)): about a second of the server's time per round at M = 30
MAX_SUBSETS = 200_000


def check_workers(M, byzantine, spec):
    f = int(float(str(spec).partition(":")[2] or 0))
    if not M > 2 * f:
        raise InputError(f"--aggregate {spec} with --workers {M}: MDA needs M > 2 f")
    if math.comb(M, f) > MAX_SUBSETS:
        raise InputError(f"--aggregate {spec} with --workers {M}: MDA tries all C(M, f) = {math.comb(M, f):,} "
                         f"subsets, more than {MAX_SUBSETS:,}; use fewer workers per round or a smaller f")


def finish(agg, M, p, tie, gen):
    return


def robust(msg, agg, p):
    M = msg.shape[0]
    k = M - int(p[0])
    dist = np.zeros((M, M))
    for a in range(M):
        for b in range(a + 1, M):
            dist[a, b] = dist[b, a] = math.sqrt(squared_distance(msg, a, b))
    idx = np.arange(k)
    best = idx.copy()
    best_diameter = np.inf
    while True:
        diameter = 0.0
        for a in range(k):
            for b in range(a + 1, k):
                diameter = max(diameter, dist[idx[a], idx[b]])
        if diameter < best_diameter:
            best_diameter = diameter
            best[:] = idx
        if not next_subset(idx, k, M):  # the next combination in lexicographic order
            break
    mean_of_rows(msg, best, k, agg)


def sparse(compressor):
    return False


def down_bits(compressor, cparams, M, d, sign_zero, tie):
    return FLOAT_BITS * d


def reference(msgs, p, tie, server, prev):
    from itertools import combinations

    M = msgs.shape[0]
    k = M - int(p[0])
    best, best_diameter = None, np.inf
    for subset in combinations(range(M), k):
        pts = msgs[list(subset)]
        diameter = max((np.linalg.norm(a - b) for a, b in combinations(pts, 2)), default=0.0)
        if diameter < best_diameter:
            best, best_diameter = subset, diameter
    return msgs[list(best)].mean(axis=0)


def work(n, d, p):
    import math

    return n * n * d + math.comb(n, min(n, int(p[0]))) * (n - int(p[0])) ** 2  # distances, then every subset's diameter


def memory(n, d, p):
    return 8 * n * n  # the distance matrix
