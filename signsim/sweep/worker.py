"""What an executor runs for one task: a plain function of plain data, importable by worker processes. The run
itself is the ``runner`` the sweep command hands down (``signsim.commands.run.run``): the sweep machinery does
not import the commands."""

from __future__ import annotations

import os
import signal
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any


def failed(task: dict[str, Any], error: str, status: str = "failed") -> dict[str, Any]:
    """The document of a run that produced no results (``failed``, or ``interrupted`` before it reported)."""
    from signsim import __version__

    doc = {"signsim_version": __version__, "command": "run", "config": task["config"], "status": status,
           "error": error}
    if status != "failed":
        doc.update(history=[], final={}, tracks={}, warnings=[])
    return doc


def execute(task: dict[str, Any], runner: Callable[[Any], dict[str, Any]]) -> dict[str, Any] | None:
    """Run one configured run (``runner(resolved config)``, a module-level function so that it pickles by
    name) and return its results document; a run that raises returns a document with
    status ``failed`` and the error instead (the sweep goes on). With ``marker_dir`` in the task, a file
    ``<marker_dir>/<index>`` holds this process's id from the run's start until the sweep process has its result
    (so that the sweep can tell which run a dead worker process was running, and which runs began). A pool worker
    that was already interrupted starts nothing more and returns None (the run stays missing)."""
    from signsim.interface import interrupts

    if not task.get("marker_dir"):  # not a pool worker's (a Dask worker's, or a run in this process)
        return _execute(task, runner, None)
    with interrupts.worker_run() as interrupted:
        if interrupted:
            return None
        return _execute(task, runner, Path(task["marker_dir"]) / str(task["index"]))


def _execute(task: dict[str, Any], runner: Callable[[Any], dict[str, Any]],
             marker: Path | None) -> dict[str, Any] | None:
    from signsim.errors import InputError

    if marker is not None:
        marker.write_text(str(os.getpid()))
    try:
        if task.get("error"):
            return failed(task, task["error"])
        if os.environ.get("SIGNSIM_CRASH_RUN") == str(task["index"]):  # a testing aid: this worker dies
            os.kill(os.getpid(), signal.SIGKILL)
        from signsim.interface.config import mark_eval_every_derived, mark_lr_theory, resolve

        cfg = resolve(task["config"])
        if (task.get("extra") or {}).get("eval_every_derived"):
            mark_eval_every_derived(cfg)
        if (task.get("extra") or {}).get("lr_theory"):
            mark_lr_theory(cfg, task["extra"]["lr_theory"])
        return runner(cfg)
    except InputError as e:
        return failed(task, str(e))
    except MemoryError:
        return failed(task, "MemoryError: not enough memory for this run")
    except Exception as e:  # noqa: BLE001 - recorded, not hidden: the sweep must go on
        last = traceback.extract_tb(e.__traceback__)[-1]
        return failed(task, f"{type(e).__name__}: {e} ({last.filename}:{last.lineno})")
    # the marker stays until the sweep process has the result (``LocalExecutor``): removed here, a result still on
    # its way back would look like a run that never began
