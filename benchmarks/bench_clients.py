"""Many clients, few per round: the cost of M workers when S take part (issue #31, item 7; docs/theory.md §12).

    python benchmarks/bench_clients.py            # M = 10^3 and 10^6, S = 100, d = 10^3, H = 5, 200 rounds
    python benchmarks/bench_clients.py --quick    # 20 rounds

Each M runs as its own ``signsim run`` process (after one warm-up that loads or compiles the kernels), so its peak
memory (the process's maximum resident set) and its whole wall time are its own: set-up (problem, streams,
engine), the loop, and the streams of the workers that take part, made as they first do. Prints, per M, the wall
time of the whole process, the engine's set-up, the loop's wall time, and the peak memory, and the ratios of the
largest M to the smallest; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys

CHILD = """
import json, resource, sys, time
t0 = time.perf_counter()
from signsim.engine import driver
made = {}
init = driver.Engine.__init__
def timed(self, *a, **k):
    t = time.perf_counter()
    init(self, *a, **k)
    made["setup"] = time.perf_counter() - t
driver.Engine.__init__ = timed
import signsim
r = signsim.run(**json.loads(sys.argv[1]))
doc = r.to_dict()
print(json.dumps({"total": time.perf_counter() - t0, "setup": made["setup"], "loop": doc["final"]["wall_time"],
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "loss": doc["final"]["loss"]}))
"""


def measure(opts: dict) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(opts)], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--workers", type=int, nargs="+", default=[1000, 1_000_000])
    a = ap.parse_args()
    base = dict(problem="quadratic", dim=1000, clients_per_round=100, local_steps=5, local_lr=0.01, method="sgd",
                iters=20 if a.quick else 200)
    measure({**base, "workers": min(a.workers), "iters": 2})  # compile or load the kernels
    print(f"{platform.node()}: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; {base}")
    print(f"{'M':>10} {'total s':>9} {'set-up s':>9} {'loop s':>8} {'peak MB':>9} {'final loss':>11}")
    rows = {}
    for M in a.workers:
        r = rows[M] = measure({**base, "workers": M})
        print(f"{M:>10} {r['total']:>9.2f} {r['setup']:>9.3f} {r['loop']:>8.2f} {r['rss_mb']:>9.0f} "
              f"{r['loss']:>11.4g}")
    lo, hi = rows[min(rows)], rows[max(rows)]
    print(f"ratio M = {max(rows)} / M = {min(rows)}: total {hi['total'] / lo['total']:.2f}, "
          f"peak memory {hi['rss_mb'] / lo['rss_mb']:.2f}")


if __name__ == "__main__":
    main()
