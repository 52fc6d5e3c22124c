"""Which kernels the kernel cache holds, as signsim records them: Numba has no public way to ask.

Numba keeps a compiled kernel in its cache (``cache=True``) as it compiles it, and lists every compilation a
dispatcher holds in a process in its public ``signatures``. So once a kernel has run, or compiled, in a process whose
kernels are kept (``signsim.UNCACHED`` is None), each of its signatures is in the cache, and ``note`` records it: one
small file per kernel and signature under ``<NUMBA_CACHE_DIR>/ledger/<module>.<function>/``, named by a hash of the
Numba version, the stamp of the kernel's source file (its modification time and size, which Numba's own index checks)
and the argument types, and holding the types' names (JSON). ``holds`` and ``signatures`` read them back.

The ledger only steers choices that change no result: which loop a composition runs in (``compose.choose``), whether
a helper process compiles a new loop's callees (``split_compile``), whether a command says it will compile
(``signsim.commands.compile``). Where it is wrong (the cache was emptied by hand, Numba found its index stale) the
kernel compiles as it would anyway; the kernel cache folder is named by a hash of the sources
(``signsim._kernel_cache_dir``), so edited sources start a new ledger with the new cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from functools import cache
from importlib import metadata
from pathlib import Path

#: the ledger's folder in the kernel cache folder
FOLDER = "ledger"


@cache
def _numba_version() -> str:
    return metadata.version("numba")


def root() -> Path | None:
    """The ledger's folder, or None when this process's kernels are not kept (no ledger then)."""
    import signsim

    where = os.environ.get("NUMBA_CACHE_DIR")
    if signsim.UNCACHED is not None or not where:
        return None
    return Path(where) / FOLDER


def _stamp(source: str) -> list:
    try:
        st = os.stat(source)
    except OSError:
        return []
    return [st.st_mtime, st.st_size]


def _where(module: str, qualname: str) -> Path | None:
    folder = root()
    return None if folder is None else folder / f"{module}.{qualname}"


def _name(source: str, args: list[str]) -> str:
    text = json.dumps([_numba_version(), _stamp(source), args])
    return hashlib.sha1(text.encode()).hexdigest()[:24]


def _parts(dispatcher) -> tuple[str, str, str]:
    f = dispatcher.py_func
    return f.__module__, f.__qualname__, f.__code__.co_filename


def note(*dispatchers) -> None:
    """Record every signature each of ``dispatchers`` holds in this process (``dispatcher.signatures``: compiled
    here or loaded from the cache). Nothing when the kernels are not kept; a failure to write is no error."""
    for dispatcher in dispatchers:
        module, qualname, source = _parts(dispatcher)
        folder = _where(module, qualname)
        if folder is None:
            return
        for signature in list(dispatcher.signatures):
            args = [str(t) for t in signature]
            path = folder / _name(source, args)
            if path.is_file():
                continue
            with contextlib.suppress(OSError):  # a read-only or full cache: the ledger just says less
                folder.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
                with os.fdopen(fd, "w") as f:
                    json.dump({"numba": _numba_version(), "stamp": _stamp(source), "args": args}, f)
                os.replace(tmp, path)


def holds(dispatcher, signature) -> bool:
    """Whether the ledger lists ``dispatcher`` compiled for ``signature`` (a tuple of Numba types)."""
    module, qualname, source = _parts(dispatcher)
    folder = _where(module, qualname)
    return folder is not None and (folder / _name(source, [str(t) for t in signature])).is_file()


def signatures(module: str, qualname: str, source: str | Path) -> list[list[str]]:
    """The argument types' names of every signature the ledger lists for the kernel ``module.qualname`` defined in
    ``source``, for this Numba and this state of the source. Read without importing Numba."""
    folder = _where(module, qualname)
    if folder is None or not folder.is_dir():
        return []
    now = [_numba_version(), _stamp(str(source))]
    found = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith("."):
            continue
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            entry = json.loads(path.read_text())
            if [entry["numba"], entry["stamp"]] == now:
                found.append([str(a) for a in entry["args"]])
    return found


def signatures_of(dispatcher) -> list[list[str]]:
    """``signatures`` for a dispatcher."""
    return signatures(*_parts(dispatcher))
