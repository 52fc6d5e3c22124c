"""Monte Carlo success probabilities for logistic regression on generated data (n = 50,000, d = 500,
tau = 32, S = 2,000): the Numba kernel against a NumPy implementation written here (issues #4, #17).
The engine runs ``--repeat`` times (3 by default), then NumPy as often, in the same process; prints each time,
the ratio of the medians NumPy / engine and the load average (the machine may be shared), and the floor of any
kernel over these draws: the time to read the S tau sampled rows once (``generated.row_stream_seconds``).
Asserts nothing.

    python benchmarks/bench_spb.py [--quick] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
from generated import RAW, logistic_data, row_stream_seconds, write_npz


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
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    n, d, tau, S = (5_000, 100, 32, 500) if a.quick else (50_000, 500, 32, 2_000)
    X, y = logistic_data(n, d)
    w = np.random.default_rng(1).normal(size=d) * 0.01
    with tempfile.TemporaryDirectory() as tmp:
        path = write_npz(tmp, X, y)
        from signsim import noise, problems
        from signsim.diagnostics.estimators import estimate
        from signsim.interface.config import resolve

        cfg = resolve(dict(RAW, data=path, batch_size=tau))
        problem = problems.build(cfg)
    model, params = noise.parse("none")
    y_pm = np.where(y > 0, 1.0, -1.0)

    def engine():
        return estimate(problem, model, params, w, tau, "monte-carlo", S, 0.95, "wilson", "random", 0, 1)

    engine()  # compile or load from cache
    # each side's runs together, engine first: NumPy's BLAS threads keep spinning for a while after a call, and
    # would take the cores from an engine run right behind it
    times = []
    for _ in range(a.repeat):
        t = time.perf_counter()
        est = engine()
        times.append(time.perf_counter() - t)
    numpy_times = []
    for r in range(a.repeat):
        t = time.perf_counter()
        ref = numpy_rho(X, y_pm, w, tau, S, r)
        numpy_times.append(time.perf_counter() - t)
    te, tn = np.median(times), np.median(numpy_times)
    print(f"  engine {', '.join(f'{v:.3f}' for v in times)} s; numpy {', '.join(f'{v:.3f}' for v in numpy_times)} s")
    floor = row_stream_seconds(X, S * tau)
    print(f"  reading the S tau = {S * tau:,} sampled rows once, and nothing else: {floor:.3f} s (the floor of any "
          f"Monte Carlo kernel over these rows; engine / floor {te / floor:.2f})")
    print(f"Monte Carlo rho, logistic n={n}, d={d}, tau={tau}, S={S}: ratio of the medians numpy / engine "
          f"{tn / te:.2f}x over {a.repeat} runs each (load average {os.getloadavg()[0]:.2f} on "
          f"{os.cpu_count()} cores); max |rho_engine - rho_numpy| = {np.nanmax(np.abs(est.rho - ref)):.3f} "
          f"(independent draws; standard error ~{0.5 / np.sqrt(S):.3f})")


if __name__ == "__main__":
    main()
