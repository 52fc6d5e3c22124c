"""A 64-run sweep of short runs through each executor (issue #7): wall time with 1 and 2 local jobs and on a
2-worker Dask LocalCluster, the speedups, and each executor's overhead per run (wall time minus the runs'
own compute time, measured in-process, per run). Asserts nothing.

    python benchmarks/bench_sweep.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

SWEEP = """problem = "quadratic"
dim = 50
noise = "gaussian:1"
iters = 20000
repeats = 4
[grid]
method = ["signsgd", "signum", "ssdm", "sgd"]
workers = [1, 3, 9, 27]
"""


def wall(args: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "signsim.cli", *args], check=True, capture_output=True)
    return time.perf_counter() - t


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        sweep = Path(tmp) / "bench.toml"
        sweep.write_text(SWEEP)
        from signsim.commands.run import run
        from signsim.interface.config import resolve
        from signsim.sweep.spec import expand, load

        tasks = expand(load(sweep))
        run(resolve(tasks[0].config))  # warm the compile cache
        t = time.perf_counter()
        for task in tasks:
            run(resolve(task.config))
        compute = time.perf_counter() - t
        n = len(tasks)
        print(f"{n} runs; in-process sequential compute {compute:.2f} s ({compute / n * 1000:.1f} ms per run)")
        results = {}
        for label, extra in (("local, 1 job", ["--jobs", "1"]), ("local, 2 jobs", ["--jobs", "2"]),
                             ("dask LocalCluster, 2 workers", ["--executor", "dask", "--scheduler", "local",
                                                               "--jobs", "2"])):
            out = Path(tmp) / label.replace(" ", "_").replace(",", "")
            results[label] = w = wall(["sweep", str(sweep), "--out", str(out), "--quiet", *extra])
            workers = 1 if "1 job" in label else 2
            overhead = (w * workers - compute) / n
            print(f"{label}: wall {w:.2f} s, overhead {overhead * 1000:.1f} ms per run "
                  f"(process start-up and kernel loading included)")
        base = results["local, 1 job"]
        for label, w in results.items():
            print(f"speedup of {label} over local, 1 job: {base / w:.2f}x")


if __name__ == "__main__":
    main()
