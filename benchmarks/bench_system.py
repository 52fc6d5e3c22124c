"""What the simulated clock costs (issue 48; docs/theory.md §14): the same runs with and without a system model.

    python benchmarks/bench_system.py            # the default run, M = 10^6 clients with S = 100 a round, and an
                                                 # asynchronous run of 10^4 clients and 10^4 server steps
    python benchmarks/bench_system.py --quick    # fewer rounds

Each run is its own process (after a warm-up of each composition that loads or compiles its kernels), alternating
without and with the clock, ``--repeats`` times; prints the medians of the whole process and of the loop (the
results' ``wall_time``), and the ratio with / without. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

CHILD = """
import json, sys, time
t0 = time.perf_counter()
import signsim
doc = signsim.run(**json.loads(sys.argv[1])).to_dict()
print(json.dumps({"total": time.perf_counter() - t0, "loop": doc["final"]["wall_time"],
                  "time": (doc.get("system") or {}).get("time")}))
"""

#: a system model with every part in use: heterogeneous workers, latency and the server's link
SYSTEM = dict(compute="lognormal:0.05:0.5", uplink="lognormal:1e7:0.5", downlink="const:1e8", latency=0.01,
              server_bandwidth=1e9)


def measure(opts: dict) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(opts)], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    workloads = {
        "default run (ssdm, M = 32, rosenbrock)": dict(method="ssdm", workers=32),
        "M = 10^6 clients, S = 100, d = 10^3, H = 5": dict(problem="quadratic", dim=1000, workers=1_000_000,
                                                            clients_per_round=100, local_steps=5, local_lr=0.01,
                                                            method="sgd", iters=20 if a.quick else 200),
    }
    print(f"{platform.node()}: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; repeats {a.repeats}")
    print(f"{'workload':<46} {'process s':>19} {'loop s':>17} {'process':>8} {'loop':>6}")
    print(f"{'':<46} {'without':>9} {'with':>9} {'without':>8} {'with':>8} {'ratio':>8} {'ratio':>6}")
    for name, opts in workloads.items():
        measure({**opts, "iters": 2})  # compile or load both compositions' kernels
        measure({**opts, **SYSTEM, "iters": 2})
        runs: dict[str, list[dict]] = {"without": [], "with": []}
        for _ in range(a.repeats):
            runs["without"].append(measure(opts))
            runs["with"].append(measure({**opts, **SYSTEM}))
        med = {k: {f: statistics.median(r[f] for r in v) for f in ("total", "loop")} for k, v in runs.items()}
        off, on = med["without"], med["with"]
        print(f"{name:<46} {off['total']:>9.2f} {on['total']:>9.2f} {off['loop']:>8.3f} {on['loop']:>8.3f} "
              f"{on['total'] / off['total']:>8.3f} {on['loop'] / off['loop']:>6.3f}")
    # asynchronous buffered aggregation (docs/theory.md §14.6): 10^4 clients, 100 training at a time, a server step
    # every 10 uploads, 10^4 server steps (10^5 client updates), heterogeneous devices; the clock is its event order
    steps = 1000 if a.quick else 10_000
    opts = dict(problem="quadratic", dim=100, workers=10_000, clients_per_round=100, method="ssdm",
                asynchronous="buffer:10:poly:0.5", iters=steps, eval_every=steps, **SYSTEM)
    opts.pop("server_bandwidth")  # (asynchronous clients are timed on their own links)
    measure({**opts, "iters": 2})
    done = [measure(opts) for _ in range(a.repeats)]
    total, loop = (statistics.median(r[f] for r in done) for f in ("total", "loop"))
    print(f"asynchronous, M = 10^4, C = 100, B = 10, {steps} server steps: process {total:.2f} s, loop {loop:.3f} s "
          f"({loop / steps * 1e6:.0f} us a server step), simulated {done[0]['time']:.1f} s")


if __name__ == "__main__":
    main()
