"""Logistic regression, generated n = 100,000, d = 1,000, M = 32, tau = 32, 200 iterations of signum with
majority vote: the engine against a plain NumPy implementation written here (issues #3, #17).

The engine runs ``--repeat`` times (3 by default), then NumPy as often, in the same process; prints the medians,
their ratio NumPy / engine and the load average (the machine may be shared). Two ratios: the whole run
(both evaluate the full loss and gradient over all n rows at k = 0 and k = K; the engine also the training
accuracy), and the iterations alone (the engine's steps 1 .. K-2 of another run, which record nothing, scaled
to K steps; NumPy without its evaluations). Also the floor of the iterations: the time to read the K M tau
sampled rows once and do nothing else (``generated.row_stream_seconds``). Asserts nothing.

``--dtype float32`` runs the engine with float32 state and data (``signsim run --dtype float32``) against the
same float64 NumPy implementation, and prints the engine's final loss beside that of a float64 engine run.

    python benchmarks/bench_logistic.py [--quick] [--repeat R] [--dtype float32]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
from generated import RAW, logistic_data, row_stream_seconds, write_npz


def numpy_signum(X, y, M, tau, K, lr, beta, seed, evaluate_ends=True):
    """Signum (docs/theory.md §2) in NumPy: each worker samples tau rows with replacement, m <- beta m + (1-beta) g,
    sends sign m; the server returns the majority vote (ties have probability ~0). Like the engine, it
    evaluates the full loss and gradient at k = 0 and k = K (unless ``evaluate_ends`` is off)."""
    rng = np.random.default_rng(seed)
    n, d = X.shape
    w = np.zeros(d)
    m = np.zeros((M, d))
    history = [evaluate(X, y, w)] if evaluate_ends else []
    for _ in range(K):
        rows = rng.integers(0, n, (M, tau))
        A = X[rows]  # M x tau x d
        yy = y[rows]
        c = -yy / (1.0 + np.exp(yy * np.einsum("mtd,d->mt", A, w)))
        g = np.einsum("mt,mtd->md", c, A) / tau
        m = beta * m + (1 - beta) * g
        vote = np.sign(np.sign(m).sum(axis=0))
        w -= lr * vote
    if evaluate_ends:
        history.append(evaluate(X, y, w))
    return w, history


def evaluate(X, y, w):
    """What the engine records at k = 0 and k = K: the full loss and gradient norms."""
    z = X @ w
    loss = np.logaddexp(0.0, -y * z).mean()
    g = X.T @ (-y / (1.0 + np.exp(y * z))) / len(y)
    return loss, np.linalg.norm(g), np.abs(g).sum()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                    help="the engine's state and data (NumPy stays float64)")
    a = ap.parse_args()
    n, d, M, tau, K = (10_000, 200, 32, 32, 50) if a.quick else (100_000, 1_000, 32, 32, 200)
    X, y = logistic_data(n, d)
    y_pm = np.where(y > 0, 1.0, -1.0)
    with tempfile.TemporaryDirectory() as tmp:
        path = write_npz(tmp, X, y)
        from signsim import methods, noise, problems
        from signsim.engine.driver import Engine, Settings, simulate
        from signsim.interface.config import resolve

        options = dict(RAW, data=path, method="signum", aggregate="majority", workers=M, batch_size=tau, lr=1e-3,
                       iters=K, eval_every=K)
        cfg = resolve({**options, "dtype": a.dtype})
        t = time.perf_counter()
        problem = problems.build(cfg, simulated=True)
        t_build = time.perf_counter() - t
        model, params = noise.parse("none")
        settings = Settings.from_config(cfg, methods.get("signum"))

        def engine():
            return Engine(problem, model, params, settings, M, K, K, cfg.seed, dtype=a.dtype)

        e = engine()
        e.advance(1)  # compile or load from cache
        # each side's runs together, the engine's first: NumPy's BLAS threads keep spinning for a while after a
        # call, and would take the cores from an engine run right behind it
        engine_whole, engine_iters = [], []
        for _ in range(a.repeat):
            e = engine()
            t = time.perf_counter()
            out = simulate(e)
            engine_whole.append(time.perf_counter() - t)
            e = engine()  # the iterations alone: steps 1 .. K-2 make no history record
            e.advance(1)
            t = time.perf_counter()
            e.advance(K - 2)
            engine_iters.append((time.perf_counter() - t) * K / (K - 2))
        numpy_whole, numpy_iters = [], []
        for r in range(a.repeat):
            t = time.perf_counter()
            numpy_signum(X, y_pm, M, tau, K, 1e-3, 0.9, r)
            numpy_whole.append(time.perf_counter() - t)
            t = time.perf_counter()
            numpy_signum(X, y_pm, M, tau, K, 1e-3, 0.9, r, evaluate_ends=False)
            numpy_iters.append(time.perf_counter() - t)
        te, te_iters = np.median(engine_whole), np.median(engine_iters)
        tn, tn_iters = np.median(numpy_whole), np.median(numpy_iters)
        print(f"  engine {te:.3f} s ({te_iters:.3f} s for K iterations without evaluations), numpy {tn:.3f} s "
              f"({tn_iters:.3f} s without its evaluations): medians of {a.repeat} runs each")
        reference = None
        if a.dtype != "float64":  # the same run with float64 state and data, for its final loss
            del problem, e
            p64 = problems.build(resolve(options), simulated=True)
            reference = simulate(Engine(p64, model, params, settings, M, K, K, cfg.seed)).history[-1, 1]
    floor = row_stream_seconds(X.astype(np.float32) if a.dtype == "float32" else X, K * M * tau)  # the engine's rows
    print(f"  reading the K M tau = {K * M * tau:,} sampled rows once, and nothing else: {floor:.3f} s (the floor of "
          f"the iterations; engine's iterations / floor {te_iters / floor:.2f})")
    print(f"logistic n={n}, d={d}, M={M}, tau={tau}, K={K} signum/majority, engine {a.dtype}: median ratio numpy "
          f"(float64) / engine {tn / te:.2f}x whole run, {tn_iters / te_iters:.2f}x iterations alone (medians of "
          f"{a.repeat} runs each) "
          f"(load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores); engine final loss "
          f"{out.history[-1, 1]:.6f}" + (f" (float64 engine {reference:.6f})" if reference is not None else "")
          + f"; loading the data file took {t_build:.2f} s")


if __name__ == "__main__":
    main()
