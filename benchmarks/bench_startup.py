"""Start-up cost of the CLI (issue #12): printed times and ratios, nothing asserted.

    python benchmarks/bench_startup.py            # first run with an empty cache, later runs, --help
    python benchmarks/bench_startup.py --skip-first

(1) the first `signsim run` after a fresh install: an empty NUMBA_CACHE_DIR, so every kernel the run uses is
    compiled (target: at most 15 s on 2 cores); whether the compile notice reached a piped stderr. Every run
    here has SIGNSIM_WARM=0: no background compile of the family's one loop follows;
(2) a later default `signsim run` against `python -c "import typer, numba, numpy, scipy"` (issue 49's floor;
    target: at most 1.5x), and against a fresh process that imports the same and calls one tiny kernel from
    Numba's cache (what loading any cached kernel costs: Numba's target context, which imports SciPy's linear
    algebra, and the cache's loader; its own script, run once first to fill its cache);
(3) `signsim --help` (target: under 0.5 s).
Each later timing is the median of --repeat fresh processes, the three of (2) run in turn.
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
#: a fresh process's least work to run anything compiled from Numba's cache
ONE_CACHED_KERNEL = """import typer, numba, numpy, scipy
@numba.njit(cache=True)
def total(x):
    return x.sum()
total(numpy.ones(3))
"""


def wall(cmd: list[str], env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    """(wall seconds, the finished process) of ``cmd``; a command that fails ends the benchmark with its stderr."""
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stderr}")
    return time.perf_counter() - t, p


def median_wall(cmd: list[str], repeat: int, env: dict | None = None) -> float:
    return statistics.median(wall(cmd, env)[0] for _ in range(repeat))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip-first", action="store_true", help="skip (1), which compiles for a minute or more")
    a = ap.parse_args()
    # no background compile of the family's one loop: it would still be writing to the folder when it is removed
    with tempfile.TemporaryDirectory() as cache:
        env = {"NUMBA_CACHE_DIR": cache, "SIGNSIM_WARM": "0"}
        if not a.skip_first:
            t, p = wall([*SIGNSIM, "run"], env)
            notice = "compiling" in p.stderr
            print(f"(1) first `signsim run` with an empty NUMBA_CACHE_DIR: {t:.1f} s "
                  f"(compile notice on piped stderr: {'yes' if notice else 'NO'})")
        else:
            wall([*SIGNSIM, "run", "--quiet"], env)
        tiny = os.path.join(cache, "one_cached_kernel.py")
        with open(tiny, "w") as f:
            f.write(ONE_CACHED_KERNEL)
        wall([sys.executable, tiny], env)
        times: dict[str, list[float]] = {"later": [], "imports": [], "one": []}
        for _ in range(a.repeat):  # in turn, so that the machine's drift reaches the three alike
            times["later"].append(wall([*SIGNSIM, "run", "--quiet"], env)[0])
            times["imports"].append(wall([sys.executable, "-c", "import typer, numba, numpy, scipy"])[0])
            times["one"].append(wall([sys.executable, tiny], env)[0])
        later, imports, one = (statistics.median(times[k]) for k in ("later", "imports", "one"))
    print(f"(2) later default `signsim run`: {later:.2f} s; `import typer, numba, numpy, scipy`: {imports:.2f} s, "
          f"ratio {later / imports:.2f}x; the same imports and one kernel from Numba's cache: {one:.2f} s, "
          f"ratio {later / one:.2f}x")
    print(f"(3) `signsim --help`: {median_wall([*SIGNSIM, '--help'], a.repeat):.2f} s")


if __name__ == "__main__":
    main()
