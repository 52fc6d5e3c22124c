"""The compiled kernel of a compressor applied to rows of per-sample gradients (``signsim.diagnostics.transforms``,
docs/theory.md §10.4): the compressor is the plan's stage (``signsim.engine.plan``), so Numba compiles and caches
``draws`` once per compressor, under a type that names it with a hash of its source."""

from numba import njit

from signsim.engine.plan import compress


@njit(cache=True, nogil=True)
def draws(stages, G, p, sign_zero, gens, a, sums, keep, out, iwork):
    """For each draw r, from its own generator gens[r], and each row g_j of G in order: out <- C(g_j) (the
    compressor of ``stages``, ``signsim.engine.plan.Stages``), a[r] += ||out||^2, sums[r] += out, and
    keep[r, j] = out when ``keep`` has a row per draw."""
    n, d = G.shape
    store = keep.shape[0] == len(gens)
    for r in range(len(gens)):
        gen = gens[r]
        for j in range(n):
            compress(stages, 0, G[j], out, p, sign_zero, gen, iwork)
            s = 0.0
            for i in range(d):
                s += out[i] * out[i]
                sums[r, i] += out[i]
                if store:
                    keep[r, j, i] = out[i]
            a[r] += s
