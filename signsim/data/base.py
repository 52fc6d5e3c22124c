"""A data set as loaded: features X (n x p) and labels y (n), both float64, before any preparation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from signsim.errors import InputError


@dataclass
class Dataset:
    name: str
    X: np.ndarray
    y: np.ndarray

    @property
    def n(self) -> int:
        return self.X.shape[0]


@dataclass(frozen=True)
class DataSource:
    """A registered way of reading data: ``matches(spec)`` says whether it reads ``spec``; ``load`` reads it."""

    name: str
    summary: str
    matches: Callable[[str], bool]
    load: Callable[[str], Dataset]


#: the array kinds that hold real numbers: booleans, signed and unsigned integers, floats (not complex numbers,
#: timedelta64 or datetime64, which NumPy also counts as numbers or converts to them)
REAL_KINDS = "biuf"


def is_real(dtype) -> bool:
    """An array of this dtype holds real numbers (``REAL_KINDS``)."""
    return np.dtype(dtype).kind in REAL_KINDS


def checked(name: str, X, y, where: str) -> Dataset:
    """The checks every loader ends with: 2-d X, 1-d y of the same length, not empty, all finite."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2:
        raise InputError(f"{where}: X must be a 2-d array, got {X.ndim} dimensions")
    if y.ndim != 1:
        raise InputError(f"{where}: y must be a 1-d array, got {y.ndim} dimensions")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise InputError(f"{where}: no data (X has shape {X.shape})")
    if X.shape[0] != y.shape[0]:
        raise InputError(f"{where}: {X.shape[0]} rows of X but {y.shape[0]} labels")
    bad = np.flatnonzero(~np.isfinite(X).all(axis=1))
    if bad.size:
        raise InputError(f"{where}: non-finite feature in sample {bad[0]} (row {bad[0] + 1})")
    bad = np.flatnonzero(~np.isfinite(y))
    if bad.size:
        raise InputError(f"{where}: non-finite label in sample {bad[0]} (row {bad[0] + 1})")
    return Dataset(name, X, y)
