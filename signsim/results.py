"""Results documents: JSON-safe conversion and atomic writes."""

from __future__ import annotations

import json
import math
import os
import tempfile
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


def write_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a reader sees either the old file or the whole new one:
    a temporary file in the same directory, flushed to disk, then renamed over the target."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise InputError(f"--out {path}: cannot write there ({e.strerror})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_json(path: Path, where: str) -> Any:
    """The parsed JSON file; a missing, non-UTF-8 or invalid file raises InputError prefixed by ``where``."""
    if not path.is_file():
        raise InputError(f"{where}: no such file")
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
