"""Numbers written as text (options, stage specs, ``run:K``, data and constant specs): only the plain ASCII forms
the docs show. Python's ``int`` and ``float`` also take ``1_000`` and digits of other scripts (``٥``, ``５``),
which no option documents; those are refused here so that one spelling means one value everywhere."""

from __future__ import annotations

import re

#: a decimal integer, optionally signed: 12, -3, +7
INT = re.compile(r"[+-]?[0-9]+")
#: a decimal number, optionally with an exponent, or inf / nan (whose ranges are checked by the caller)
FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:inf|infinity|nan)",
                   re.IGNORECASE)


def to_int(text: str) -> int:
    """``int(text)`` for a plain ASCII integer (surrounding spaces allowed); ValueError otherwise."""
    t = str(text).strip()
    if not INT.fullmatch(t):
        raise ValueError(f"not a plain integer: {text!r}")
    return int(t)


def to_float(text: str) -> float:
    """``float(text)`` for a plain ASCII number (surrounding spaces allowed); ValueError otherwise (OverflowError
    never: 1e400 is inf, for the caller's range check)."""
    t = str(text).strip()
    if not FLOAT.fullmatch(t):
        raise ValueError(f"not a plain number: {text!r}")
    return float(t)
