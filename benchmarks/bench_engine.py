"""Engine against a plain vectorized NumPy loop doing the same SSDM work, side by side (issue #2).

    python benchmarks/bench_engine.py            # all cases
    python benchmarks/bench_engine.py --quick    # smaller sizes, for a smoke check

Prints each time and the ratio NumPy / engine, through the composition's own loop and through the family's one loop
(SIGNSIM_LOOP); nothing is asserted. Compile time is excluded from the
engine's time (one warm-up run first), and reported separately as the CLI's second-call wall time.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np


def numpy_ssdm(grad, x0, M, K, lr, beta, sigma, seed):
    """SSDM (docs/theory.md §2) written directly in NumPy, vectorized over workers: m_0 = g_0, then
    m <- beta m + (1 - beta) g, send stochastic signs, server averages, x <- x - lr * mean."""
    rng = np.random.default_rng(seed)
    x = x0.copy()
    d = x.size
    m = np.empty((M, d))
    for k in range(K):
        G = grad(x)[None, :] + sigma * rng.standard_normal((M, d))
        if k == 0:
            m[:] = G
        else:
            m *= beta
            m += (1 - beta) * G
        nrm = np.linalg.norm(m, axis=1, keepdims=True)
        s = np.where(rng.random((M, d)) < 0.5 + m / (2 * nrm), 1.0, -1.0)
        x -= lr * s.mean(axis=0)
    return x


def rosen_grad(x):
    r = x[1:] - x[:-1] ** 2
    g = np.zeros_like(x)
    g[:-1] += -400.0 * x[:-1] * r - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * r
    return g


def engine_time(**options) -> tuple[float, dict]:
    from signsim.commands.run import run
    from signsim.interface.config import resolve

    cfg = resolve({"method": "ssdm", "eval_every": options["iters"], **options})
    t = time.perf_counter()
    doc = run(cfg)
    return time.perf_counter() - t, doc


#: the loops a run of built-in stages can take (docs/reference.md, SIGNSIM_LOOP): the composition's own, and the
#: family's one loop that runs every composition (its stages chosen by code at each call)
LOOPS = {"own loop": "composed", "one loop": "builtin"}


def case(label, options, grad, x0, sigma, repeat: int = 3):
    """The median of ``repeat`` timed runs through each loop and through NumPy, and their ratios."""
    saved = os.environ.get("SIGNSIM_LOOP")
    times = {}
    try:
        for name, mode in LOOPS.items():
            os.environ["SIGNSIM_LOOP"] = mode
            engine_time(**{**options, "iters": 2})  # compile or load from cache
            runs = [engine_time(**options) for _ in range(repeat)]
            times[name] = float(np.median([t for t, _ in runs]))
            doc = runs[0][1]
    finally:
        if saved is None:
            os.environ.pop("SIGNSIM_LOOP", None)
        else:
            os.environ["SIGNSIM_LOOP"] = saved
    numpy_times = []
    for _ in range(repeat):
        t = time.perf_counter()
        numpy_ssdm(grad, x0, options["workers"], options["iters"], options.get("lr", 0.01), 0.9, sigma, 0)
        numpy_times.append(time.perf_counter() - t)
    tn = float(np.median(numpy_times))
    engines = ", ".join(f"{name} {t:.3f} s (ratio {tn / t:.1f}x)" for name, t in times.items())
    print(f"{label}: numpy {tn:.3f} s; engine {engines}; medians of {repeat}  "
          f"(engine final loss {doc['final']['loss']:.4g})")
    return {name: tn / t for name, t in times.items()}


def cli_time(*args: str, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "signsim.cli", *args], check=True, capture_output=True)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    K = 2000 if a.quick else 20_000
    case(f"(a) rosenbrock d=10, M=32, K={K}", {"problem": "rosenbrock", "workers": 32, "iters": K},
         rosen_grad, np.zeros(10), 1.0)
    d = 100_000 if a.quick else 1_000_000
    L = np.logspace(0, 2, d)
    case(f"(b) quadratic d={d}, M=32, K=5, gaussian noise",
         {"problem": "quadratic", "dim": d, "workers": 32, "iters": 5, "noise": "gaussian:1"},
         lambda x: L * x, np.ones(d), 1.0)
    cli_time("run", "--iters", "2000", "--quiet", repeat=1)  # make sure the cache is warm
    print(f"(c) second `signsim run --iters 2000` wall time: {cli_time('run', '--iters', '2000', '--quiet'):.3f} s")
    print(f"(d) `signsim --help` wall time: {cli_time('--help'):.3f} s")
    end_to_end(10_000 if a.quick else 100_000)


def end_to_end(K: int) -> None:
    """(e) Whole processes, start-up included: `signsim run` of SSDM on Rosenbrock (d = 10, M = 32) against a
    fresh Python running ``numpy_ssdm`` for the same K."""
    args = ["run", "--problem", "rosenbrock", "--workers", "32", "--method", "ssdm", "--iters", str(K), "--quiet"]
    te = cli_time(*args, repeat=1)
    code = (f"import sys, numpy as np; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); "
            f"from bench_engine import numpy_ssdm, rosen_grad; numpy_ssdm(rosen_grad, np.zeros(10), 32, {K}, 0.01, "
            "0.9, 1.0, 0)")
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    tn = time.perf_counter() - t
    print(f"(e) end to end, SSDM rosenbrock d=10, M=32, K={K}: signsim {te:.2f} s, numpy {tn:.2f} s, "
          f"ratio {tn / te:.1f}x; the run's draws alone in compiled code: {draws_floor(K * 32 * 10):.2f} s")


def draws_floor(n: int, repeat: int = 5) -> float:
    """The least (e)'s run must draw, in compiled code: n Gaussian noise draws and n uniforms (the stochastic signs)
    from NumPy's generator, whose streams both sides draw; median of ``repeat``, after a first call that compiles."""
    from numba import njit

    @njit
    def draws(gen, n):
        s = 0.0
        for _ in range(n):
            s += gen.standard_normal()
            s += gen.random()
        return s

    draws(np.random.default_rng(0), 10)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        draws(np.random.default_rng(0), n)
        times.append(time.perf_counter() - t)
    return sorted(times)[repeat // 2]


if __name__ == "__main__":
    main()
