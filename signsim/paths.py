"""Files the user names: inputs checked to be readable regular files, outputs checked before any work starts
and written atomically.

An atomic write goes to a temporary file in the target's directory, which is flushed, given the mode a new
file would get (the umask's, or the mode of the regular file it replaces) and renamed over the target. A
symlink is followed (its target is replaced, the link stays); a FIFO or a character device (``/dev/null``,
``/dev/stdout``) is written directly; any other kind of file is refused, never replaced.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from signsim.errors import InputError

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def home_expanded(path: str | Path, where: str) -> Path:
    """``path`` with a leading ``~`` or ``~user`` expanded (as the plugin loader does); a user that does not exist
    (or no home directory) raises one-line InputError naming the path as written, not Python's RuntimeError."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        user = str(path).split("/", 1)[0]
        raise InputError(f"{where} {path}: cannot expand '{user}': no such user or no home directory") from None


def resolved(path: str | Path, where: str) -> Path:
    """``path`` expanded (``home_expanded``) and made absolute with its links followed, so that a sweep's workers
    load the same file; a loop of links or a name the file system refuses is one-line InputError naming the path,
    not Python's RuntimeError or OSError."""
    import errno

    p = home_expanded(path, where)
    try:
        p = p.resolve()
        p.stat()  # Python >= 3.13 resolves a loop of links to itself without a word: its stat is ELOOP
    except RuntimeError as e:  # Python 3.11-3.12: "Symlink loop from ..."
        raise InputError(f"{where} {path}: cannot follow its links ({e})") from None
    except FileNotFoundError:
        return p  # (said by the reader: "no such file")
    except OSError as e:  # a loop of links (ELOOP), a name too long, ...
        if e.errno == errno.ELOOP:
            raise InputError(f"{where} {path}: cannot follow its links ({e.strerror})") from None
        return p  # (the reader names what else is wrong)
    return p


def _expanded(text: str, option: str) -> str:
    """An output path with its leading ``~`` or ``~user`` expanded (a folder literally named ``~nouser`` is never
    created: a user that does not exist is one line naming the path)."""
    return str(home_expanded(text, option)) if text.startswith("~") else text


#: memory a text or source file takes while it is read and parsed (TOML, JSON, Python source), per byte of the file
PARSE_BYTES = 10


def input_file(path: str | Path, where: str, per_byte: float = PARSE_BYTES) -> Path:
    """``path`` if it is a regular file this process can read, and whose reading (about ``per_byte`` bytes of memory
    per byte of file; 0: read in pieces) fits in the memory available; otherwise InputError ``where: what it is``."""
    p = Path(path)
    if str(path) == "":
        raise InputError(f"{where}: empty file name")
    try:
        st = p.stat()
    except FileNotFoundError:
        raise InputError(f"{where}: no such file") from None
    except OSError as e:
        raise InputError(f"{where}: cannot read it ({e.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{where}: is {kind(st.st_mode)}, not a regular file")
    if not os.access(p, os.R_OK):
        raise InputError(f"{where}: cannot read it (permission denied)")
    if per_byte:
        from signsim.memory import require

        require(st.st_size * per_byte, f"{where}: reading this {st.st_size:,}-byte file", "use a smaller file")
    return p


def _exists(p: Path) -> bool:
    try:
        p.stat()
    except OSError:
        return False
    return True


def _direct(mode: int) -> bool:
    """Written in place rather than replaced: FIFOs and character devices."""
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def output_file(value: str | Path | None, option: str = "--out") -> Path | None:
    """Check an output file name before any work: it must not be empty or name a directory, its directory
    must exist or be creatable and writable, and its name must fit the file system. Returns the path the
    write will go to (a symlink's target). Creates missing parent directories."""
    if value is None:
        return None
    text = str(value)
    where = f"{option} {text}" if text else f"{option} ''"
    if not text.strip():
        raise InputError(f"{where}: empty file name")
    if "\x00" in text:
        raise InputError(f"{where}: file name contains a NUL byte")
    text = _expanded(text, option)
    try:  # an existing FIFO or device is written in place, under the name given (/dev/stdout, /dev/fd/N)
        given = os.stat(text)
    except (OSError, ValueError):
        given = None
    if given is not None and _direct(given.st_mode):
        return Path(text)
    path = Path(os.path.realpath(text))
    try:
        st = path.stat()
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        raise InputError(f"{where}: a parent of it is a file, not a directory") from None
    except OSError as e:
        raise InputError(f"{where}: cannot write there ({e.strerror})") from None
    if text.endswith(os.sep) or (st is not None and stat.S_ISDIR(st.st_mode)):
        raise InputError(f"{where}: is a directory; name a file")
    if st is not None and not (stat.S_ISREG(st.st_mode) or _direct(st.st_mode)):
        raise InputError(f"{where}: is {kind(st.st_mode)}; refusing to replace it")
    if st is not None and _direct(st.st_mode):
        return path
    parent = path.parent
    ancestor = parent
    while not _exists(ancestor) and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise InputError(f"{where}: {ancestor} is a file, not a directory")
    _probe(where, ancestor, path, parent)
    return path


def _probe(where: str, ancestor: Path, path: Path, directory: Path) -> None:
    """Refuse a name in ``path`` longer than the file system of ``ancestor`` (its nearest existing folder)
    allows, then create ``directory`` and write (and remove) a file in it."""
    try:
        limit = os.pathconf(ancestor, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    if any(len(os.fsencode(part)) > limit for part in path.parts):
        raise InputError(f"{where}: a name in it is longer than the file system allows ({limit} bytes)")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".signsim-probe.", dir=directory)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise InputError(f"{where}: cannot write there ({e.strerror or errno.errorcode.get(e.errno, e)})") from None


def output_dir(value: str | Path, option: str = "--out") -> Path:
    """Check (and create) an output directory before any work."""
    text = str(value)
    where = f"{option} {text}" if text else f"{option} ''"
    if not text.strip():
        raise InputError(f"{where}: empty directory name")
    text = _expanded(text, option)
    path = Path(os.path.realpath(text))
    ancestor = path
    while not _exists(ancestor) and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        what = "it" if ancestor == path else str(ancestor)
        raise InputError(f"{where}: {what} is not a directory")
    _probe(where, ancestor, path, path)
    return Path(text)


#: how long a write to a FIFO waits for a process to open it for reading
FIFO_WAIT = 3.0


def _open_direct(target: Path, mode: int, option: str):
    """``target`` opened for writing in place; a FIFO must get a reader within FIFO_WAIT seconds (opening it
    blocks until then, uninterruptibly, so it is opened non-blocking and retried)."""
    if not stat.S_ISFIFO(mode):
        return open(target, "wb")
    import fcntl
    import time

    end = time.monotonic() + FIFO_WAIT
    while True:
        try:
            fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as e:
            if e.errno != errno.ENXIO or time.monotonic() > end:
                raise InputError(f"{option} {target}: a FIFO that no process reads; nothing written") from None
            time.sleep(0.05)
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return os.fdopen(fd, "wb")


@contextlib.contextmanager
def atomic_path(path: str | Path, option: str = "--out") -> Iterator[Path]:
    """A temporary path (same directory and suffix as ``path``) to write; on success it replaces ``path``
    (see the module doc); on failure it is removed and ``path`` is untouched."""
    target = output_file(path, option)
    st = target.stat() if target.exists() else None
    if st is not None and _direct(st.st_mode):
        # a FIFO or a device: written in place, never replaced (staged in a temporary directory first)
        with tempfile.TemporaryDirectory(prefix="signsim-") as tmpdir:
            tmp = Path(tmpdir) / f"out{target.suffix}"
            with _naming(target, f"staging it in {tmpdir}"):
                yield tmp
            with _naming(target), open(tmp, "rb") as src, _open_direct(target, st.st_mode, option) as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
        return
    mode = stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask()
    with _naming(target):
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name[:100]}.", suffix=f".tmp{target.suffix}",
                                        dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        with _naming(target):
            yield tmp
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
            os.chmod(tmp, mode)
            os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


@contextlib.contextmanager
def _naming(target: Path, doing: str = "") -> Iterator[None]:
    """An OSError raised inside (a full disk, an I/O error, a quota) names ``target``, the file the user asked
    for, rather than a temporary file or no file at all: ``TARGET: No space left on device``."""
    try:
        yield
    except OSError as e:
        if e.errno is None:  # pragma: no cover - raised without an error number: nothing to rephrase
            raise
        what = e.strerror or os.strerror(e.errno)
        raise OSError(e.errno, f"{what} (while {doing})" if doing else what, str(target)) from None


def write_atomic(path: str | Path, text: str, option: str = "--out") -> None:
    """Write ``text`` to ``path`` so that a reader sees either the old file or the whole new one."""
    with atomic_path(path, option) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
