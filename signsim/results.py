"""Results documents: JSON-safe conversion and atomic writes."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from signsim.errors import InputError


def jsonable(obj: Any) -> Any:
    """Plain JSON types; non-finite floats become null (standard JSON has no NaN or inf)."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        return float(obj) if math.isfinite(obj) else None
    return obj


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(jsonable(doc), indent=2, allow_nan=False)


def write_atomic(path: str | Path, text: str, option: str = "--out") -> None:
    """Write ``text`` to ``path`` atomically (see ``signsim.paths``)."""
    from signsim.paths import write_atomic as write

    write(path, text, option)


def read_json(path: Path, where: str) -> Any:
    """The parsed JSON file; a missing, non-UTF-8 or invalid file raises InputError prefixed by ``where``."""
    from signsim.paths import input_file

    input_file(path, where)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{where}: not a JSON results file ({e})") from None


def load_results(path: str | Path, command: str, option: str) -> dict[str, Any]:
    """Read a results JSON written by ``signsim <command>``; bad files raise InputError naming them."""
    path = Path(path)
    doc = read_json(path, f"{option} {path}")
    if not isinstance(doc, dict) or doc.get("command") != command or not isinstance(doc.get("config"), dict):
        kind = doc.get("command") if isinstance(doc, dict) else type(doc).__name__
        raise InputError(f"{option} {path}: expected the results of 'signsim {command}', found {kind!r}")
    return doc
