"""smea:F: smallest maximum eigenvalue averaging (Allouah, Guerraoui, Gupta, Pinot and Stephan 2023; ByzFL's SMEA;
docs/theory.md §8.4): the mean of the M - F messages whose empirical covariance has the smallest largest eigenvalue.
It tries all C(M, F) subsets (refused above MAX_SUBSETS), each subset's largest eigenvalue exact, from the
eigenvalues of its centred Gram matrix (k x k, k = M - F: the covariance's non-zero spectrum) by LAPACK's symmetric
solver, where ByzFL takes one power step from an unseeded random start. Ties: eigenvalues within a relative 1e-9 of
the smallest count as equal, and the first such subset in lexicographic order of worker indices is taken. A subset
holding a message with a non-finite entry scores +inf. Needs M > 2 F. 32 d bits."""

import math

import numpy as np

from signsim.errors import InputError
from signsim.stages.base import FLOAT_BITS, Param
from signsim.stages.rows import centred_gram, mean_of_rows
from signsim.stages.sorting import next_subset

NAME = "smea"
PARAMS = (Param("f", "int", low=0, high=2 ** 31),)
SUMMARY = ("mean of the M - f messages whose covariance has the smallest top eigenvalue, over every subset "
           "(Allouah et al. 2023)")
THEORY = "§8.4"
SUMMED = False
#: the most subsets a round may try (C(M, f)): each costs a k x k eigenvalue problem, about 20 us at k = 20, so
#: about half a second of the server's time per round at the cap
MAX_SUBSETS = 20_000
#: eigenvalues within this relative distance of the smallest count as equal (rounding, not a tuning constant)
TIE = 1e-9


def check_workers(M, byzantine, spec):
    f = int(float(str(spec).partition(":")[2] or 0))
    if not M > 2 * f:
        raise InputError(f"--aggregate {spec} with --workers {M}: SMEA needs M > 2 f")
    if math.comb(M, f) > MAX_SUBSETS:
        raise InputError(f"--aggregate {spec} with --workers {M}: SMEA tries all C(M, f) = {math.comb(M, f):,} "
                         f"subsets, more than {MAX_SUBSETS:,}; use fewer workers per round or a smaller f")


def finish(agg, M, p, tie, gen):
    return


def _subset_top_eigenvalue(G, bad, idx, k, K):
    """The largest eigenvalue of the covariance (1/k) sum_{a in S} (x_a - mu_S)(x_a - mu_S)^T of the subset
    S = idx[:k]: that of its doubly centred Gram matrix over k; +inf when S holds a bad message."""
    for a in range(k):
        if bad[idx[a]]:
            return np.inf
    row = np.empty(k)
    total = 0.0
    for a in range(k):
        s = 0.0
        for b in range(k):
            s += G[idx[a], idx[b]]
        row[a] = s / k
        total += s
    total /= k * k
    for a in range(k):
        for b in range(k):
            K[a, b] = (G[idx[a], idx[b]] - row[a] - row[b] + total) / k
    for a in range(k):
        for b in range(k):
            if not math.isfinite(K[a, b]):
                return np.inf
    return max(np.linalg.eigvalsh(K)[k - 1], 0.0)


def robust(msg, agg, p):
    M = msg.shape[0]
    k = M - int(p[0])
    G = np.empty((M, M))
    bad = np.empty(M, dtype=np.bool_)
    centred_gram(msg, G, bad)
    count = 1
    for c in range(k):  # C(M, k), exactly, in integers
        count = count * (M - c) // (c + 1)
    lam = np.empty(count)
    K = np.empty((k, k))
    idx = np.arange(k)
    c = 0
    while True:
        lam[c] = _subset_top_eigenvalue(G, bad, idx, k, K)
        c += 1
        if not next_subset(idx, k, M):
            break
    low = lam[0]
    for c in range(count):
        low = min(low, lam[c])
    chosen = 0
    while not lam[chosen] <= low + TIE * low:  # the first within TIE of the smallest (inf: the first)
        chosen += 1
    for c in range(k):
        idx[c] = c
    for _ in range(chosen):
        next_subset(idx, k, M)
    mean_of_rows(msg, idx, k, agg)


def sparse(compressor):
    return False


def down_bits(compressor, cparams, M, d, sign_zero, tie):
    return FLOAT_BITS * d


def reference(msgs, p, tie, server, prev):
    from itertools import combinations

    M = msgs.shape[0]
    k = M - int(p[0])
    finite = np.isfinite(msgs).all(axis=1)
    z = msgs[np.flatnonzero(finite)[-1]] if finite.any() else msgs[0]
    with np.errstate(over="ignore", invalid="ignore"):
        Y = msgs - z
        G = Y @ Y.T
    finite &= np.isfinite(np.diag(G))
    scores = []
    for subset in combinations(range(M), k):
        S = list(subset)
        if not finite[S].all():
            scores.append(np.inf)
            continue
        H = np.eye(k) - 1.0 / k  # the centring projector
        K = H @ G[np.ix_(S, S)] @ H / k
        scores.append(max(np.linalg.eigvalsh(K)[-1], 0.0) if np.isfinite(K).all() else np.inf)
    low = min(scores)
    chosen = next(s for s, lam in zip(combinations(range(M), k), scores, strict=True) if lam <= low + TIE * low)
    return msgs[list(chosen)].mean(axis=0)


def work(n, d, p):
    import math

    k = n - int(p[0])
    return n * n * d + math.comb(n, min(n, int(p[0]))) * k ** 3  # the Gram matrix, then every subset's eigenvalue


def memory(n, d, p):
    return 8 * n * n  # the Gram matrix
