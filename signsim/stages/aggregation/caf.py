"""caf:F: the covariance-bound agnostic filter (Allouah, Guerraoui and Stephan 2025, Algorithm 2; ByzFL's CAF;
docs/theory.md §8.4). Weights c_m = 1; while sum c > M - 2F: mu = the c-weighted mean, (lambda, v) = the top
eigenpair of the c-weighted covariance, tau_m = ((msg_m - mu) . v)^2, c_m <- c_m (1 - tau_m / max tau); the
broadcast is the mu of smallest lambda met. signsim's conventions: the eigenpair is exact (LAPACK's symmetric solver
on the M x M weighted centred Gram matrix, which has the covariance's non-zero spectrum), where ByzFL takes one
power step from an unseeded random start; max tau runs over the messages still weighted (each step then zeroes at
least one, so the filter ends within M steps); the filter stops once the weighted messages coincide (lambda <= 1e-12
of their mean square about the centre); the first step always runs (F = 0: the mean); lambdas within a relative
1e-9 of the smallest count as equal and the earliest step is taken; a message with a non-finite entry starts with
weight 0. Needs M > 2 F. 32 d bits."""

import math

import numpy as np

from signsim.errors import InputError
from signsim.stages.base import FLOAT_BITS, Param
from signsim.stages.rows import BLOCK, centred_gram_blocked

NAME = "caf"
PARAMS = (Param("f", "int", low=0, high=2 ** 31),)
SUMMARY = "covariance-bound agnostic filter: down-weights along the top eigenvector (Allouah et al. 2025)"
THEORY = "§8.4"
SUMMED = False
#: lambdas within this relative distance of the smallest count as equal (rounding, not a tuning constant)
TIE = 1e-9
#: the weighted messages coincide when lambda is at most this fraction of their mean square about the centre
FLAT = 1e-12


def check_workers(M, byzantine, spec):
    f = int(float(str(spec).partition(":")[2] or 0))
    if not M > 2 * f:
        raise InputError(f"--aggregate {spec} with --workers {M}: CAF needs M > 2 f")


def finish(agg, M, p, tie, gen):
    return


def robust(msg, agg, p):
    M, d = msg.shape
    floor = M - 2 * int(p[0])
    G = np.empty((M, M))
    bad = np.empty(M, dtype=np.bool_)
    centred_gram_blocked(msg, G, bad)
    c = np.empty(M)
    total = 0.0
    for m in range(M):
        c[m] = 0.0 if bad[m] else 1.0
        total += c[m]
    weights = np.zeros((M + 1, M))  # each step's weights, and its lambda
    lam = np.full(M + 1, np.inf)
    g = np.empty(M)
    root = np.empty(M)
    B = np.empty((M, M))
    K = np.empty((M, M))
    steps = 0
    while total > 0.0:
        for m in range(M):
            weights[steps, m] = c[m]
            root[m] = math.sqrt(c[m])
        # B[a, b] = (msg_a - mu) . (msg_b - mu) from G, with mu - z = sum_m c_m (msg_m - z) / total
        for a in range(M):
            s = 0.0
            for b in range(M):
                s += c[b] * G[a, b]
            g[a] = s / total
        h = 0.0
        square = 0.0
        for a in range(M):
            h += c[a] * g[a]
            square += c[a] * G[a, a]
        h /= total
        square /= total
        for a in range(M):
            for b in range(M):
                B[a, b] = G[a, b] - g[a] - g[b] + h
                K[a, b] = root[a] * root[b] * B[a, b] / total  # the covariance's spectrum, on M x M
        w, V = np.linalg.eigh(K)
        lam[steps] = max(w[M - 1], 0.0)
        steps += 1
        if lam[steps - 1] <= FLAT * square:
            break
        # tau_m is proportional to ((msg_m - mu) . v)^2 with v = sum_b sqrt(c_b) V[b, top] (msg_b - mu) / norm
        top = 0.0
        for a in range(M):
            s = 0.0
            for b in range(M):
                s += B[a, b] * root[b] * V[b, M - 1]
            g[a] = s * s  # tau, up to a common factor
            if c[a] > 0.0:
                top = max(top, g[a])
        if not top > 0.0:  # (rounding: the weighted messages coincide)
            break
        total = 0.0
        for a in range(M):
            if c[a] > 0.0:
                c[a] *= 1.0 - g[a] / top
            total += c[a]
        if total <= floor:
            break
    low = np.inf
    for s in range(steps):
        low = min(low, lam[s])
    chosen = 0
    while chosen < steps - 1 and not lam[chosen] <= low + TIE * low:
        chosen += 1
    total = 0.0
    for m in range(M):
        total += weights[chosen, m]
    acc = np.empty(BLOCK)
    for i0 in range(0, d, BLOCK):  # the same sums, in the same order (m), a block of coordinates at a time
        w = min(BLOCK, d - i0)
        for j in range(w):
            acc[j] = 0.0
        for m in range(M):
            wm = weights[chosen, m]
            if wm > 0.0:
                src = msg[m, i0:i0 + w]
                for j in range(w):
                    acc[j] += wm * src[j]
        dst = agg[i0:i0 + w]
        for j in range(w):
            dst[j] = acc[j] / total if total > 0.0 else np.nan


def sparse(compressor):
    return False


def down_bits(compressor, cparams, M, d, sign_zero, tie):
    return FLOAT_BITS * d


def reference(msgs, p, tie, server, prev):
    M = msgs.shape[0]
    floor = M - 2 * int(p[0])
    finite = np.isfinite(msgs).all(axis=1)
    z = msgs[np.flatnonzero(finite)[-1]] if finite.any() else msgs[0]
    with np.errstate(over="ignore", invalid="ignore"):
        Y = msgs - z
        G = Y @ Y.T
    finite &= np.isfinite(np.diag(G))
    G[~finite, :] = 0.0
    G[:, ~finite] = 0.0
    c = finite.astype(float)
    candidates = []  # (lambda, weights) of each step
    while c.sum() > 0:
        total = c.sum()
        g = G @ c / total
        B = G - g[:, None] - g[None, :] + c @ g / total
        K = np.sqrt(np.outer(c, c)) * B / total
        w, V = np.linalg.eigh(K)
        lam = max(w[-1], 0.0)
        candidates.append((lam, c.copy()))
        if lam <= FLAT * (c @ np.diag(G)) / total:
            break
        tau = (B @ (np.sqrt(c) * V[:, -1])) ** 2
        c = np.where(c > 0, c * (1 - tau / tau[c > 0].max()), 0.0)
        if c.sum() <= floor:
            break
    if not candidates:
        return np.full(msgs.shape[1], np.nan)
    low = min(lam for lam, _ in candidates)
    c = next(c for lam, c in candidates if lam <= low + TIE * low)
    keep = c > 0
    return (c[keep, None] * msgs[keep]).sum(axis=0) / c.sum()


def work(n, d, p):
    return n * n * d + int(p[0]) * n ** 3  # the Gram matrix, then an eigenvalue problem per filtering step


def memory(n, d, p):
    return 8 * (4 * n * n + n)  # the Gram matrix, the weights of every step, two scratch matrices
