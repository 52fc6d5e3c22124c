"""The benchmarks run (their quickest settings): a change of signsim's API that breaks one fails here, not in the hands
of the next person who measures (bench_memory_bound.py and bench_startup.py both broke unnoticed, 7 December 2026).
Nothing is timed. In the slow step: each compiles kernels of its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

#: benchmark -> its quickest arguments (the ones that need no optional package and ran within a minute with them on
#: the 2-core VM, 7 December 2026: bench_system 51 s, bench_logistic 31 s, bench_spb 10 s, the others under 10 s; the
#: test compiles at the suite's level 1, in the suite's kernel cache)
QUICK = {
    "bench_system.py": ["--quick"],
    "bench_logistic.py": ["--quick"],
    "bench_memory_bound.py": ["--quick", "--repeat", "1"],
    "bench_startup.py": ["--skip-first", "--repeat", "1"],
    "bench_rounds.py": ["--quick"],
    "bench_clients.py": ["--quick"],
    "bench_diversity.py": ["--quick"],
    "bench_binomial.py": ["--quick"],
    "bench_spb.py": ["--quick"],
}


def test_every_benchmark_is_known():
    """A new benchmark joins QUICK (or this list of those left out, with why) so that it is run too."""
    left_out = {"bench_engine.py",  # 155 s with --quick: it compiles the family's one loop
                "bench_robust.py", "bench_sweep.py",  # no quick setting: minutes
                "bench_collective.py",  # gloo processes talking over 127.0.0.1
                "bench_torch.py", "bench_cifar.py", "bench_flute.py"}  # PyTorch's models: 45-130 s with --quick
    assert {p.name for p in BENCHMARKS.glob("bench_*.py")} == set(QUICK) | left_out


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(QUICK))
def test_the_benchmark_runs(name):
    """It exits 0 and prints its table (bench_startup.py exits non-zero when a command it times fails)."""
    done = subprocess.run([sys.executable, str(BENCHMARKS / name), *QUICK[name]], capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip(), f"{name} printed nothing"
