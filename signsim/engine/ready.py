"""Numba's target context made ready in a helper thread while a run builds its problem (issue 49).

The first compiled call of a process, even of a kernel loaded from the cache, first initialises Numba's target
context: its typing and lowering registries and the modules they import (SciPy's linear algebra among them), about
0.5 s on a 2-core machine, holding Python's GIL. A run's set-up has work that releases the GIL: NumPy's random fills
and matrix products in a model file's data, PyTorch's operations, reading files. ``start()`` calls an empty cached
kernel in a daemon thread, so that the initialisation runs beside that work instead of after it. The thread only
loads (on an empty cache, compiles) ``_nothing``, which the compile notice does not count
(``signsim.commands.compile._ours``); the compiled calls that follow wait for Numba's compiler lock as they would for
any other compile. An error there is left for the run's own first call to meet and report. ``SIGNSIM_READY=0``
turns it off (docs/reference.md).
"""

from __future__ import annotations

import os
import threading

from numba import njit

_lock = threading.Lock()
#: the helper thread, once started (one per process)
_thread: threading.Thread | None = None


@njit(cache=True)
def _nothing() -> int:
    return 0


def _load() -> None:
    try:
        _nothing()
    except Exception:  # noqa: BLE001 - the run's own first compiled call meets it again and reports it
        pass


def start() -> threading.Thread | None:
    """Initialise Numba's target context in a daemon thread, once per process (later calls do nothing); the
    thread, or None when ``SIGNSIM_READY=0`` or no thread could start (the run then goes on without it)."""
    global _thread
    if os.environ.get("SIGNSIM_READY", "1") == "0":
        return None
    with _lock:  # (runs started from several threads at once start one)
        if _thread is None:
            thread = threading.Thread(target=_load, name="signsim-numba-ready", daemon=True)
            try:
                thread.start()
            except RuntimeError:  # no new thread (a limit, or the interpreter shutting down)
                return None
            _thread = thread
    return _thread
