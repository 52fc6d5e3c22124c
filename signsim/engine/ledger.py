"""Which kernels the kernel cache holds, as signsim records them: Numba has no public way to ask.

Numba keeps a compiled kernel in its cache (``cache=True``) as it compiles it, and lists every compilation a
dispatcher holds in a process in its public ``signatures``. So once a kernel has run, or compiled, in a process whose
kernels are kept (``signsim.UNCACHED`` is None), each of its signatures is in the cache, and ``note`` records it: one
small file per kernel and signature under ``<NUMBA_CACHE_DIR>/ledger/<module>.<function>/``, named by a hash of what
Numba's own cache keys on besides the types (the Numba version, the Python version, the source file's folder and
stamp, its modification time and size, and the CPU: ``_context``) and the argument types, and holding the types'
names (JSON). ``holds`` and ``signatures`` read them back.

The ledger only steers choices that change no result: which loop a composition runs in (``compose.choose``), whether
a helper process compiles a new loop's callees (``split_compile``), whether a sweep says up front that it will
compile and how long ``signsim compile`` expects to take (``signsim.commands.compile``). Where it is wrong (the cache
was emptied by hand, two processes saved to one Numba index at once and one entry was lost) the kernel compiles all
the same, at a cost in time only: on one core instead of two, perhaps the family's larger loop, no background compile
of the one loop. Anything that goes wrong reading or writing it is no error: the ledger then says less. The kernel
cache folder is named by a hash of the sources (``signsim._kernel_cache_dir``), so edited sources start a new ledger
with the new cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import tempfile
from functools import cache
from importlib import metadata
from pathlib import Path

#: the ledger's folder in the kernel cache folder
FOLDER = "ledger"


@cache
def _numba_version() -> str:
    try:
        return metadata.version("numba")
    except Exception:  # noqa: BLE001 - a Numba without package metadata
        import numba

        return numba.__version__


@cache
def _context() -> list:
    """What Numba's cache keys on besides a kernel's types and source: its version, the Python's (its cache files'
    names: ``.py311``), the CPU (llvmlite's public host CPU name and features, as Numba's code generator uses)."""
    import llvmlite.binding as llvm

    return [_numba_version(), sys.implementation.cache_tag + sys.abiflags, llvm.get_host_cpu_name(),
            llvm.get_host_cpu_features().flatten()]


def root() -> Path | None:
    """The ledger's folder in the folder Numba keeps this process's kernels in (read by Numba from NUMBA_CACHE_DIR
    when it was imported, ``numba.config.CACHE_DIR``; the variable itself before), or None when they are not kept
    (no ledger then)."""
    import signsim

    numba = sys.modules.get("numba")
    where = getattr(getattr(numba, "config", None), "CACHE_DIR", None) or os.environ.get("NUMBA_CACHE_DIR")
    if signsim.UNCACHED is not None or not where:
        return None
    return Path(where) / FOLDER


def _stamp(source: str) -> list:
    """The source file's folder (Numba keeps each folder's kernels apart) and stamp."""
    try:
        real = os.path.realpath(source)
        st = os.stat(real)
    except OSError:
        return []
    return [os.path.dirname(real), st.st_mtime, st.st_size]


def _where(module: str, qualname: str) -> Path | None:
    folder = root()
    return None if folder is None else folder / f"{module}.{qualname}"


def _name(source: str, args: list[str]) -> str:
    text = json.dumps([_context(), _stamp(source), args])
    return hashlib.sha1(text.encode()).hexdigest()[:24]


def _parts(dispatcher) -> tuple[str, str, str]:
    f = dispatcher.py_func
    return f.__module__, f.__qualname__, f.__code__.co_filename


def note(*dispatchers) -> None:
    """Record every signature each of ``dispatchers`` holds in this process (``dispatcher.signatures``: compiled
    here or loaded from the cache). Nothing when the kernels are not kept; nothing raised."""
    with contextlib.suppress(Exception):  # (an object that is not a dispatcher: nothing to record)
        record([(d, signature) for d in dispatchers for signature in list(d.signatures)])


def record(pairs) -> None:
    """Record each ``(dispatcher, signature)`` of ``pairs`` as compiled into the cache (a loop's callees once the
    loop has compiled: ``split_compile.compile_loop``, whose signatures are the loop's own). Nothing when the
    kernels are not kept; nothing raised."""
    with contextlib.suppress(Exception):  # a read-only or full cache, a folder where a file would be: it says less
        for dispatcher, signature in pairs:
            module, qualname, source = _parts(dispatcher)
            folder = _where(module, qualname)
            if folder is None:
                return
            args = [str(t) for t in signature]
            path = folder / _name(source, args)
            if not os.path.isfile(path):
                _write(folder, path, {"context": _context(), "stamp": _stamp(source), "args": args})


def _write(folder: Path, path: Path, entry: dict) -> None:
    """``entry`` as JSON at ``path``, atomically, readable as the user's umask allows."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.fchmod(fd, 0o666 & ~mask)
        with os.fdopen(fd, "w") as f:
            json.dump(entry, f)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)  # (gone once replaced)


def holds(dispatcher, signature) -> bool:
    """Whether the ledger lists ``dispatcher`` compiled for ``signature`` (a tuple of Numba types)."""
    try:
        module, qualname, source = _parts(dispatcher)
        folder = _where(module, qualname)
        return folder is not None and os.path.isfile(folder / _name(source, [str(t) for t in signature]))
    except Exception:  # noqa: BLE001 - no answer: not cached
        return False


def signatures(module: str, qualname: str, source: str | Path) -> list[list[str]]:
    """The argument types' names of every signature the ledger lists for the kernel ``module.qualname`` defined in
    ``source``, in this context (``_context``) and for this state of the source."""
    found = []
    with contextlib.suppress(Exception):  # no answer: nothing listed
        folder = _where(module, qualname)
        if folder is None or not folder.is_dir():
            return []
        now = [_context(), _stamp(str(source))]
        for path in sorted(folder.iterdir()):
            if path.name.startswith("."):
                continue
            with contextlib.suppress(Exception):
                entry = json.loads(path.read_text())
                if [entry["context"], entry["stamp"]] == now:
                    found.append([str(a) for a in entry["args"]])
    return found


def signatures_of(dispatcher) -> list[list[str]]:
    """``signatures`` for a dispatcher."""
    return signatures(*_parts(dispatcher))
