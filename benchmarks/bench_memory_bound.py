"""One SSDM step at d = 1,000,000, M = 32 (quadratic, Gaussian noise) against the bound of its random draws and
memory traffic, measured on this machine (issue #17).

The bound is a kernel that does only what any implementation of the step must do, with the engine's
parallel structure (workers in parallel, then the server's sum over workers in parallel over coordinates):
draw the same variates from the same kind of generators (per worker and coordinate one standard normal, the
mean of tau Gaussian draws, and one uniform, the stochastic sign) and stream the same state: read and write
the momentum (M x d), write the messages (M x d), read them back in the server's sum, read x and L, write x.
It is printed beside its two halves (the draws alone, the traffic alone). Engine and bound run back to back
in the same process, ``--repeat`` times (3 by default); the median ratio engine / bound is printed with the
load average (the machine may be shared). Asserts nothing.

    python benchmarks/bench_memory_bound.py [--quick] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from numba import njit, prange
from numba.typed import List


@njit(cache=True, parallel=True)
def bound_step(x, L, mom, msg, agg, gens, sigma, beta, lr, draws, traffic):
    """The draws and the traffic of one SSDM step and nothing else (momentum update and stochastic sign with
    the cheapest possible arithmetic). ``draws``/``traffic`` switch the halves off to time them apart."""
    M, d = mom.shape
    for m in prange(M):
        gen = gens[np.int64(m)]
        v = mom[m]
        out = msg[m]
        keep = 0.0
        for i in range(d):
            z = sigma * gen.standard_normal() if draws else 0.0
            u = gen.random() if draws else 0.5
            if traffic:
                w = beta * v[i] + (1.0 - beta) * (L[i] * x[i] + z)
                v[i] = w
                out[i] = 1.0 if u < 0.5 + w else -1.0
            else:  # keep the draws alive without touching the state
                keep += z + u
        if not traffic:
            out[0] = keep
    if traffic:
        for i in prange(d):
            s = 0.0
            for m in range(M):
                s += msg[m, i]
            agg[i] = s / M
        for i in range(d):
            x[i] -= lr * agg[i]


def engine_step_time(d: int, M: int) -> tuple[float, object]:
    """Seconds per SSDM step of the engine, steps 1 and 2 of a 4-iteration run (no history records)."""
    from signsim import methods, noise, problems
    from signsim.engine.driver import Engine, Settings
    from signsim.interface.config import resolve

    cfg = resolve({"problem": "quadratic", "dim": d, "workers": M, "iters": 4, "eval_every": 4,
                   "method": "ssdm", "noise": "gaussian:1"})
    problem = problems.build(cfg)
    model, params = noise.parse(cfg.noise)
    e = Engine(problem, model, params, Settings.from_config(cfg, methods.get("ssdm")), M, 4, 4, cfg.seed)
    e.advance(1)  # k = 0: records and takes the first step (m_0 = g_0)
    t = time.perf_counter()
    e.advance(2)
    return (time.perf_counter() - t) / 2, e


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    d, M = (100_000, 32) if a.quick else (1_000_000, 32)
    from signsim.seeding import run_streams

    streams, _ = run_streams(0, M)  # (made on demand: indexed, not iterated)
    gens = List([streams[m] for m in range(M)])
    x, L = np.ones(d), np.logspace(0, 2, d)
    mom, msg, agg = np.zeros((M, d)), np.zeros((M, d)), np.zeros(d)

    def bound(draws=True, traffic=True):
        t = time.perf_counter()
        bound_step(x, L, mom, msg, agg, gens, 1.0, 0.9, 1e-9, draws, traffic)
        return time.perf_counter() - t

    engine_step_time(min(d, 1000), M)  # compile or load from cache
    bound()
    rows = []
    for r in range(a.repeat):
        te, _ = engine_step_time(d, M)
        tb, td, tt = bound(), bound(True, False), bound(False, True)
        rows.append((te, tb, td, tt))
        print(f"  run {r + 1}: engine step {te * 1e3:.1f} ms; bound {tb * 1e3:.1f} ms (draws alone {td * 1e3:.1f} ms, "
              f"traffic alone {tt * 1e3:.1f} ms); engine / bound {te / tb:.2f}")
    te, tb, td, tt = np.median(np.array(rows), axis=0)
    ratio = np.median([r[0] / r[1] for r in rows])
    gb = 4 * M * d * 8 / 1e9
    print(f"SSDM step d={d}, M={M}, gaussian noise: engine {te * 1e3:.1f} ms, draw+traffic bound {tb * 1e3:.1f} ms "
          f"({2 * M * d / 1e6:.0f} M variates: {td * 1e3:.1f} ms; {gb:.2f} GB of state traffic: {tt * 1e3:.1f} ms); "
          f"median engine / bound {ratio:.2f}x over {a.repeat} runs (load average {os.getloadavg()[0]:.2f} on "
          f"{os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
