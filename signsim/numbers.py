"""Numbers written as text (options, stage specs, ``run:K``, data and constant specs): only the plain ASCII forms
the docs show. Python's ``int`` and ``float`` also take ``1_000`` and digits of other scripts (``٥``, ``５``),
which no option documents; those are refused here so that one spelling means one value everywhere."""

from __future__ import annotations

import math
import re

#: the largest value an integer option or spec may take (sizes index arrays; iterations and seeds are counters)
MAX_SIZE = 2**31 - 1
#: the spaces a number's text may carry around it: ASCII only (``str.strip()`` would also take a no-break space)
SPACE = " \t\n\r\f\v"
#: a decimal integer, optionally signed: 12, -3, +7
INT = re.compile(r"[+-]?[0-9]+")
#: a decimal number, optionally with an exponent, or inf / nan (whose ranges are checked by the caller)
FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:inf|infinity|nan)",
                   re.IGNORECASE)


def to_int(text: str) -> int:
    """``int(text)`` for a plain ASCII integer (surrounding spaces allowed); ValueError otherwise."""
    t = str(text).strip(SPACE)
    if not INT.fullmatch(t):
        raise ValueError(f"not a plain integer: {text!r}")
    return int(t)


def to_float(text: str) -> float:
    """``float(text)`` for a plain ASCII number (surrounding spaces allowed); ValueError otherwise (OverflowError
    never: 1e400 is inf, for the caller's range check)."""
    t = str(text).strip(SPACE)
    if not FLOAT.fullmatch(t):
        raise ValueError(f"not a plain number: {text!r}")
    return float(t)


#: the relative error of a share's product with a count that ``floor_share`` forgives: 4 units in the last place
#: (the share's own decimal-to-binary rounding and the product's, each at most half of one)
SHARE_SLACK = 4 * 2.0 ** -52


def ceil_share(share, count):
    """ceil(share * count) for a share written in decimal (``floor_share``'s rule the other way: 0.3 of 10 is 3,
    although 0.3 * 10 is 3.0000000000000004 in floating point)."""
    p = share * count
    return int(math.ceil(p - abs(p) * SHARE_SLACK))


def floor_share(share, count):
    """floor(share * count) for a share written in decimal, as the user means it (docs/theory.md §12): the share
    0.29 of 100 is 29, although 0.29 * 100 is 28.999999999999996 in floating point. A product within
    ``SHARE_SLACK`` (relative) below an integer counts as that integer. Plain arithmetic, so that the compiled
    kernels (``trimmed``) call the same rule as ``--participation``."""
    p = share * count
    return int(math.floor(p + abs(p) * SHARE_SLACK))
