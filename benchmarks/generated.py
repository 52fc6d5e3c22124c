"""The generated logistic-regression data the data benchmarks share (imported by the benchmark scripts)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: options that hand the generated data to signsim as they are (no standardization, intercept or held-out set)
RAW = dict(problem="logistic", standardize=False, intercept=False, test_fraction=0.0)


def logistic_data(n: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """X ~ N(0, 1)^{n x d}; y = 1 where X w + noise > 0 for a random w, else 0."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X @ rng.normal(size=d) + rng.normal(size=n) > 0, 1.0, 0.0)
    return X, y


def write_npz(folder: str | Path, X: np.ndarray, y: np.ndarray) -> str:
    path = Path(folder) / "gen.npz"
    np.savez(path, X=X, y=y)
    return str(path)
