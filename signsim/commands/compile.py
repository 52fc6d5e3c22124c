"""``signsim compile``: compile every kernel ahead of time (for a Docker image or a CI cache step), and
``signsim compile --clear``: empty signsim's part of the Numba cache.

Numba writes its cache under ``NUMBA_CACHE_DIR``, in one folder per source folder named
``<folder>_<sha1 of its absolute path>``; ``import signsim`` sets ``NUMBA_CACHE_DIR`` (unless the user did) to
a folder named by a hash of the kernel sources, so edited or upgraded kernels are never loaded stale
(``signsim/__init__.py``). This module finds those places without importing Numba, so the CLI can tell
before a run whether it will compile first.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import signsim

PACKAGE = Path(signsim.__file__).resolve().parent
SUFFIXES = (".nbi", ".nbc")
#: the kernels whose cache entry says "the run loop of this family of problems is compiled"
LOOP_INDEX = "loop.run_chunk*__{family}-*.nbi"

COMPILE_NOTICE = ("signsim: compiling the simulation kernels (the first run of each kind of problem after an "
                  "install or an upgrade takes 10-30 s on 2 cores; 'signsim compile' does it ahead of time)")


def source_dirs() -> list[Path]:
    return sorted({p.parent for p in PACKAGE.rglob("*.py")})


def cache_dirs() -> list[Path]:
    """Where Numba keeps (or would keep) the cache of each signsim source folder."""
    user = os.environ.get("NUMBA_CACHE_DIR")
    if user:
        return [Path(user) / f"{d.name}_{hashlib.sha1(str(d).encode()).hexdigest()}" for d in source_dirs()]
    return [d / "__pycache__" for d in source_dirs()]


def loop_is_cached(family: str = "*", dtype: str | None = None) -> bool:
    """Whether a run loop for ``family`` (any family by default) is in the kernel cache; with ``dtype``
    (``--dtype``: float64 or float32), one compiled for state of that type, read from Numba's index files (this
    unpickles Numba types, so it imports Numba; without ``dtype`` nothing is imported)."""
    engine = PACKAGE / "engine"
    indexes = [p for d in cache_dirs() if d.name.startswith("engine") or d.parent == engine
               for p in d.glob(LOOP_INDEX.format(family=family))]
    if dtype is None:
        return bool(indexes)
    return any(_compiled_for(p, dtype) for p in indexes)


#: the position of x among the run loop's arguments (``loop._run_chunk``)
X_ARGUMENT = 3


def _compiled_for(index: Path, dtype: str) -> bool:
    """Whether Numba's cache index ``index`` lists a compilation whose x is an array of ``dtype``. An index
    that cannot be read counts as a yes: better no notice than a wrong one."""
    import pickle

    try:
        with open(index, "rb") as f:
            pickle.load(f)  # Numba's version
            _, overloads = pickle.loads(f.read())
        return any(f"array({dtype}," in str(key[0][X_ARGUMENT]) for key in overloads)
    except Exception:  # noqa: BLE001 - a damaged or foreign index file
        return True


def clear() -> int:
    """Remove every cached kernel of signsim (also those of earlier sources: the sibling folders of signsim's
    own cache folder); return the number of files removed."""
    removed = 0
    dirs = list(cache_dirs())
    user = os.environ.get("NUMBA_CACHE_DIR")
    if user and Path(user).parent.name == "numba" and Path(user).parent.parent.name == "signsim":
        for other in Path(user).parent.glob("*"):
            if other.is_dir() and other != Path(user):
                dirs += [d for d in other.iterdir() if d.is_dir()]
    for d in dirs:
        if not d.is_dir():
            continue
        for f in d.iterdir():
            if f.suffix in SUFFIXES:
                f.unlink(missing_ok=True)
                removed += 1
    return removed


#: command lines that together load every kernel signsim has: one run per problem and per noise model (the run
#: loop, every problem's and noise model's kernels), every method alias, and the diagnostics' estimators
def warm_commands() -> list[list[str]]:
    from signsim import methods, noise, problems

    fast = ["--iters", "2", "--quiet"]
    cmds = [["run", "--problem", p, *fast] for p in problems.registry()]
    for model in noise.registry().values():
        spec = model.example_spec
        cmds.append(["run", "--problem", "quadratic", "--dim", "3", "--noise", spec, *fast])
    cmds += [["run", "--method", m, "--dim", "3", *fast] for m in methods.registry()]
    # each family's threaded loop (a step of at least driver.PARALLEL_WORK numbers) and its float32 copies
    cmds += [["run", "--problem", "quadratic", "--dim", "2000", "--workers", "32", *fast],
             ["run", "--problem", "logistic", "--workers", "32", "--batch-size", "64", *fast],
             ["run", "--problem", "mlp", "--workers", "32", "--batch-size", "8", *fast]]
    cmds += [["run", "--problem", p, "--dtype", "float32", *fast] for p in ("rosenbrock", "logistic", "mlp")]
    for p in ("logistic", "mlp", "quadratic", "rosenbrock"):
        cmds.append(["check-spb", "--problem", p, "--samples", "64", "--quiet"])
        cmds.append(["diversity", "--problem", p, "--pairs", "8", "--quiet"])
    return cmds


def compile_all(main: Callable[[list[str]], None], report: Callable[[str], None] = lambda s: None) -> int:
    """Run every warm-up command in this process through the CLI's ``main`` (handed down by the CLI: commands
    do not import it); return how many ran."""
    cmds = warm_commands()
    for i, args in enumerate(cmds, 1):
        report(f"[{i}/{len(cmds)}] signsim {' '.join(args)}")
        try:
            main(args)
        except SystemExit as e:
            if e.code in (130, 143):  # Ctrl-C or SIGTERM stopped the command: stop compiling too (exit 130 / 143)
                raise KeyboardInterrupt from None
            if e.code not in (0, 1, None):
                raise RuntimeError(f"signsim {' '.join(args)} exited {e.code}") from None
    return len(cmds)
