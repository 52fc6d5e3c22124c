"""Numba kernel of the Monte Carlo estimate of a round of H local steps (docs/theory.md §12.2), and its NumPy
reference.

A round from x: y^0 = x, y^{h+1} = y^h - gamma g_w(y^h) with g_w worker w's oracle (its minibatch of tau, its
shard, its noise model's draw), and the round's pseudo-gradient u = sum_{h<H} g_w(y^h). The kernel draws S such
rounds per worker oracle and counts, per coordinate, u > 0 and u = 0, with the sum and sum of squares of u. Like
``kernels.monte_carlo_worker_counts`` the draws are split into len(gens) fixed chunks with their own
generators, summed in chunk order (thread-count independent), and the kernel is called over ranges of about
0.1 s (Ctrl-C acts between them).
"""

import numpy as np
from numba import njit, prange

from signsim.engine.dispatch import check_code, check_noise, noisy_gradient


def local_round_counts(problem, x, ncode, nparams, tau, W, gens, S, H, gamma):
    """W x d arrays: per worker oracle w < W of ``problem`` (the noise model of code ``ncode``), over S rounds of H
    local steps from x with step gamma, the number of rounds whose u_i > 0 and u_i = 0, and the sum and sum of
    squares of u_i."""
    from signsim.diagnostics.kernels import _add_chunks, _for
    from signsim.engine.loop import problem_data
    from signsim.interface.interrupts import chunked
    from signsim.resources import require

    code = problem.code
    check_code(code)  # the oracle and noise kernels cannot raise inside the parallel loop
    check_noise(ncode)
    d = x.shape[0]
    C = len(gens)
    require(8 * (4 * W + 7 * C) * d, f"the Monte Carlo estimate of a round ({W} worker oracles x dimension {d})",
            "reduce --workers or --dim")
    out = np.zeros((4, W, d))
    acc = np.zeros((4, C, d))
    data = problem_data(problem, nparams)
    k = _for(_local_range, code)
    for w in range(W):
        acc[:] = 0.0
        chunked(-(-S // C), lambda lo, hi, w=w: k(code, x, data, ncode, tau, w, gens, S, H, gamma, lo, hi, acc))
        _add_chunks(acc, out, w)
    return out[0], out[1], out[2], out[3]


@njit(cache=True, parallel=True, nogil=True)
def _local_range(problems, code, x, data, ncode, tau, w, gens, S, H, gamma, lo, hi, acc):
    d = x.shape[0]
    C = len(gens)
    for c in prange(C):
        gen = gens[np.int64(c)]
        buf = np.empty(d)
        y = np.empty(d)
        u = np.empty(d)
        first, last = c * S // C, (c + 1) * S // C
        for _ in range(first + lo, min(first + hi, last)):
            for i in range(d):
                y[i] = x[i]
                u[i] = 0.0
            for _h in range(H):
                noisy_gradient(problems, code, ncode, y, w, gen, tau, data, buf)
                for i in range(d):
                    u[i] += buf[i]
                    y[i] -= gamma * buf[i]
            for i in range(d):
                v = u[i]
                acc[0, c, i] += 1.0 if v > 0.0 else 0.0
                acc[1, c, i] += 1.0 if v == 0.0 else 0.0
                acc[2, c, i] += v
                acc[3, c, i] += v * v


def local_round_counts_ref(problem, noise, nparams, x, tau, W, gens, S, H, gamma):
    """NumPy reference of ``local_round_counts``: the same draws from the same generators in the same order
    (chunk, worker, round, local step), through the problem's and the noise model's NumPy references."""
    from signsim.diagnostics.estimators import oracle_sample_ref
    from signsim.noise.base import scales

    d = x.shape[0]
    sc = scales(nparams, d)
    C = len(gens)
    pos, zero, s1, s2 = (np.zeros((W, d)) for _ in range(4))
    for c in range(C):
        gen = gens[c]
        for w in range(W):
            for _ in range(c * S // C, (c + 1) * S // C):
                y = np.array(x, dtype=np.float64)
                u = np.zeros(d)
                for _h in range(H):
                    v = oracle_sample_ref(problem, noise, nparams, sc, y, w, gen, tau)
                    u = u + v
                    y = y - gamma * v
                pos[w] += u > 0
                zero[w] += u == 0
                s1[w] += u
                s2[w] += u * u
    return pos, zero, s1, s2
