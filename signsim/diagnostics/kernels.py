"""Numba kernels for the success-probability estimators (math.md §1).

Both count, per coordinate, how often the sign of a stochastic gradient agrees with the sign of the true
gradient g, and accumulate the first two moments of the stochastic gradient. A zero stochastic coordinate
counts by the sign(0) policy: ``plus`` as +1, ``zero`` as a failure, ``random`` as a fair coin (drawn in the
Monte Carlo kernel, counted as 1/2 in the exact one, which is its expectation).
"""

import numpy as np
from numba import njit, prange

from signsim.codes import SignZero
from signsim.engine.dispatch import add_noise, problem_oracle, problem_sample_grad


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


# Every long kernel below is a Python function that calls a compiled kernel over consecutive ranges of its
# samples (``signsim.interrupts.chunked``: about 0.1 s each), so that Ctrl-C and SIGTERM act between ranges.
# Each compiled range accumulates into arrays that persist across calls, in the same order as one call over
# everything would: results do not depend on the chunking.


def exact_counts(code, x, g, pf, pi, A, b, n, sign_zero, gen):
    """Over the n training rows (tau = 1, uniform sampling): successes (sum of agreements), and the sums of
    the per-sample gradients and of their squares, coordinate by coordinate."""
    from signsim.interrupts import chunked

    d = x.shape[0]
    succ, s1, s2 = np.zeros(d), np.zeros(d), np.zeros(d)
    chunked(n, lambda lo, hi: _exact_range(code, x, g, pf, pi, A, b, lo, hi, sign_zero, gen, succ, s1, s2))
    return succ, s1, s2


@njit(cache=True)
def _exact_range(code, x, g, pf, pi, A, b, lo, hi, sign_zero, gen, succ, s1, s2):
    d = x.shape[0]
    buf = np.empty(d)
    for j in range(lo, hi):
        problem_sample_grad(code, x, pf, pi, A, b, j, buf)
        for i in range(d):
            v = buf[i]
            succ[i] += _agree(v, g[i], sign_zero, gen, False)
            s1[i] += v
            s2[i] += v * v


def monte_carlo_counts(code, x, g, pf, pi, A, b, ptr, idx, ncode, nparams, tau, workers, gens, S, sign_zero):
    """S independent minibatch gradients (tau samples each; sample s uses worker s mod M's oracle), split
    into len(gens) fixed chunks, each with its own generator, summed in chunk order: the result does not
    depend on the number of threads. Returns successes, sum and sum of squares per coordinate."""
    from signsim.interrupts import chunked
    from signsim.resources import require

    d = x.shape[0]
    C = len(gens)
    require(3 * 8 * C * d, f"the Monte Carlo estimate ({C} chunks x dimension {d})", "reduce --dim")
    succ, s1, s2 = np.zeros((C, d)), np.zeros((C, d)), np.zeros((C, d))
    chunked(-(-S // C), lambda lo, hi: _mc_range(code, x, g, pf, pi, A, b, ptr, idx, ncode, nparams, tau, workers,
                                                   gens, S, sign_zero, lo, hi, succ, s1, s2))
    out_succ, out1, out2 = np.zeros(d), np.zeros(d), np.zeros(d)
    for c in range(C):
        out_succ += succ[c]
        out1 += s1[c]
        out2 += s2[c]
    return out_succ, out1, out2


@njit(cache=True, parallel=True)
def _mc_range(code, x, g, pf, pi, A, b, ptr, idx, ncode, nparams, tau, workers, gens, S, sign_zero, lo, hi,
              succ, s1, s2):
    """Samples lo..hi-1 of every chunk (chunk c holds samples c S / C to (c + 1) S / C - 1)."""
    d = x.shape[0]
    C = len(gens)
    for c in prange(C):
        gen = gens[np.int64(c)]
        buf = np.empty(d)
        first, last = c * S // C, (c + 1) * S // C
        for s in range(first + lo, min(first + hi, last)):
            problem_oracle(code, x, s % workers, gen, tau, pf, pi, A, b, ptr, idx, buf)
            add_noise(ncode, nparams, gen, tau, buf)
            for i in range(d):
                v = buf[i]
                succ[c, i] += _agree(v, g[i], sign_zero, gen, True)
                s1[c, i] += v
                s2[c, i] += v * v


def diversity_sums(code, x, pf, pi, A, b, rows, lo, hi):
    """One pass over training rows (``rows`` if non-empty, else lo..hi-1), O(d) extra memory:
    returns (sum_j ||grad f_j||^2, sum_j grad f_j) (math.md §6)."""
    from signsim.interrupts import chunked

    d = x.shape[0]
    total = np.zeros(d)
    sq = np.zeros(1)
    count = rows.shape[0] if rows.shape[0] > 0 else hi - lo
    chunked(count, lambda a, z: _diversity_range(code, x, pf, pi, A, b, rows, lo, a, z, sq, total))
    return sq[0], total


@njit(cache=True)
def _diversity_range(code, x, pf, pi, A, b, rows, lo, t0, t1, sq, total):
    d = x.shape[0]
    buf = np.empty(d)
    acc = sq[0]
    for t in range(t0, t1):
        j = rows[t] if rows.shape[0] > 0 else lo + t
        problem_sample_grad(code, x, pf, pi, A, b, j, buf)
        for i in range(d):
            acc += buf[i] * buf[i]
            total[i] += buf[i]
    sq[0] = acc


def two_batch_sums(code, x, pf, pi, A, b, ptr, idx, ncode, nparams, small, big, workers, gens, R):
    """R independent pairs: a minibatch of ``big`` samples whose first ``small`` form the small batch
    (drawn as two minibatches of small and big - small samples). Returns the sums over the pairs of
    |G_small|^2 and |G_big|^2, in fixed chunks (thread-count independent). Pair r uses worker r mod M."""
    from signsim.interrupts import chunked

    C = len(gens)
    acc = np.zeros((C, 2))
    chunked(-(-R // C), lambda lo, hi: _two_batch_range(code, x, pf, pi, A, b, ptr, idx, ncode, nparams, small, big,
                                                          workers, gens, R, lo, hi, acc))
    out = np.zeros(2)
    for c in range(C):
        out[0] += acc[c, 0]
        out[1] += acc[c, 1]
    return out


@njit(cache=True, parallel=True)
def _two_batch_range(code, x, pf, pi, A, b, ptr, idx, ncode, nparams, small, big, workers, gens, R, lo, hi, acc):
    d = x.shape[0]
    C = len(gens)
    for c in prange(C):
        gen = gens[np.int64(c)]
        gs, gr = np.empty(d), np.empty(d)
        first, last = c * R // C, (c + 1) * R // C
        for r in range(first + lo, min(first + hi, last)):
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
