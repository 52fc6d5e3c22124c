"""What an executor runs for one task: a plain function of plain data, importable by worker processes."""

from __future__ import annotations

import traceback
from typing import Any


def execute(task: dict[str, Any]) -> dict[str, Any]:
    """Run one configured run and return its results document; a run that raises returns a document with
    status ``failed`` and the error instead (the sweep goes on)."""
    from signsim import __version__
    from signsim.errors import InputError

    base = {"signsim_version": __version__, "command": "run", "config": task["config"]}
    if task.get("error"):
        return {**base, "status": "failed", "error": task["error"]}
    try:
        from signsim.commands.run import run
        from signsim.config import resolve

        return run(resolve(task["config"]))
    except InputError as e:
        return {**base, "status": "failed", "error": str(e)}
    except Exception as e:  # noqa: BLE001 - recorded, not hidden: the sweep must go on
        last = traceback.extract_tb(e.__traceback__)[-1]
        return {**base, "status": "failed", "error": f"{type(e).__name__}: {e} ({last.filename}:{last.lineno})"}
