"""From a loaded data set to training and test arrays: held-out split, standardization with the training
set's statistics, an intercept column, and replication of the training set."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from signsim.data.base import Dataset
from signsim.errors import InputError


@dataclass
class Prepared:
    name: str
    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray

    @property
    def n_train(self) -> int:
        return self.X_train.shape[0]

    @property
    def features(self) -> int:
        return self.X_train.shape[1]


def prepare(ds: Dataset, test_fraction: float, standardize: bool, intercept: bool, replicate: int,
            rng: np.random.Generator, dtype: str = "float64") -> Prepared:
    """Shuffle, hold out round(n * test_fraction) samples, standardize features to mean 0 and standard
    deviation 1 on the training part (constant features are only centred), append a column of ones, and
    repeat the training set ``replicate`` times (every sample r times: Delta_S / r, docs/theory.md §6).
    ``dtype`` is that of the matrix the problem packs from the result (the memory check counts it)."""
    if not 0 <= test_fraction < 1:
        raise InputError(f"--test-fraction {test_fraction}: must lie in [0, 1)")
    if replicate < 1:
        raise InputError(f"--replicate {replicate}: must be at least 1")
    from signsim.resources import require

    features = ds.X.shape[1] + int(intercept)
    from signsim.resources import data_bytes

    require(data_bytes((replicate + 1) * ds.n * features, dtype),
            f"--replicate {replicate} of {ds.name} ({ds.n} samples x {features} features)",
            "reduce --replicate or use a smaller data set")
    order = rng.permutation(ds.n)
    n_test = int(round(ds.n * test_fraction))
    if ds.n - n_test < 1:
        raise InputError(f"--test-fraction {test_fraction}: leaves no training sample out of {ds.n}")
    test, train = order[:n_test], np.sort(order[n_test:])
    X_train, X_test = ds.X[train], ds.X[test]
    if standardize:
        mean = X_train.mean(axis=0)
        std = X_train.std(axis=0)
        std[std == 0] = 1.0
        X_train, X_test = (X_train - mean) / std, (X_test - mean) / std
    if intercept:
        X_train = np.hstack([X_train, np.ones((X_train.shape[0], 1))])
        X_test = np.hstack([X_test, np.ones((X_test.shape[0], 1))])
    y_train = ds.y[train]
    if replicate > 1:
        X_train, y_train = np.tile(X_train, (replicate, 1)), np.tile(y_train, replicate)
    return Prepared(ds.name, np.ascontiguousarray(X_train), y_train, np.ascontiguousarray(X_test), ds.y[test])
