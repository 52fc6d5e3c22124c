"""The generated logistic-regression data the data benchmarks share (imported by the benchmark scripts)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: options that hand the generated data to signsim as they are (no standardization, intercept or held-out set)
RAW = dict(problem="logistic", standardize=False, intercept=False, test_fraction=0.0)


def logistic_data(n: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """X ~ N(0, 1)^{n x d}; y = 1 where X w + noise > 0 for a random w, else 0."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X @ rng.normal(size=d) + rng.normal(size=n) > 0, 1.0, 0.0)
    return X, y


def write_npz(folder: str | Path, X: np.ndarray, y: np.ndarray) -> str:
    path = Path(folder) / "gen.npz"
    np.savez(path, X=X, y=y)
    return str(path)


def row_stream_seconds(X: np.ndarray, rows: int, repeat: int = 3) -> float:
    """The floor of a kernel that reads ``rows`` rows of X drawn uniformly at random (with replacement): the
    best of ``repeat`` timings of a Numba kernel, on all threads, that only sums each drawn row (rows drawn
    beforehand, the next one prefetched as the engine does; the sum vectorized as the engine's margins are), so
    it measures reading the rows, not an add chain."""
    import time

    from numba import njit, prange

    from signsim.problems.prefetch import prefetch_row

    @njit(parallel=True, cache=False, fastmath={"reassoc", "nsz", "contract"})
    def touch(X, idx, out):
        T = out.shape[0]
        n = idx.shape[0]
        for t in prange(T):
            s = 0.0
            lo, hi = t * n // T, (t + 1) * n // T
            for k in range(lo, hi):
                j = idx[k]
                if k + 1 < hi:
                    prefetch_row(X, idx[k + 1])
                for i in range(X.shape[1]):
                    s += X[j, i]
            out[t] = s

    import numba

    idx = np.random.default_rng(7).integers(0, X.shape[0], rows)
    out = np.zeros(numba.get_num_threads())
    touch(X, idx[:10], out)  # compile
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        touch(X, idx, out)
        best = min(best, time.perf_counter() - t)
    return best
