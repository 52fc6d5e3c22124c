"""The syntax of the transformations of per-sample gradients (``diversity --transform`` and the heuristics
experiment's ``transforms``; their mathematics is in ``signsim.diagnostics.transforms``, docs/theory.md §10.4).
Pure Python: a config file's [experiment] table is checked without loading the diagnostics."""

from __future__ import annotations

import math
from dataclasses import dataclass

from signsim.errors import InputError
from signsim.numbers import to_float

#: the most levels ``qsgd:S`` may have (the level is a 32-bit integer)
MAX_LEVELS = 2**31 - 1

NAMES = ("dropout", "langevin", "sign", "sto-sign", "qsgd", "natural")


@dataclass(frozen=True)
class Transform:
    name: str
    param: float | None = None
    sign_zero: str = "random"

    @property
    def spec(self) -> str:
        return self.name if self.param is None else f"{self.name}:{self.param:g}"


def parse(spec: str, sign_zero: str = "random") -> Transform:
    """``dropout:p`` (0 <= p < 1), ``langevin:s`` (s >= 0 finite), ``sign``, ``sto-sign``,
    ``qsgd:S`` (S an integer, 1 <= S <= 2^31 - 1), ``natural``; InputError naming ``--transform`` otherwise."""
    name, *args = str(spec).strip().split(":")
    where = f"--transform {spec}"
    if name not in NAMES:
        raise InputError(f"{where}: unknown transformation; choose from dropout:p, langevin:s, sign, sto-sign, "
                         "qsgd:S, natural")
    needs = name in ("dropout", "langevin", "qsgd")
    if len(args) != int(needs):
        form = {"dropout": "dropout:p", "langevin": "langevin:s", "qsgd": "qsgd:S"}.get(name, name)
        raise InputError(f"{where}: expected the form {form}")
    if not needs:
        return Transform(name, None, sign_zero)
    try:
        p = to_float(args[0])
    except ValueError:
        raise InputError(f"{where}: '{args[0]}' is not a number") from None
    if name == "dropout" and not 0 <= p < 1:
        raise InputError(f"{where}: the drop probability must lie in [0, 1)")
    if name == "langevin" and not (math.isfinite(p) and p >= 0):
        raise InputError(f"{where}: the noise scale must be a finite number >= 0")
    if name == "qsgd" and not (1 <= p <= MAX_LEVELS and p == int(p)):
        raise InputError(f"{where}: the number of levels must be an integer between 1 and {MAX_LEVELS} (2^31 - 1)")
    return Transform(name, p, sign_zero)
