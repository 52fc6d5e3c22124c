"""A damaged kernel cache entry is compiled again, as a deleted one is (docs/reference.md, ``NUMBA_CACHE_DIR``).

Numba reads its cache files (``.nbi`` index, ``.nbc`` data) without guarding against damage: a truncated, empty or
garbage file (a full disk, a killed writer, a copy gone wrong) raised UnpicklingError, EOFError or ValueError
("unregistered extension code") on every later run. ``repairing`` runs a command; when it fails while Numba reads
its cache, the file being read (found in the failing frames of Numba's cache reader: its open file) is removed, one
line on stderr says so, and the command runs again, which compiles that kernel afresh. After ``ATTEMPTS`` such
repairs (or when no file can be named) the whole of signsim's kernel cache folder is emptied once.
"""

from __future__ import annotations

import os
import pickle
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

#: what reading a damaged pickle can raise
DAMAGE = (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError, IndexError, KeyError,
          OverflowError, MemoryError)
#: the file names of Numba's cache
SUFFIXES = (".nbi", ".nbc")
#: file-by-file repairs before the whole folder is emptied
ATTEMPTS = 8

_READER = os.path.join("numba", "core", "caching.py")


def damaged_files(exc: BaseException) -> list[Path] | None:
    """The cache files Numba was reading when ``exc`` was raised (an empty list: it was reading its cache, the file
    unknown); None when ``exc`` was not raised while Numba read its cache."""
    found = None
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_filename.endswith(_READER):
            found = [] if found is None else found
            f, path = frame.f_locals.get("f"), frame.f_locals.get("path")
            for name in (getattr(f, "name", None) if hasattr(f, "read") else None,
                         os.fspath(path) if isinstance(path, str | os.PathLike) else None):
                if isinstance(name, str) and name.endswith(SUFFIXES) and Path(name) not in found:
                    found.append(Path(name))
        tb = tb.tb_next
    return found


def writing_cache(exc: BaseException) -> bool:
    """Whether ``exc`` (an OSError: a full disk, a quota, a read-only folder) was raised inside Numba's cache code
    (``damaged_files`` finds the frames; writing, or reading a file it cannot open)."""
    return damaged_files(exc) is not None


def _say(line: str) -> None:
    print(f"signsim: {line}", file=sys.stderr, flush=True)


def repairing(command: Callable[[], T], say: Callable[[str], None] = _say,
              empty: Callable[[], int] | None = None) -> T:
    """``command()``, run again after each repair of a damaged cache file it met (see the module's docstring);
    ``empty()`` empties the whole cache folder and returns the number of files removed (``signsim compile
    --clear``'s)."""
    repairs = 0
    while True:
        try:
            return command()
        except DAMAGE as e:
            files = damaged_files(e)
            if files is None:
                raise
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            if files and repairs < ATTEMPTS:
                for f in files:
                    f.unlink(missing_ok=True)
                    say(f"the kernel cache file {f} was unreadable ({type(e).__name__}: {first}): removed, its "
                        "kernel compiles again")
                repairs += 1
                continue
            if repairs > ATTEMPTS or empty is None:
                raise
            removed = empty()
            say(f"the kernel cache was unreadable ({type(e).__name__}: {first}): emptied ({removed} files), every "
                "kernel compiles again")
            repairs = ATTEMPTS + 1
