"""Ctrl-C (SIGINT) and SIGTERM: both stop the work in progress the same way (``KeyboardInterrupt``; SIGTERM
raises its subclass ``Terminated``), partial results are kept, and the exit code is 130 or 143.

Compiled kernels cannot be interrupted while they run, so long kernels are called in chunks of a fraction
of a second, each in a helper thread (``interruptible``) while the main thread waits for it and acts on a
signal at once, even while the first chunk compiles its kernel or one chunk runs long: the chunk is then
abandoned to its thread, its results unused. ``deferred()`` protects short sections that must finish, such as
writing results files: a signal that arrives inside is remembered and raised when the section ends.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

#: a chunk of compiled work aims at this many seconds, so that signals act within about a second
CHUNK_SECONDS = 0.1


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C (exit 143 instead of 130)."""


_state: dict = {"pending": None, "depth": 0, "received": None}


def _raise(signum: int) -> None:
    raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _handler(signum, frame) -> None:
    _state["received"] = signum
    _state["pending"] = signum  # until acknowledged: an exception raised here can be swallowed (ctypes callbacks)
    if _state["depth"] > 0:
        return
    _raise(signum)


def check() -> None:
    """Raise the signal received and not yet acknowledged, if any (a checkpoint between chunks of work)."""
    if _state["pending"] is not None and _state["depth"] == 0:
        signum, _state["pending"] = _state["pending"], None
        _raise(signum)


def hold() -> None:
    """From now on signals are only recorded (the command is finishing)."""
    _state["depth"] += 1


def release() -> None:
    _state["depth"] = 0
    _state["pending"] = None


def can_hold() -> bool:
    """Whether ``held()`` can hold SIGINT back here: in the main thread, under signsim's own handler (``install``:
    the CLI) or Python's default one (the API in a script, a notebook's cell), or with SIGINT ignored (a job a
    script or a non-interactive shell started with ``&``: nothing to hold). Not under another's: a sweep's pool
    worker, whose handler raises at once."""
    return (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) in (_handler, signal.default_int_handler, signal.SIG_IGN))


@contextlib.contextmanager
def held() -> Iterator[None]:
    """SIGINT (and, under signsim's handler, SIGTERM) held back to the block's end, then raised (``deferred``);
    under Python's default handler, signsim's stands in for the block (``can_hold`` says where this applies)."""
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN:  # (ignored: it stays so)
        yield
        return
    ours = previous is _handler
    if not ours:
        signal.signal(signal.SIGINT, _handler)
    try:
        with deferred():
            yield
    finally:
        if not ours:
            signal.signal(signal.SIGINT, previous)


def abandon() -> None:
    """Note that compiled work was left running in a helper thread (see ``signsim.engine.driver``)."""
    _state["abandoned"] = True


def abandoned() -> bool:
    return bool(_state.get("abandoned"))


def acknowledge() -> None:
    """The interrupt has been handled (partial results kept): do not raise it again."""
    _state["pending"] = None


def _unraisable(info) -> None:
    """An interrupt raised where Python cannot propagate it (an import-lock or ctypes callback) is kept
    pending and raised at the next checkpoint; it is not printed as a traceback."""
    if isinstance(info.exc_value, KeyboardInterrupt):
        return
    (_state.get("hook") or sys.__unraisablehook__)(info)


def pending() -> bool:
    """Whether a signal arrived that is not yet raised (inside ``deferred()``, or where Python could not raise
    it): work in progress stops at its next checkpoint."""
    return _state["pending"] is not None


def install() -> dict:
    """Handle SIGINT and SIGTERM (from the main thread); returns the previous handlers for ``restore``. A signal
    the process ignores stays ignored: a job that a script or a non-interactive shell started with ``&`` ignores
    SIGINT, so that a Ctrl-C meant for the script's foreground leaves it running."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous: dict = {"hook": sys.unraisablehook}
    if sys.unraisablehook is not _unraisable:
        _state["hook"] = sys.unraisablehook
    sys.unraisablehook = _unraisable
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is not signal.SIG_IGN:
            previous[sig] = signal.signal(sig, _handler)
    _state.update(pending=None, depth=0, received=None, abandoned=False)
    return previous


def restore(previous: dict) -> None:
    previous = dict(previous)
    if "hook" in previous:
        sys.unraisablehook = previous.pop("hook")
    for sig, h in previous.items():
        signal.signal(sig, h if h is not None else signal.SIG_DFL)


def received() -> int | None:
    """The last signal received (SIGINT or SIGTERM), if any."""
    return _state["received"]


def exit_code() -> int:
    return 143 if _state["received"] == signal.SIGTERM else 130


def note(signum: int) -> None:
    """Remember a signal that arrived before the handlers were installed (during start-up)."""
    _state["received"] = signum


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Signals arriving inside are raised when the outermost ``deferred`` block ends."""
    _state["depth"] += 1
    try:
        yield
    finally:
        _state["depth"] -= 1
        if _state["depth"] == 0 and _state["pending"] is not None:
            signum, _state["pending"] = _state["pending"], None
            _raise(signum)


#: the environment variable naming a file that ``ready()`` creates (docs/reference.md, environment variables)
READY_FILE = "SIGNSIM_READY_FILE"


def ready() -> None:
    """The command's compiled work is under way (past start-up, its kernels loaded, a first chunk done), so a
    signal now stops the work and keeps partial results: create the (empty) file named by SIGNSIM_READY_FILE,
    if set, once per process. A script (or a test) waits for the file instead of sleeping for a guessed time."""
    if _state.get("ready"):
        return
    _state["ready"] = True
    path = os.environ.get(READY_FILE)
    if not path:
        return
    try:
        with open(path, "a"):
            pass
    except OSError as e:
        print(f"signsim: {READY_FILE}={path}: cannot create it ({e.strerror})", file=sys.stderr)


#: how often (seconds) the main thread looks for a signal while compiled work runs in a helper thread
SIGNAL_POLL = 0.05

T = TypeVar("T")


def interruptible(work: Callable[[], T], on_abandon: Callable[[], None] | None = None) -> T:
    """``work()`` (compiled work, which releases the GIL, and the first call's compilation) in a helper thread
    while the main thread waits and acts on Ctrl-C and SIGTERM at once, however long one call takes: the signal
    raises KeyboardInterrupt here, ``on_abandon()`` is called, and the call is abandoned to its thread (a
    daemon: it ends with the process, which exits without waiting for it, see ``abandon``). Its result must
    then not be used. Outside the main thread, or inside ``deferred()``, ``work()`` runs here, deferred."""
    if threading.current_thread() is not threading.main_thread() or _state["depth"] > 0:
        with deferred():
            return work()
    box: dict = {}
    done = threading.Event()
    lock = threading.Lock()
    began = {"work": False, "cancelled": False}

    def target() -> None:
        with lock:  # a signal that reached the main thread before the work began cancels it: nothing is abandoned
            if began["cancelled"]:
                done.set()
                return
            began["work"] = True
        try:
            box["value"] = work()
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            box["error"] = e
        finally:
            done.set()

    thread = threading.Thread(target=target, daemon=True, name="signsim-chunk")
    try:
        thread.start()  # (a signal can land inside start(), the thread already running: it is in the try)
        while not done.wait(SIGNAL_POLL):
            check()
        check()
    except KeyboardInterrupt:
        with lock:
            began["cancelled"] = True
            running = began["work"] and not done.is_set()
        if running:
            abandon()
            if on_abandon is not None:
                on_abandon()
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]


def chunked(total: int, step: Callable[[int, int], None], first: int = 1, limit: int = 1 << 30) -> None:
    """Call ``step(lo, hi)`` over consecutive ranges covering [0, total), each sized to take about
    CHUNK_SECONDS, each ``interruptible``: Ctrl-C and SIGTERM act at once, also while the first range compiles
    its kernel or one range takes long (the arrays the step fills are then abandoned with it)."""
    lo, size = 0, max(1, first)
    while lo < total:
        hi = min(total, lo + size)
        t = time.perf_counter()
        interruptible(lambda lo=lo, hi=hi: step(lo, hi))
        ready()
        per = (time.perf_counter() - t) / (hi - lo)
        size = int(min(max(1, CHUNK_SECONDS / max(per, 1e-12)), limit, 4 * size))
        lo = hi


# --- pool workers -------------------------------------------------------------------------------------


def _worker_handler(signum, frame) -> None:
    if _state["received"] is None:  # the first signal stops the run; later ones are ignored
        _state["received"] = signum
        if _state.get("in_run"):  # outside a run (the worker starting up or idle) it is only recorded
            raise KeyboardInterrupt()


@contextlib.contextmanager
def worker_run() -> Iterator[bool]:
    """A pool worker's run: yields whether a signal already arrived (then start nothing). Inside, the first
    SIGINT raises KeyboardInterrupt, which the run turns into its partial results; outside, while the worker
    imports, unpickles its next task or waits for one, the signal is only recorded, so a worker interrupted while
    it starts up neither dies with a traceback nor breaks the pool: it takes its next task and returns at once."""
    try:
        _state["in_run"] = True
        yield _state["received"] is not None
    finally:
        _state["in_run"] = False


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(1)  # the sweep process is gone: nobody will collect this worker's result


def worker_init(parent: int) -> None:
    """Initializer of a sweep's pool workers: the first SIGINT interrupts the running run (which reports its
    partial results; later ones are ignored), SIGTERM ends the worker, and the worker exits when its parent
    process dies."""
    signal.signal(signal.SIGINT, _worker_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
