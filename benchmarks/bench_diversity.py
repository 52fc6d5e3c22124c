"""Exact B_S for logistic regression on generated data (n = 1,000,000, d = 100): the engine's one-pass,
O(d)-memory kernel against a NumPy version that materializes the n x d per-sample gradients (issue #5).
Each side runs in its own process; the script prints the time and the peak resident memory the computation
added on top of the loaded data (VmHWM, reset just before, minus VmRSS before). Asserts nothing.

    python benchmarks/bench_diversity.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from generated import RAW, logistic_data, write_npz


def status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def rss_mb() -> float:
    """Current resident memory; also resets the peak (VmHWM) so that it covers what follows only."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass
    return status_mb("VmRSS")


def peak_mb() -> float:
    hwm = status_mb("VmHWM")
    return hwm if hwm == hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def numpy_B_S(X, y, w):
    """Per-sample gradients grad f_j = -y_j sigma(-y_j a_j^T w) a_j, materialized; B_S = n A / C."""
    c = -y / (1.0 + np.exp(y * (X @ w)))
    G = c[:, None] * X  # n x d
    A = np.sum(G * G)
    total = G.sum(axis=0)
    return X.shape[0] * A / (total @ total)


def child(side: str, path: str) -> None:
    with np.load(path) as f:
        X, y = f["X"], f["y"]
    w = np.full(X.shape[1], 0.01)
    if side == "numpy":
        ys = np.where(y > 0, 1.0, -1.0)
        before = rss_mb()
        t = time.perf_counter()
        B_S = numpy_B_S(X, ys, w)
    else:
        from signsim import problems
        from signsim.diagnostics import diversity_estimators as est
        from signsim.interface.config import resolve

        p = problems.build(resolve(dict(RAW, data=path)))
        del X, y
        small = problems.build(resolve(dict(problem="logistic", data="builtin:breast-cancer")))
        est.exact(small, small.x0)  # compile or load from cache outside the measurement
        before = rss_mb()
        t = time.perf_counter()
        B_S = est.exact(p, w)[0].B_S
    elapsed = time.perf_counter() - t
    print(json.dumps({"time": elapsed, "peak_extra_mb": peak_mb() - before, "B_S": B_S}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--child", nargs=2, metavar=("SIDE", "PATH"))
    a = ap.parse_args()
    if a.child:
        child(*a.child)
        return
    n, d = (100_000, 100) if a.quick else (1_000_000, 100)
    X, y = logistic_data(n, d)
    with tempfile.TemporaryDirectory() as tmp:
        path = write_npz(tmp, X, y)
        del X, y
        out = {}
        for side in ("engine", "numpy"):
            p = subprocess.run([sys.executable, __file__, "--child", side, path], capture_output=True, text=True,
                               check=True)
            out[side] = json.loads(p.stdout.strip().splitlines()[-1])
    e, m = out["engine"], out["numpy"]
    print(f"exact B_S, logistic n={n}, d={d}: engine {e['time']:.3f} s, {e['peak_extra_mb']:.1f} MB extra; "
          f"numpy {m['time']:.3f} s, {m['peak_extra_mb']:.1f} MB extra; time ratio {m['time'] / e['time']:.1f}x, "
          f"memory ratio {m['peak_extra_mb'] / max(e['peak_extra_mb'], 0.1):.0f}x; "
          f"B_S {e['B_S']:.6g} vs {m['B_S']:.6g}")


if __name__ == "__main__":
    main()
