"""What the generated data sets share (``synthetic:glm``, ``synthetic:sparse``): the ``PREFIX[:KEY=VALUE]...``
grammar of their specs and the labels drawn from a linear predictor z = X w* (docs/theory.md §5)."""

from __future__ import annotations

import numpy as np

from signsim.errors import InputError
from signsim.numbers import to_float, to_int


def key_values(spec: str, prefix: str, defaults: dict, choices: dict[str, tuple[str, ...]],
               ints: dict[str, tuple[int, int]], unknown: str) -> dict:
    """``defaults`` updated by the ``KEY=VALUE`` parts of ``spec`` (after ``prefix``): a key of ``choices`` takes
    one of its words, a key of ``ints`` an integer in its range, ``noise`` a finite number >= 0. InputError naming
    the bad part; ``unknown`` when ``spec`` is not of the form at all."""
    where = f"--data {spec}"
    if not (spec == prefix or spec.startswith(prefix + ":")):
        raise InputError(f"{where}: {unknown}")
    out = dict(defaults)
    seen = set()
    for part in spec[len(prefix) + 1:].split(":") if spec != prefix else []:
        key, sep, value = part.partition("=")
        if not sep or key not in defaults:
            raise InputError(f"{where}: '{part}' is not KEY=VALUE with KEY one of {', '.join(defaults)}")
        if key in seen:
            raise InputError(f"{where}: '{key}' is given twice")
        seen.add(key)
        out[key] = _value(key, value, where, choices, ints)
    return out


def _value(key: str, value: str, where: str, choices: dict, ints: dict):
    if key in choices:
        if value not in choices[key]:
            raise InputError(f"{where}: {key}={value}; choose from {', '.join(choices[key])}")
        return value
    if key == "noise":
        try:
            v = to_float(value)
        except ValueError:
            v = float("nan")
        if not (np.isfinite(v) and v >= 0):
            raise InputError(f"{where}: noise={value} must be a finite number >= 0")
        return v
    lo, hi = ints[key]
    try:
        v = to_int(value)
    except ValueError:
        raise InputError(f"{where}: {key}={value} must be an integer") from None
    if not lo <= v <= hi:
        raise InputError(f"{where}: {key}={value} must lie between {lo} and {hi:,}")
    return v


def labels(rng: np.random.Generator, z: np.ndarray, kind: str, noise: float) -> np.ndarray:
    """Labels from the linear predictor z: 0/1 with P(1) = 1 / (1 + e^{-z}) (logistic), or z + noise N(0, 1)
    (linear); one draw per sample from ``rng``."""
    n = z.shape[0]
    if kind == "logistic":
        return (rng.random(n) < 1.0 / (1.0 + np.exp(-z))).astype(np.float64)
    return z + noise * rng.standard_normal(n)
