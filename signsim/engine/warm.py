"""The family's one loop, compiled in the background after a run that compiled a loop of its own (docs/reference.md,
``SIGNSIM_WARM``).

The first run of a family of problems compiles the smaller loop of its own composition of stages (about half the
CPU time of the family's one loop, which runs every composition of built-in stages: ``signsim.engine.compose``).
Once that run's loop has run, ``start`` launches ``python -m signsim.engine.warm``, a detached process at the lowest
priority that compiles the family's one loop into the kernel cache for the same argument types (and, in a second
process beside it, every built-in stage's server kernels, which the one loop calls by address, and the kernels
that hold its worker calls on a plugin), and outlives the run. A later run with another composition then finds the
one loop cached and compiles nothing; one that starts while the background compile is at work waits for it
(``wait``) instead of compiling the same loop a second time.

One background compile per family, loop (threaded or serial), argument types and cache at a time: it holds an
exclusive lock (``flock``) on a file in the kernel cache for as long as it lives, taken by the run that starts it
and handed over with the open file; the lock's release (the process ended, however) is the readiness signal, so a
reused process id or a file left behind cannot make a run wait. Nothing here changes what is compiled or any
result, only when and in which process the one loop compiles; a failure here never fails a run (the run then just
compiles the one loop itself when it needs it). ``SIGNSIM_WARM=0`` turns it off (the test suite does, except the
test of this module); it needs a POSIX system and 2 or more cores.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import pickle
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

#: the environment variable that turns the background compile off ("0")
ENV = "SIGNSIM_WARM"

#: how a command hears that a run waits for the background compile (the CLI prints it unless --quiet)
NOTIFY: Callable[[str], None] = lambda message: None  # noqa: E731


def enabled() -> bool:
    """Not when kernels are not kept (``signsim.UNCACHED``: their temporary folder goes with this process)."""
    import signsim

    return (os.environ.get(ENV) != "0" and os.name == "posix" and (os.cpu_count() or 1) >= 2
            and signsim.UNCACHED is None)


def lock_file(family: str, threaded: bool, signature: tuple) -> Path:
    """The file whose lock the background compile of ``family``'s one loop for ``signature`` (the types of the
    loop's arguments after its plan) holds (in the kernel cache; the one loop's key, which changes with the sources of
    the built-in stages it compiles in, ``stage_kernels.builtin_key``, and the argument types, dtype included, by a
    hash)."""
    from signsim.engine import stage_kernels

    root = Path(os.environ.get("NUMBA_CACHE_DIR") or ".")
    key = hashlib.sha1(repr((stage_kernels.builtin_key(), signature)).encode()).hexdigest()[:12]
    return root / f"signsim-warm-{family}-{'threaded' if threaded else 'serial'}-{key}.lock"


def _locked(fd: int, kind: int) -> bool:
    """Take the lock ``kind`` on ``fd`` without waiting: False when another process holds it."""
    import fcntl

    try:
        fcntl.flock(fd, kind | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _open(path: Path, flags: int, mode: int = 0o644) -> int:
    """``os.open`` of the lock file that never waits (a FIFO in its place would block a read-only open until a
    writer comes, forever) and takes a regular file only (OSError otherwise: no lock, no background compile)."""
    fd = os.open(path, flags | os.O_NONBLOCK, mode)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return fd


def running(family: str, threaded: bool, signature: tuple) -> bool:
    """Whether a background compile of ``family``'s one loop for ``signature`` is at work."""
    return _held(lock_file(family, threaded, signature))


def _held(path: Path) -> bool:
    """Whether a process holds the lock on ``path``."""
    import fcntl

    try:
        fd = _open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        if _locked(fd, fcntl.LOCK_SH):
            fcntl.flock(fd, fcntl.LOCK_UN)
            return False
        return True
    finally:
        os.close(fd)


def start(family: str, threaded: bool, signature: tuple) -> int | None:
    """Launch the background compile of ``family``'s one loop for ``signature`` (the loop's argument types), unless
    it is off or one is at work; returns its process id (None when none started, for whatever reason)."""
    if not enabled():
        return None
    with contextlib.suppress(Exception):  # a read-only cache, a full disk...: no background compile
        return _start(family, threaded, signature)
    return None


def _start(family: str, threaded: bool, signature: tuple) -> int | None:
    import fcntl

    path = lock_file(family, threaded, signature)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = _open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if not _locked(fd, fcntl.LOCK_EX):
            return None  # another one is at work
        # the child inherits the open file, and with it the lock, which it keeps after this process lets go
        proc = subprocess.Popen([sys.executable, "-m", "signsim.engine.warm", str(fd)], stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                                pass_fds=(fd,))
        os.ftruncate(fd, 0)
        os.write(fd, f"{proc.pid}\n".encode())  # for a person who looks (the lock is what counts)
        try:
            proc.stdin.write(pickle.dumps((family, threaded, signature)))
            proc.stdin.close()
        except OSError:
            pass
        return proc.pid
    finally:
        os.close(fd)  # this process's hold; the child's copy keeps the lock


def wait(family: str, threaded: bool, signature: tuple) -> bool:
    """Wait until the background compile of ``family``'s one loop for ``signature`` ends, if one is at work (True
    then). Polls the lock without blocking, so that Ctrl-C acts at once."""
    if not enabled() or not running(family, threaded, signature):
        return False
    NOTIFY(f"signsim: waiting for the {family} loop of every composition of built-in stages, which a signsim "
           f"process is compiling in the background (once after an install; {ENV}=0 turns that off)")
    while running(family, threaded, signature):
        time.sleep(0.1)  # polls the readiness signal: the lock's release
    return True


def _main(fd: int) -> None:
    """The background process: lowest priority, then compile the one loop here and every built-in stage's server
    kernels in a second process beside it (``SERVER``; inheriting the priority), on two cores; the inherited lock on
    ``fd`` goes with it when it ends, once both are done."""
    with contextlib.suppress(OSError):
        os.nice(19)
    family, threaded, signature = pickle.load(sys.stdin.buffer)
    from numba import typeof

    from signsim.engine import ledger, loop
    from signsim.engine.plan import compile_server_kernels, dtype_of, plan_for

    dtype = dtype_of(signature)
    # every composition's server kernels (the loop calls them by address), before the lock goes: a run that waited for
    # it then compiles nothing. In a process of their own while this one compiles the loop: one after the other they
    # took 59 s after a first run, a run started meanwhile waiting for both (2-core AMD EPYC VM, 7 December 2026)
    # (it ends when its stdin closes: this process ended, however, so that it never outlives the lock)
    beside = None
    with contextlib.suppress(OSError):
        beside = subprocess.Popen([sys.executable, "-m", "signsim.engine.warm", SERVER, str(dtype)],
                                  stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        plan = plan_for(family, parallel=threaded, dtype=dtype)
        kernel = loop.compiled(plan)
        kernel.compile((typeof(plan), *signature))
        ledger.note(kernel)
        if beside is not None:
            beside.wait()  # its exit is the readiness signal: its kernels are in the cache
    finally:
        if beside is not None and beside.poll() is None:
            beside.kill()
            beside.wait()
    compile_server_kernels(dtype)  # (loads them; compiles any the other process did not)
    plan.stages.held  # noqa: B018 - and the reference that holds them (``plan.ServerKernels``), compiled once
    os.close(fd)


#: the argument of ``python -m signsim.engine.warm`` that makes it the process compiling the server kernels
SERVER = "--server-kernels"


if __name__ == "__main__":
    import signsim  # noqa: F401 - sets NUMBA_CACHE_DIR (inherited anyway) before Numba loads
    from signsim.interface import memory

    memory.collect_less()  # (it compiles: the command's garbage-collection thresholds)

    if sys.argv[1] == SERVER:
        import threading

        from signsim.engine.plan import compile_server_kernels

        def orphaned():
            # (the file descriptor, not sys.stdin: a daemon thread blocked in its buffer's lock aborts the interpreter's
            # exit)
            while os.read(0, 4096):
                pass  # at EOF: the background compile that started this process ended
            os._exit(0)

        threading.Thread(target=orphaned, daemon=True).start()
        compile_server_kernels(sys.argv[2])
    else:
        _main(int(sys.argv[1]))
