"""The memory settings of the signsim command's own process (never of a program or notebook that imports signsim,
but for the garbage collector's thresholds while one of its calls lasts: ``collecting_less``).

Measured on the 2-core VM (6 December 2026), where both cost more than the work on large models:
- NumPy asks the kernel for transparent huge pages for every array of 4 MB or more (``madvise``); there, the first
  touch of 1.3 GB of such pages took 5.8 s against 0.44 s in ordinary pages (and both 0.04 s to write again), so
  the command sets ``NUMPY_MADVISE_HUGEPAGE=0`` before NumPy is imported, unless the environment sets it (the
  processes it starts, a sweep's workers, inherit it);
- glibc gives allocations above 32 MB fresh mappings and returns them to the system when freed, so a PyTorch model
  whose tensors are hundreds of MB (pfl-research's CIFAR-10 CNN with 50 workers a round) faults in every page of
  them at every step: 2.5-3 s a round against 1.0 s when freed memory is kept (``keep_freed_memory``, called
  when a run's PyTorch model is loaded).

and measured on the same VM (7 December 2026), where Python's cyclic garbage collector took a fifth of a warm
``signsim run`` (median of 15 runs, in turn: 1.15 s as it was, 0.90 s with both settings below; the import of
typer, numba, numpy and scipy 0.37 s):
- the imports (Numba's types and registries, SciPy, Typer) leave about 140,000 objects the collector tracks, none
  of them garbage; at Python's thresholds (700, 10, 10) it traversed them again and again while they loaded (0.12 s
  in 316 collections), so the command collects its youngest generation every ``GC_THRESHOLDS[0]`` allocations
  instead (``collect_less``, from ``command_process``), as mypy's command does; a run's own cyclic garbage is still
  collected. Numba's compiler allocates as much: in a first ``signsim run`` from an empty kernel cache the collector
  took 3.9 s of 29 s (2,473 collections) at Python's thresholds, 1.3 s (15) at these, so signsim's own compiling
  processes (``engine.split_compile``'s helper, ``engine.warm``'s background compile) take them too;
- at the interpreter's exit the collector traversed them all once more (0.28-0.47 s from the last exit handler to
  the process's end), so the command, its work done and its output written, moves them to the collector's
  permanent generation (``leaving``: ``gc.freeze``), which no collection traverses (0.07-0.09 s then); exit
  handlers still run.
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
from collections.abc import Iterator

#: NumPy's switch for its huge-page advice (read once, when NumPy is imported)
HUGEPAGE_ENV = "NUMPY_MADVISE_HUGEPAGE"
#: glibc's mallopt parameters (malloc.h) and the value both take here: the largest an int holds (2 GiB - 1)
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
KEEP_BELOW = 2**31 - 1
#: the command's garbage-collection thresholds (``gc.set_threshold``; Python's default is (700, 10, 10))
GC_THRESHOLDS = (100_000, 50, 100)

_state = {"command": False, "kept": None}


def command_process() -> None:
    """This process is the signsim command: no huge-page advice from NumPy (unless the environment says), and
    ``keep_freed_memory`` acts. Called by the command line before anything imports NumPy."""
    _state["command"] = True
    os.environ.setdefault(HUGEPAGE_ENV, "0")
    collect_less()


def collect_less() -> None:
    """This process is one of signsim's own (the command, a helper that compiles kernels): the cyclic garbage
    collector's thresholds are ``GC_THRESHOLDS`` (see above); every collection still runs, less often."""
    gc.set_threshold(*GC_THRESHOLDS)


#: ``collecting_less``'s calls in progress (in any thread) and the thresholds the first of them found
_calls = {"depth": 0, "found": None, "set": None}
_calls_lock = threading.Lock()


@contextlib.contextmanager
def collecting_less() -> Iterator[None]:
    """signsim's work in a program or notebook that imports it (``api.execute``: a run, a check, a diagnostic): while
    it lasts, the collector's thresholds are at least ``GC_THRESHOLDS``, as in the command (its imports of Numba and
    torch, its compiles and its rounds allocate as above); when the last call in progress ends (calls from several
    threads at once count as one), the program's own thresholds come back, unless something changed them during the
    call. In a script running signSGD on a PyTorch MLP for 500 iterations (``benchmarks/bench_torch.py``'s digits
    model, 8 workers, kernels cached; 4.0-4.6 s in all), the collector took 0.61-0.70 s at Python's thresholds (816
    collections), 0.37-0.57 s with this around the call (47 collections, one of them 0.23 s as the program's
    thresholds came back: the objects the call left, torch's among them, traversed once), 7 December 2026; a first
    run compiling its kernels spends in the collector what the command does (above)."""
    with _calls_lock:
        if _calls["depth"] == 0:
            found = gc.get_threshold()
            _calls["found"] = found
            _calls["set"] = tuple(max(a, b) for a, b in zip(found, GC_THRESHOLDS, strict=True))
            gc.set_threshold(*_calls["set"])
        _calls["depth"] += 1
    try:
        yield
    finally:
        with _calls_lock:
            _calls["depth"] -= 1
            if _calls["depth"] == 0 and gc.get_threshold() == _calls["set"]:
                gc.set_threshold(*_calls["found"])


def leaving() -> None:
    """The command's work is done and its output written: every object alive is moved to the collector's
    permanent generation (``gc.freeze``), so that the interpreter's exit does not traverse them again. Only in
    the command's own process (a program or test calling ``cli.main`` keeps its collector as it was)."""
    if _state["command"]:
        gc.freeze()


def keep_freed_memory() -> bool:
    """In the signsim command's process with glibc: memory freed is kept for reuse (allocations up to 2 GiB come
    from the heap, which is not trimmed), as ``MALLOC_MMAP_THRESHOLD_`` and ``MALLOC_TRIM_THRESHOLD_`` would set at
    start-up. The heap then stays at the process's peak, which a command that ends after its run can afford; not a
    sweep's pool worker (a child process, which runs one job after another). Returns whether the settings apply
    (elsewhere: nothing changed); tried once per process."""
    if _state["kept"] is None:
        _state["kept"] = False
        if _state["command"] and _glibc():
            from multiprocessing import parent_process

            if parent_process() is None:
                import ctypes

                libc = ctypes.CDLL(None)
                mapped = libc.mallopt(M_MMAP_THRESHOLD, KEEP_BELOW)
                trimmed = libc.mallopt(M_TRIM_THRESHOLD, KEEP_BELOW)
                _state["kept"] = bool(mapped and trimmed)
    return _state["kept"]


def _glibc() -> bool:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc")
    except (ValueError, OSError, AttributeError):  # (not a GNU system)
        return False
