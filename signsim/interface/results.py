"""Results documents: JSON-safe conversion and atomic writes."""

from __future__ import annotations

import json
import math
import sys
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


#: the deepest nesting of arrays and objects a results file may hold (signsim writes fewer than 10 levels)
MAX_JSON_DEPTH = 100


def parse_json(text: str, where: str) -> Any:
    """``text`` parsed as JSON; anything that is not a JSON document signsim could have written (invalid
    syntax, nesting deeper than MAX_JSON_DEPTH, an integer longer than Python converts) raises one-line
    InputError prefixed by ``where``. Every results file signsim reads goes through here."""
    try:
        doc = json.loads(text)
    except RecursionError:
        raise InputError(f"{where}: not a JSON results file (nested deeper than {MAX_JSON_DEPTH} levels)") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{where}: not a JSON results file ({' '.join(str(e).split())[:200]})") from None
    except ValueError:  # an integer of more digits than Python converts to int
        raise InputError(f"{where}: not a JSON results file (a number of more than {sys.get_int_max_str_digits()} "
                         "digits)") from None
    stack = [(doc, 1)]
    while stack:
        obj, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise InputError(f"{where}: not a JSON results file (nested deeper than {MAX_JSON_DEPTH} levels)")
        children = obj.values() if isinstance(obj, dict) else obj
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return doc


def read_json(path: Path, where: str, per_byte: float | None = None) -> Any:
    """The parsed JSON file (``parse_json``); a missing, unreadable, non-UTF-8 or invalid file raises
    InputError prefixed by ``where`` (and one the memory cannot parse, ``paths.input_file``'s ``per_byte``)."""
    from signsim.paths import PARSE_BYTES, input_file

    input_file(path, where, PARSE_BYTES if per_byte is None else per_byte)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{where}: not a JSON results file (not UTF-8 text: {e.reason})") from None
    except OSError as e:
        raise InputError(f"{where}: cannot read it ({e.strerror or e})") from None
    return parse_json(text, where)


def load_results(path: str | Path, command: str, option: str) -> dict[str, Any]:
    """Read a results JSON written by ``signsim <command>``; bad files raise InputError naming them."""
    path = Path(path)
    doc = read_json(path, f"{option} {path}")
    if not isinstance(doc, dict) or doc.get("command") != command or not isinstance(doc.get("config"), dict):
        kind = doc.get("command") if isinstance(doc, dict) else type(doc).__name__
        raise InputError(f"{option} {path}: expected the results of 'signsim {command}', found {kind!r}")
    return doc
