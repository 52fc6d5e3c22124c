"""signsim: simulate sign-based, 1-bit distributed optimization and the statistics behind it.

The mathematics is in ``docs/theory.md`` (cited as "§N"). The Python API (docs/api.md):
``signsim.run``, ``signsim.check_spb``, ``signsim.diversity``, ``signsim.bound``, ``signsim.sweep``,
``signsim.spb_from_samples``, ``signsim.diversity_from_samples``; bad input raises ``signsim.InputError``.
They are loaded on first use, so ``import signsim`` stays fast (no NumPy, Numba or matplotlib).
"""

import os

from signsim.errors import InputError

#: Numba's optimization level when ``NUMBA_OPT`` is not set (``numba.core.config``): its kernels' cache folder is the
#: one a level left unset uses
DEFAULT_OPT = "3"
#: the values of ``NUMBA_OPT`` Numba takes, exactly as written (``numba.core.config``)
OPT_LEVELS = ("0", "1", "2", "3", "max")


def _kernel_cache_dir(here=None) -> str:
    """Numba's on-disk cache checks only the file that defines a cached function, not the files whose kernels it
    compiled in: after an upgrade (or any edit) of a called kernel, a stale loop could run, and even crash.
    So signsim keeps its kernels in a cache folder named by a hash of every kernel-bearing source file: new
    sources, new folder, a fresh compile. The stage modules (``signsim/stages/<kind>/``) and the catalog of them
    are left out: the names of the kernels compiled from a stage, and the types of the plans of the loops that
    compile it in (a composition's own loop; the one loop, for the stages on a worker's path), carry a hash of its
    source (``signsim.engine.stage_kernels.source_hash``, ``signsim.engine.plan``), so a
    new or edited stage compiles only what calls it. ``signsim compile --clear`` removes every such folder. (``here``:
    the package folder, for tests.) Numba's cache does not tell kernels compiled at another LLVM optimization level
    apart either (``NUMBA_OPT``, default 3; the test suite compiles at 1): a level other than the default, as set
    when signsim is imported, is hashed in too, so that the kernels of two levels go to two folders."""
    import hashlib
    from pathlib import Path

    here = Path(here or Path(__file__).resolve().parent)
    h = hashlib.sha1()
    for folder in ("engine", "problems", "noise", "diagnostics", "stages"):
        for f in sorted((here / folder).rglob("*.py")):
            name = f.relative_to(here)
            if name.parts[0] == "stages" and (len(name.parts) > 2 and name.name != "__init__.py"
                                             or name.name == "catalog.py"):
                continue  # hashed per stage (``stage_kernels.source_hash``, ``stage_kernels.builtin_key``)
            h.update(str(name).encode())
            h.update(f.read_bytes())
    # the loop reads its codes and history columns from these; the problems' kernels draw through draws.py and
    # sample by the split modes of data/splits.py; stage kernels call numbers.floor_share
    for name in ("codes.py", "history.py", "draws.py", "data/splits.py", "numbers.py"):
        h.update((here / name).read_bytes())
    opt = os.environ.get("NUMBA_OPT")
    if opt in OPT_LEVELS and opt != DEFAULT_OPT:  # (Numba compiles at its default for any other value, and warns)
        h.update(b"NUMBA_OPT=" + opt.encode())
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "signsim" / "numba"
    return str(root / h.hexdigest()[:16])


#: free bytes the kernel cache's disk must have for signsim to keep compiled kernels there (a first run writes about
#: 10 MB, every kernel of every family about 50 MB). With less, kernels compile into a temporary folder removed at
#: exit (``UNCACHED`` says why; the compile notice tells the user) instead of a full disk stopping the run.
CACHE_MIN_FREE = 64 * 2**20


def _free_bytes(folder: str) -> int | None:
    """Free bytes on the disk that holds ``folder`` (its nearest existing parent), None if that cannot be known
    (a name too long, a folder this user may not look into, ...)."""
    import shutil
    from pathlib import Path

    try:
        for q in (Path(folder), *Path(folder).parents):
            if q.exists():
                return shutil.disk_usage(q).free
    except OSError:
        return None
    return None


def _uncached_fallback(folder: str, need: int = CACHE_MIN_FREE) -> tuple[str, int] | None:
    """(a temporary folder for Numba's cache, the free bytes of ``folder``'s disk) when that disk has less than
    ``need`` bytes free and the temporary folder's disk has them; otherwise None (``folder`` is used)."""
    free = _free_bytes(folder)
    if free is None or free >= need:
        return None
    import shutil
    import tempfile

    try:
        tmp = tempfile.mkdtemp(prefix="signsim-kernels-")
    except OSError:
        return None
    if (_free_bytes(tmp) or 0) < need:
        shutil.rmtree(tmp, ignore_errors=True)
        return None
    return tmp, free


def remove_temporary_kernels() -> None:
    """Remove the temporary kernel folder this process made (``UNCACHED``), if any: at exit, and before the command
    line leaves with ``os._exit`` after an interrupt (which runs no exit handler)."""
    if _TEMPORARY is not None:
        import shutil

        shutil.rmtree(_TEMPORARY, ignore_errors=True)


# a value the user set wins (and then keeping it consistent is theirs)
if "NUMBA_CACHE_DIR" not in os.environ:
    os.environ["NUMBA_CACHE_DIR"] = _kernel_cache_dir()
#: (the kernel cache folder, its disk's free bytes) when that disk was too full and kernels compile into a
#: temporary folder instead, removed when the process that made it ends; None normally. Its child processes (a
#: sweep's workers, the split compile's helper) inherit it through SIGNSIM_UNCACHED ("FREE_BYTES:FOLDER").
UNCACHED: tuple[str, int] | None = None
_TEMPORARY: str | None = None  # the temporary folder, when this process made it
if (_given := os.environ.get("SIGNSIM_UNCACHED", "")).partition(":")[0].isdigit():
    UNCACHED = (_given.partition(":")[2], int(_given.partition(":")[0]))
elif (_fallback := _uncached_fallback(os.environ["NUMBA_CACHE_DIR"])) is not None:
    import atexit

    _TEMPORARY, _free = _fallback
    UNCACHED = (os.environ["NUMBA_CACHE_DIR"], _free)
    os.environ["SIGNSIM_UNCACHED"] = f"{_free}:{os.environ['NUMBA_CACHE_DIR']}"
    os.environ["NUMBA_CACHE_DIR"] = _TEMPORARY
    atexit.register(remove_temporary_kernels)

__version__ = "0.2.0"

_API = ("run", "check_spb", "diversity", "bound", "spb_from_samples", "diversity_from_samples", "Result")
__all__ = ["InputError", "__version__", *_API, "sweep"]


def __getattr__(name: str):
    if name in _API:
        from signsim import api

        return getattr(api, name)
    if name == "sweep":  # the subpackage signsim.sweep, callable as signsim.api.sweep
        import importlib

        return importlib.import_module("signsim.sweep")
    raise AttributeError(f"module 'signsim' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
