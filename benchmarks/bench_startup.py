"""Start-up cost of the CLI (issue #12): printed times and ratios, nothing asserted.

    python benchmarks/bench_startup.py            # first run with an empty cache, later runs, --help
    python benchmarks/bench_startup.py --skip-first

(1) the first `signsim run` after a fresh install: an empty NUMBA_CACHE_DIR, so every kernel the run uses is
    compiled (target: at most 15 s on 2 cores); whether the compile notice reached a piped stderr;
(2) a later default `signsim run` against `python -c "import numba, numpy, scipy.special"` (target: at most
    1.5x);
(3) `signsim --help` (target: under 0.5 s).
Each later timing is the median of --repeat fresh processes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

SIGNSIM = [sys.executable, "-m", "signsim.cli"]


def wall(cmd: list[str], env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    return time.perf_counter() - t, p


def median_wall(cmd: list[str], repeat: int, env: dict | None = None) -> float:
    return statistics.median(wall(cmd, env)[0] for _ in range(repeat))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip-first", action="store_true", help="skip (1), which compiles for a minute or more")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        env = {"NUMBA_CACHE_DIR": cache}
        if not a.skip_first:
            t, p = wall([*SIGNSIM, "run"], env)
            notice = "compiling" in p.stderr
            print(f"(1) first `signsim run` with an empty NUMBA_CACHE_DIR: {t:.1f} s (exit {p.returncode}; "
                  f"compile notice on piped stderr: {'yes' if notice else 'NO'})")
        else:
            wall([*SIGNSIM, "run", "--quiet"], env)
        later = median_wall([*SIGNSIM, "run", "--quiet"], a.repeat, env)
    imports = median_wall([sys.executable, "-c", "import numba, numpy, scipy.special"], a.repeat)
    print(f"(2) later default `signsim run`: {later:.2f} s; `import numba, numpy, scipy.special`: {imports:.2f} s; "
          f"ratio {later / imports:.2f}x")
    print(f"(3) `signsim --help`: {median_wall([*SIGNSIM, '--help'], a.repeat):.2f} s")


if __name__ == "__main__":
    main()
