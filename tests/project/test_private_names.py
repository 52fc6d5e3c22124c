"""No new reach into Numba's or llvmlite's private internals (issue 47).

Each pattern below names an internal that Numba does not document and may change in any release. ``REMAINING`` lists
the files that still use one, and why no public replacement exists yet; the test fails when a file uses a pattern
it is not listed for (a new reach), and when a listed use is gone (so the list only shrinks, and stays true).
"""

from __future__ import annotations

import re
from pathlib import Path

import signsim

ROOT = Path(signsim.__file__).parent

#: pattern name -> regular expression over a source file
PATTERNS = {
    "linker patch": r"_get_module_for_linking",
    "cache internals": r"\._cache\b|_index_key|_load_index|_cache_file|_cache_path",
    "cache index unpickled": r"\.nbi\b[\s\S]*pickle\.load|pickle\.load[\s\S]*\.nbi\b",
    "threading layer": r"_launch_threads",
    "random internals": r"numba\.np\.random",
    "no runtime": r"\b_nrt\s*=|[\"']_nrt[\"']",
    "bytecode copies": r"__code__\.replace",
    "target options": r"\btargetoptions\b",
    "private numba module": r"from numba\.(?:np\.ufunc\.parallel|core\.(?:codegen|caching|registry)) import",
}

#: (file relative to signsim/, pattern name) -> why it is still there
REMAINING = {
    ("draws.py", "random internals"):
        "Numba's translation of NumPy's bounded draws: the public gen.integers allocates an array per draw",
    ("engine/stage_kernels.py", "no runtime"):
        "the worker path compiled without Numba's runtime (allocates nothing): with it, SSDM on Rosenbrock (d = 10, "
        "M = 32, K = 20,000) took 0.29 s instead of 0.08 s (benchmarks/bench_engine.py, 5 December 2026; again 0.288 "
        "s against 0.080, medians of five, on 7 December with every _nrt=False removed: the inlined worker step then "
        "counted references, 199 increments and 703 decrements in the loop against 89 and 514)",
    ("engine/dispatch.py", "no runtime"):
        "the loop's calls (problem, noise and stage: dispatch.overloaded) typed with the runtime, then inlined into "
        "the worker path",
    ("engine/loop.py", "no runtime"): "the worker step and the worker's gradient, as stage_kernels.py",
    ("problems/mlp.py", "no runtime"): "the oracle that allocates asks for the runtime back, as stage_kernels.py",
}


def _uses(root: Path = ROOT) -> set[tuple[str, str]]:
    """(file relative to ``root``, pattern name) for every pattern a file of the package at ``root`` matches
    (``tools/structure.py`` measures other checkouts by it)."""
    found = set()
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for name, pattern in PATTERNS.items():
            if re.search(pattern, text):
                found.add((path.relative_to(root).as_posix(), name))
    return found


def test_no_file_reaches_a_private_numba_internal_it_is_not_listed_for():
    new = _uses() - set(REMAINING)
    assert not new, f"private Numba internals used (use a public API, or list the use with its reason): {sorted(new)}"


def test_every_listed_use_is_still_there():
    gone = set(REMAINING) - _uses()
    assert not gone, f"no longer used: remove from REMAINING: {sorted(gone)}"


def test_the_patterns_catch_what_they_name():
    samples = {
        "linker patch": "CPUCodeLibrary._get_module_for_linking = f",
        "cache internals": "key in cache._cache_file._load_index()",
        "cache index unpickled": "for f in folder.glob('*.nbi'):\n    pickle.load(f)",
        "threading layer": "from numba.np.ufunc.parallel import _launch_threads",
        "random internals": "from numba.np.random.generator_core import next_uint32",
        "no runtime": "njit(_nrt=False)",
        "bytecode copies": "fn.__code__.replace(co_name=name)",
        "target options": "kernel.targetoptions.items()",
        "private numba module": "from numba.core.codegen import CPUCodeLibrary",
    }
    assert set(samples) == set(PATTERNS)
    for name, text in samples.items():
        assert re.search(PATTERNS[name], text), name
    assert not any(re.search(p, "numba.get_num_threads(); kernel.stats.cache_path") for p in PATTERNS.values())
