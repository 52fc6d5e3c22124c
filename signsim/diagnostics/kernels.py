"""Numba kernels for the success-probability estimators (math.md §1).

Both count, per coordinate, how often the sign of a stochastic gradient agrees with the sign of the true
gradient g, and accumulate the first two moments of the stochastic gradient. A zero stochastic coordinate
counts by the sign(0) policy: ``plus`` as +1, ``zero`` as a failure, ``random`` as a fair coin (drawn in the
Monte Carlo kernel, counted as 1/2 in the exact one, which is its expectation).
"""

import numpy as np
from numba import njit, prange

from signsim.codes import SignZero
from signsim.engine.dispatch import add_noise, check_noise, check_problem, problem_oracle, problem_sample_grad


@njit(cache=True, inline="always")
def _agree(v, gi, sign_zero, gen, draw):
    if v > 0.0:
        return 1.0 if gi > 0.0 else 0.0
    if v < 0.0:
        return 1.0 if gi < 0.0 else 0.0
    if sign_zero == SignZero.PLUS:
        return 1.0 if gi > 0.0 else 0.0
    if sign_zero == SignZero.ZERO:
        return 0.0
    if draw:
        return 1.0 if gen.random() < 0.5 else 0.0
    return 0.5


@njit(cache=True)
def exact_counts(code, x, g, pf, pi, A, b, n, sign_zero, gen):
    """Over the n training rows (tau = 1, uniform sampling): successes (sum of agreements), and the sums of
    the per-sample gradients and of their squares, coordinate by coordinate."""
    d = x.shape[0]
    succ, s1, s2 = np.zeros(d), np.zeros(d), np.zeros(d)
    buf = np.empty(d)
    for j in range(n):
        problem_sample_grad(code, x, pf, pi, A, b, j, buf)
        for i in range(d):
            v = buf[i]
            succ[i] += _agree(v, g[i], sign_zero, gen, False)
            s1[i] += v
            s2[i] += v * v
    return succ, s1, s2


@njit(cache=True, parallel=True)
def monte_carlo_counts(code, x, g, pf, pi, A, b, ptr, idx, ncode, nparams, tau, workers, gens, S, sign_zero):
    """S independent minibatch gradients (tau samples each; sample s uses worker s mod M's oracle), split
    into len(gens) fixed chunks, each with its own generator, summed in chunk order: the result does not
    depend on the number of threads. Returns successes, sum and sum of squares per coordinate."""
    check_problem(code)  # the oracle and noise kernels cannot raise inside the parallel loop
    check_noise(ncode)
    d = x.shape[0]
    C = len(gens)
    succ, s1, s2 = np.zeros((C, d)), np.zeros((C, d)), np.zeros((C, d))
    for c in prange(C):
        gen = gens[np.int64(c)]
        buf = np.empty(d)
        for s in range(c * S // C, (c + 1) * S // C):
            problem_oracle(code, x, s % workers, gen, tau, pf, pi, A, b, ptr, idx, buf)
            add_noise(ncode, nparams, gen, tau, buf)
            for i in range(d):
                v = buf[i]
                succ[c, i] += _agree(v, g[i], sign_zero, gen, True)
                s1[c, i] += v
                s2[c, i] += v * v
    out_succ, out1, out2 = np.zeros(d), np.zeros(d), np.zeros(d)
    for c in range(C):
        for i in range(d):
            out_succ[i] += succ[c, i]
            out1[i] += s1[c, i]
            out2[i] += s2[c, i]
    return out_succ, out1, out2


@njit(cache=True)
def diversity_sums(code, x, pf, pi, A, b, rows, lo, hi):
    """One pass over training rows (``rows`` if non-empty, else lo..hi-1), O(d) extra memory:
    returns (sum_j ||grad f_j||^2, sum_j grad f_j) (math.md §6)."""
    d = x.shape[0]
    total = np.zeros(d)
    buf = np.empty(d)
    sq = 0.0
    count = rows.shape[0] if rows.shape[0] > 0 else hi - lo
    for t in range(count):
        j = rows[t] if rows.shape[0] > 0 else lo + t
        problem_sample_grad(code, x, pf, pi, A, b, j, buf)
        for i in range(d):
            sq += buf[i] * buf[i]
            total[i] += buf[i]
    return sq, total


@njit(cache=True, parallel=True)
def two_batch_sums(code, x, pf, pi, A, b, ptr, idx, ncode, nparams, small, big, workers, gens, R):
    """R independent pairs: a minibatch of ``big`` samples whose first ``small`` form the small batch
    (drawn as two minibatches of small and big - small samples). Returns the sums over the pairs of
    |G_small|^2 and |G_big|^2, in fixed chunks (thread-count independent). Pair r uses worker r mod M."""
    check_problem(code)  # the oracle and noise kernels cannot raise inside the parallel loop
    check_noise(ncode)
    d = x.shape[0]
    C = len(gens)
    acc = np.zeros((C, 2))
    for c in prange(C):
        gen = gens[np.int64(c)]
        gs, gr = np.empty(d), np.empty(d)
        for r in range(c * R // C, (c + 1) * R // C):
            problem_oracle(code, x, r % workers, gen, small, pf, pi, A, b, ptr, idx, gs)
            add_noise(ncode, nparams, gen, small, gs)
            problem_oracle(code, x, r % workers, gen, big - small, pf, pi, A, b, ptr, idx, gr)
            add_noise(ncode, nparams, gen, big - small, gr)
            s_small = 0.0
            s_big = 0.0
            for i in range(d):
                gb = (small * gs[i] + (big - small) * gr[i]) / big
                s_small += gs[i] * gs[i]
                s_big += gb * gb
            acc[c, 0] += s_small
            acc[c, 1] += s_big
    out = np.zeros(2)
    for c in range(C):
        out[0] += acc[c, 0]
        out[1] += acc[c, 1]
    return out
