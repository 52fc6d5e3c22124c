"""Numba kernels for the success-probability estimators (docs/theory.md §1).

The sign kernels count, per coordinate, how often a per-sample or minibatch gradient is > 0 and exactly 0
(the sign(0) policy is applied afterwards, in expectation: ``signsim.diagnostics.votes``), and accumulate the
first two moments; the diversity kernels accumulate squared norms (docs/theory.md §1, §6).

Every long kernel is a Python function that calls a compiled kernel over consecutive ranges of its samples
(``signsim.interface.interrupts.chunked``: about 0.1 s each), so that Ctrl-C and SIGTERM act between ranges. Each
compiled range accumulates into arrays that persist across calls, in the same order as one call over
everything would: results do not depend on the chunking (nor on the number of threads).
"""

import numpy as np
from numba import njit, prange

from signsim.engine.dispatch import check_code, check_noise, noisy_gradient, problem_sample_grad
from signsim.problems.sampling import FULL_BATCH


def _for(compiled, code):
    """The compiled kernel ``compiled`` for the family of problem ``code``: its first argument, the family's problems
    (``signsim.engine.dispatch.Problems``), makes it compile (and load) only that family's problem kernels."""
    import functools

    from signsim.engine.dispatch import Problems, family_of

    return functools.partial(compiled, Problems(family_of(code)))


def diversity_sums(problem, x, rows, lo, hi):
    """One pass over training rows (``rows`` if non-empty, else lo..hi-1) of ``problem``, O(d) extra memory:
    returns (sum_j ||grad f_j||^2, sum_j grad f_j) (docs/theory.md §6)."""
    from signsim.engine import loop
    from signsim.interface.interrupts import chunked

    code = problem.code
    check_code(code)
    d = x.shape[0]
    total = np.zeros(d)
    sq = np.zeros(1)
    count = rows.shape[0] if rows.shape[0] > 0 else hi - lo
    k = _for(_diversity_range, code)
    data = loop.problem_data(problem)
    chunked(count, lambda a, z: k(code, x, data, rows, lo, a, z, sq, total))
    return sq[0], total


@njit(cache=True, nogil=True)
def _diversity_range(problems, code, x, data, rows, lo, t0, t1, sq, total):
    pf, pi, A, b = data.pf, data.pi, data.A, data.b
    d = x.shape[0]
    buf = np.empty(d)
    acc = sq[0]
    for t in range(t0, t1):
        j = rows[t] if rows.shape[0] > 0 else lo + t
        problem_sample_grad(problems, code, x, pf, pi, A, b, j, buf)
        for i in range(d):
            acc += buf[i] * buf[i]
            total[i] += buf[i]
    sq[0] = acc


def two_batch_sums(problem, x, ncode, nparams, small, big, workers, gens, R):
    """R independent pairs, from the oracles of ``problem`` with the noise model of code ``ncode``: a minibatch of
    ``small`` and an independent minibatch of ``big`` samples, each one call of the worker's own oracle (so a
    split-batch worker picks one label group per minibatch, as in a run). Returns the sums over the pairs of
    |G_small|^2 and |G_big|^2, in fixed chunks (thread-count independent). Pair r uses worker r mod M."""
    from signsim.engine import loop
    from signsim.interface.interrupts import chunked

    code = problem.code
    check_code(code)  # the oracle and noise kernels cannot raise inside the parallel loop
    check_noise(ncode)
    C = len(gens)
    acc = np.zeros((C, 2))
    k = _for(_two_batch_range, code)
    data = loop.problem_data(problem, nparams)
    chunked(-(-R // C), lambda lo, hi: k(code, x, data, ncode, small, big, workers, gens, R, lo, hi, acc))
    out = np.zeros(2)
    for c in range(C):
        out[0] += acc[c, 0]
        out[1] += acc[c, 1]
    return out


@njit(cache=True, parallel=True, nogil=True)
def _two_batch_range(problems, code, x, data, ncode, small, big, workers, gens, R, lo, hi, acc):
    d = x.shape[0]
    C = len(gens)
    for c in prange(C):
        gen = gens[np.int64(c)]
        gs, gb = np.empty(d), np.empty(d)
        first, last = c * R // C, (c + 1) * R // C
        for r in range(first + lo, min(first + hi, last)):
            noisy_gradient(problems, code, ncode, x, r % workers, gen, small, data, gs)
            noisy_gradient(problems, code, ncode, x, r % workers, gen, big, data, gb)
            s_small = 0.0
            s_big = 0.0
            for i in range(d):
                s_small += gs[i] * gs[i]
                s_big += gb[i] * gb[i]
            acc[c, 0] += s_small
            acc[c, 1] += s_big


#: fixed number of row chunks in ``group_sign_moments`` (sums in chunk order: thread-count independent)
ROW_CHUNKS = 16


def group_sign_moments(problem, x, rows):
    """Over the training rows ``rows`` of ``problem`` (one worker's group): per coordinate the number of per-sample
    gradients that are > 0 and that are exactly 0, and their sum and sum of squares (docs/theory.md §1). Rows are
    split into ROW_CHUNKS fixed chunks, summed in chunk order."""
    from signsim.engine import loop
    from signsim.interface.interrupts import chunked

    code = problem.code
    check_code(code)  # the per-sample kernels cannot raise inside the parallel loop
    d = x.shape[0]
    n = rows.shape[0]
    acc = np.zeros((ROW_CHUNKS, 4, d))
    k = _for(_group_range, code)
    data = loop.problem_data(problem)
    chunked(-(-n // ROW_CHUNKS), lambda lo, hi: k(code, x, data, rows, lo, hi, acc))
    out = _sum_chunks(acc)
    return out[0], out[1], out[2], out[3]


@njit(cache=True)
def _sum_chunks(acc):
    C, K, d = acc.shape
    out = np.zeros((K, d))
    for c in range(C):
        for k in range(K):
            for i in range(d):
                out[k, i] += acc[c, k, i]
    return out


@njit(cache=True, parallel=True, nogil=True)
def _group_range(problems, code, x, data, rows, lo, hi, acc):
    pf, pi, A, b = data.pf, data.pi, data.A, data.b
    d = x.shape[0]
    n = rows.shape[0]
    for c in prange(ROW_CHUNKS):
        buf = np.empty(d)
        a = acc[c]
        first, last = c * n // ROW_CHUNKS, (c + 1) * n // ROW_CHUNKS
        for t in range(first + lo, min(first + hi, last)):
            problem_sample_grad(problems, code, x, pf, pi, A, b, rows[t], buf)
            for i in range(d):
                v = buf[i]
                a[0, i] += 1.0 if v > 0.0 else 0.0
                a[1, i] += 1.0 if v == 0.0 else 0.0
                a[2, i] += v
                a[3, i] += v * v


def full_local_gradients(problem, x, workers):
    """Of ``problem``, the exact local gradient grad f_m(x) = (1/n_m) sum_{j in group m} grad f_j(x) of each worker
    m of ``workers`` (``--batch-size full``, docs/theory.md §5), one row each in their order: by the run's own
    worker gradient (the family's ``worker_gradient``, which a run of the family has compiled) at tau = FULL_BATCH
    without noise, which draws nothing (the generator it is handed is never used). NumPy reference: the problem's
    ``oracle_ref(x, m, None, "full")``."""
    import functools

    from signsim.codes import Noise
    from signsim.engine import loop
    from signsim.engine.dispatch import Problems, family_of

    code = problem.code
    check_code(code)
    gradient = functools.partial(loop.worker_gradient, Problems(family_of(code)))
    icfg = np.zeros(loop.N_ICFG, dtype=np.int64)
    icfg[loop.I_PROBLEM], icfg[loop.I_TAU], icfg[loop.I_NOISE] = code, FULL_BATCH, int(Noise.NONE)
    data = loop.problem_data(problem)
    x = np.ascontiguousarray(x, dtype=np.float64)
    gen = np.random.default_rng(0)
    out = np.zeros((len(workers), x.shape[0]))
    for r, m in enumerate(workers):
        gradient(np.int64(m), x, out[r], gen, data, icfg)
    return out


def monte_carlo_worker_counts(problem, x, ncode, nparams, tau, W, gens, S):
    """For each worker w < W of ``problem``, S independent minibatch gradients from worker w's own oracle (its
    shard, its split-batch draw, its local objective), split into len(gens) fixed chunks with their own generators
    and summed in chunk order (thread-count independent); chunk c draws worker 0's samples, then worker 1's, ...
    from generator c. Returns W x d arrays: the number of draws > 0 and exactly 0, and the sum and sum of squares of
    the draws. Memory: O(len(gens) d) besides the result, whatever W."""
    from signsim.engine import loop
    from signsim.interface.interrupts import chunked
    from signsim.resources import require

    code = problem.code
    check_code(code)  # the oracle and noise kernels cannot raise inside the parallel loop
    check_noise(ncode)
    d = x.shape[0]
    C = len(gens)
    require(8 * 4 * (W + C) * d, f"the Monte Carlo estimate ({W} worker oracles x dimension {d})",
            "reduce --workers or --dim")
    out = np.zeros((4, W, d))
    acc = np.zeros((4, C, d))
    data = loop.problem_data(problem, nparams)
    k = _for(_mc_range, code)
    for w in range(W):
        acc[:] = 0.0
        chunked(-(-S // C), lambda lo, hi, w=w: k(code, x, data, ncode, tau, w, gens, S, lo, hi, acc))
        _add_chunks(acc, out, w)
    return out[0], out[1], out[2], out[3]


@njit(cache=True)
def _add_chunks(acc, out, w):
    K, C, d = acc.shape
    for c in range(C):  # explicit loops, in chunk order
        for k in range(K):
            for i in range(d):
                out[k, w, i] += acc[k, c, i]


@njit(cache=True, parallel=True, nogil=True)
def _mc_range(problems, code, x, data, ncode, tau, w, gens, S, lo, hi, acc):
    d = x.shape[0]
    C = len(gens)
    for c in prange(C):
        gen = gens[np.int64(c)]
        buf = np.empty(d)
        first, last = c * S // C, (c + 1) * S // C
        for _ in range(first + lo, min(first + hi, last)):
            noisy_gradient(problems, code, ncode, x, w, gen, tau, data, buf)
            # one fused pass, branch-free: the signs of a minibatch gradient are coin flips near rho = 1/2,
            # so a branch per coordinate would be mispredicted half the time (and would not vectorize)
            for i in range(d):
                v = buf[i]
                acc[0, c, i] += 1.0 if v > 0.0 else 0.0
                acc[1, c, i] += 1.0 if v == 0.0 else 0.0
                acc[2, c, i] += v
                acc[3, c, i] += v * v
