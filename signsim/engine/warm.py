"""The family's one loop, compiled in the background after a run that compiled a loop of its own (docs/reference.md,
"Compile times").

The first run of a family of problems compiles the smaller loop of its own composition of stages (about half the
CPU time of the family's one loop, which runs every composition of built-in stages: ``signsim.engine.compose``).
Once that run's loop has run, ``start`` launches ``python -m signsim.engine.warm``, a detached process at the lowest
priority that compiles the family's one loop into the kernel cache for the same argument types, and outlives the
run. A later run with another composition then finds the one loop cached and compiles nothing; one that starts
while the background compile is still at work waits for it (``wait``: the process's end is the readiness signal)
instead of compiling the same loop a second time. One background compile per family, loop (threaded or serial) and
cache at a time: its process id is in a file in the kernel cache, removed when it ends.

Nothing here changes what is compiled or any result, only when and in which process the one loop compiles.
``SIGNSIM_WARM=0`` turns it off (the test suite does, except the test of this module); it needs 2 or more cores.
"""

from __future__ import annotations

import contextlib
import os
import pickle
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
    return os.environ.get(ENV) != "0" and (os.cpu_count() or 1) >= 2


def pid_file(family: str, threaded: bool) -> Path:
    """Where the background compile of ``family``'s one loop keeps its process id (in the kernel cache)."""
    root = Path(os.environ.get("NUMBA_CACHE_DIR") or ".")
    return root / f"signsim-warm-{family}-{'threaded' if threaded else 'serial'}.pid"


def running(family: str, threaded: bool) -> int | None:
    """The process id of the background compile of ``family``'s one loop, if one is at work (a file left by a
    process that no longer exists is removed)."""
    path = pid_file(family, threaded)
    try:
        pid = int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    except PermissionError:
        pass  # another user's process: at work
    return pid


def start(family: str, threaded: bool, signature: tuple) -> int | None:
    """Launch the background compile of ``family``'s one loop for ``signature`` (the loop's argument types), unless
    it is off or one is at work; returns its process id."""
    if not enabled() or running(family, threaded) is not None:
        return None
    path = pid_file(family, threaded)
    path.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "signsim.engine.warm"], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            preexec_fn=lambda: os.nice(19))
    tmp = path.with_suffix(f".{proc.pid}.tmp")
    tmp.write_text(f"{proc.pid}\n")
    os.replace(tmp, path)  # before the job is sent: a run started now sees it at work
    try:
        proc.stdin.write(pickle.dumps((family, threaded, signature, str(path))))
        proc.stdin.close()
    except OSError:
        pass
    return proc.pid


def wait(family: str, threaded: bool) -> bool:
    """Wait until the background compile of ``family``'s one loop ends, if one is at work (True then)."""
    pid = running(family, threaded)
    if pid is None:
        return False
    NOTIFY(f"signsim: waiting for the {family} loop of every composition of built-in stages, which another signsim "
           f"process (pid {pid}) is compiling in the background; {ENV}=0 turns that off")
    while running(family, threaded) == pid:
        time.sleep(0.1)  # polls the readiness signal: the process's end
    return True


def _main() -> None:
    family, threaded, signature, path = pickle.load(sys.stdin.buffer)
    try:
        from signsim.engine import compose

        loop = compose.loops_of_every_composition(family)[0 if threaded else 1]
        loop.compile(signature)
    finally:
        with contextlib.suppress(OSError):
            if Path(path).read_text().split()[0] == str(os.getpid()):
                Path(path).unlink()


if __name__ == "__main__":
    import signsim  # noqa: F401 - sets NUMBA_CACHE_DIR (inherited anyway) before Numba loads

    _main()
