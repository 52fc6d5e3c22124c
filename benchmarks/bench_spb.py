"""Monte Carlo success probabilities for logistic regression on generated data (n = 50,000, d = 500,
tau = 32, S = 2,000): the Numba kernel against a NumPy implementation written here (issue #4). Prints both
times and the ratio; asserts nothing.

    python benchmarks/bench_spb.py [--quick]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np
from generated import RAW, logistic_data, write_npz


def numpy_rho(X, y, w, tau, S, seed):
    """S minibatch gradients of tau rows each (with replacement), vectorized in blocks of 100 minibatches;
    the fraction agreeing in sign with the full gradient, per coordinate."""
    rng = np.random.default_rng(seed)
    n = X.shape[0]
    c_all = -y / (1.0 + np.exp(y * (X @ w)))
    g = X.T @ c_all / n
    hits = np.zeros(X.shape[1])
    for start in range(0, S, 100):
        b = min(100, S - start)
        rows = rng.integers(0, n, (b, tau))
        G = np.einsum("bt,btd->bd", c_all[rows], X[rows]) / tau
        hits += (np.sign(G) == np.sign(g)).sum(axis=0)
    return hits / S


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    n, d, tau, S = (5_000, 100, 32, 500) if a.quick else (50_000, 500, 32, 2_000)
    X, y = logistic_data(n, d)
    w = np.random.default_rng(1).normal(size=d) * 0.01
    with tempfile.TemporaryDirectory() as tmp:
        path = write_npz(tmp, X, y)
        from signsim import noise, problems
        from signsim.config import resolve
        from signsim.diagnostics.estimators import estimate

        cfg = resolve(dict(RAW, data=path, batch_size=tau))
        problem = problems.build(cfg)
    model, params = noise.parse("none")

    def engine():
        return estimate(problem, model, params, w, tau, "monte-carlo", S, 0.95, "wilson", "random", 0, 1)

    engine()  # compile or load from cache
    t = time.perf_counter()
    est = engine()
    te = time.perf_counter() - t
    t = time.perf_counter()
    ref = numpy_rho(X, np.where(y > 0, 1.0, -1.0), w, tau, S, 0)
    tn = time.perf_counter() - t
    print(f"Monte Carlo rho, logistic n={n}, d={d}, tau={tau}, S={S}: engine {te:.3f} s, numpy {tn:.3f} s, "
          f"ratio {tn / te:.1f}x; max |rho_engine - rho_numpy| = {np.nanmax(np.abs(est.rho - ref)):.3f} "
          f"(independent draws; standard error ~{0.5 / np.sqrt(S):.3f})")


if __name__ == "__main__":
    main()
