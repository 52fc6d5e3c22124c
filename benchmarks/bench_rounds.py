"""Cost of a federated round against its number of local steps H (issue #23, docs/theory.md §12).

    python benchmarks/bench_rounds.py            # the default problem (Rosenbrock, d = 10, 8 workers, SSDM)
    python benchmarks/bench_rounds.py --quick    # fewer rounds, for a smoke check
    python benchmarks/bench_rounds.py --problem quadratic --dim 2000 --workers 32

Prints the time per round for H in {1, 5, 20} and the ratio to H = 1, and the time per gradient call (a round
costs S H oracle calls); nothing is asserted. Compile time is excluded (a warm-up run first); each time is the
best of three runs.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

HS = (1, 5, 20)


def seconds(opts: dict) -> float:
    from signsim.commands.run import run
    from signsim.interface.config import resolve

    cfg = resolve({"eval_every": opts["iters"], **opts})
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        run(cfg)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--problem", default=None)
    ap.add_argument("--dim", type=int, default=None)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--participation", type=float, default=None)
    a = ap.parse_args()
    base = {k: v for k, v in vars(a).items() if k != "quick" and v is not None}
    rounds = 200 if a.quick else 2000
    for H in HS:  # compile (or load) every kernel first
        seconds({**base, "iters": 2, "local_steps": H})
    print(f"{platform.node()}: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; "
          f"options {base or 'defaults'}, {rounds} rounds")
    print(f"{'H':>4} {'s/round':>12} {'ratio to H=1':>14} {'s/gradient call':>16}")
    t1 = None
    for H in HS:
        t = seconds({**base, "iters": rounds, "local_steps": H}) / rounds
        t1 = t if t1 is None else t1
        from signsim.interface.config import resolve
        from signsim.rounds import of_config

        S = of_config(resolve({**base, "iters": 1}))
        print(f"{H:>4} {t:>12.3e} {t / t1:>14.2f} {t / (S * H):>16.3e}")


if __name__ == "__main__":
    main()
