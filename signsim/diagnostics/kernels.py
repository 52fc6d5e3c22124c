"""Numba kernels for the success-probability estimators (math.md §1).

The sign kernels count, per coordinate, how often a per-sample or minibatch gradient is > 0 and exactly 0
(the sign(0) policy is applied afterwards, in expectation: ``signsim.diagnostics.votes``), and accumulate the
first two moments; the diversity kernels accumulate squared norms (docs/theory.md §1, §6).
"""

import numpy as np
from numba import njit, prange

from signsim.engine.dispatch import add_noise, check_noise, check_problem, problem_oracle, problem_sample_grad


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
    """R independent pairs: a minibatch of ``small`` and an independent minibatch of ``big`` samples, each one
    call of the worker's own oracle (so a split-batch worker picks one label group per minibatch, as in a run).
    Returns the sums over the pairs of |G_small|^2 and |G_big|^2, in fixed chunks (thread-count independent).
    Pair r uses worker r mod M."""
    check_problem(code)  # the oracle and noise kernels cannot raise inside the parallel loop
    check_noise(ncode)
    d = x.shape[0]
    C = len(gens)
    acc = np.zeros((C, 2))
    for c in prange(C):
        gen = gens[np.int64(c)]
        gs, gb = np.empty(d), np.empty(d)
        for r in range(c * R // C, (c + 1) * R // C):
            problem_oracle(code, x, r % workers, gen, small, pf, pi, A, b, ptr, idx, gs)
            add_noise(ncode, nparams, gen, small, gs)
            problem_oracle(code, x, r % workers, gen, big, pf, pi, A, b, ptr, idx, gb)
            add_noise(ncode, nparams, gen, big, gb)
            s_small = 0.0
            s_big = 0.0
            for i in range(d):
                s_small += gs[i] * gs[i]
                s_big += gb[i] * gb[i]
            acc[c, 0] += s_small
            acc[c, 1] += s_big
    out = np.zeros(2)
    for c in range(C):
        out[0] += acc[c, 0]
        out[1] += acc[c, 1]
    return out


#: fixed number of row chunks in ``group_sign_moments`` (sums in chunk order: thread-count independent)
ROW_CHUNKS = 16


@njit(cache=True, parallel=True)
def group_sign_moments(code, x, pf, pi, A, b, rows):
    """Over the training rows ``rows`` (one worker's group): per coordinate the number of per-sample gradients
    that are > 0 and that are exactly 0, and their sum and sum of squares (docs/theory.md §1). Rows are
    split into ROW_CHUNKS fixed chunks, summed in chunk order."""
    check_problem(code)  # the per-sample kernels cannot raise inside the parallel loop
    d = x.shape[0]
    n = rows.shape[0]
    acc = np.zeros((ROW_CHUNKS, 4, d))
    for c in prange(ROW_CHUNKS):
        buf = np.empty(d)
        a = acc[c]
        for t in range(c * n // ROW_CHUNKS, (c + 1) * n // ROW_CHUNKS):
            problem_sample_grad(code, x, pf, pi, A, b, rows[t], buf)
            for i in range(d):
                v = buf[i]
                a[0, i] += 1.0 if v > 0.0 else 0.0
                a[1, i] += 1.0 if v == 0.0 else 0.0
                a[2, i] += v
                a[3, i] += v * v
    out = np.zeros((4, d))
    for c in range(ROW_CHUNKS):
        for k in range(4):
            for i in range(d):
                out[k, i] += acc[c, k, i]
    return out[0], out[1], out[2], out[3]


@njit(cache=True, parallel=True)
def monte_carlo_worker_counts(code, x, pf, pi, A, b, ptr, idx, ncode, nparams, tau, W, gens, S):
    """For each worker w < W, S independent minibatch gradients from worker w's own oracle (its shard, its
    split-batch draw, its local objective), split into len(gens) fixed chunks with their own generators and
    summed in chunk order (thread-count independent); chunk c draws worker 0's samples, then worker 1's, ...
    from generator c. Returns W x d arrays: the number of draws > 0 and exactly 0, and the sum and sum of
    squares of the draws. Memory: O(len(gens) d) besides the result, whatever W."""
    check_problem(code)  # the oracle and noise kernels cannot raise inside the parallel loop
    check_noise(ncode)
    d = x.shape[0]
    C = len(gens)
    o_pos, o_zero, o_s1, o_s2 = np.zeros((W, d)), np.zeros((W, d)), np.zeros((W, d)), np.zeros((W, d))
    pos, zero = np.empty((C, d)), np.empty((C, d))
    s1, s2 = np.empty((C, d)), np.empty((C, d))
    for w in range(W):
        for c in prange(C):
            gen = gens[np.int64(c)]
            buf = np.empty(d)
            for i in range(d):
                pos[c, i] = 0.0
                zero[c, i] = 0.0
                s1[c, i] = 0.0
                s2[c, i] = 0.0
            for _ in range(c * S // C, (c + 1) * S // C):
                problem_oracle(code, x, w, gen, tau, pf, pi, A, b, ptr, idx, buf)
                add_noise(ncode, nparams, gen, tau, buf)
                # one fused pass, branch-free: the signs of a minibatch gradient are coin flips near rho = 1/2,
                # so a branch per coordinate would be mispredicted half the time (and would not vectorize)
                for i in range(d):
                    v = buf[i]
                    pos[c, i] += 1.0 if v > 0.0 else 0.0
                    zero[c, i] += 1.0 if v == 0.0 else 0.0
                    s1[c, i] += v
                    s2[c, i] += v * v
        for c in range(C):  # explicit loops: an array expression here would be one more parallel region
            for i in range(d):
                o_pos[w, i] += pos[c, i]
                o_zero[w, i] += zero[c, i]
                o_s1[w, i] += s1[c, i]
                o_s2[w, i] += s2[c, i]
    return o_pos, o_zero, o_s1, o_s2
