"""Data handed over in memory by the Python API: ``signsim.run(data=(X, y))``.

The arrays are registered under ``memory:<digest>`` (a hash of their contents), which is what the run's
config records; the registry lives in this Python process only, so a config naming ``memory:...`` cannot be
rerun from the command line or in a sweep's worker processes."""

from __future__ import annotations

import hashlib

import numpy as np

from signsim.data.base import Dataset, DataSource, checked
from signsim.errors import InputError

PREFIX = "memory:"
_ARRAYS: dict[str, tuple[np.ndarray, np.ndarray]] = {}


def register(X, y, where: str = "data") -> str:
    """Check ``(X, y)`` (a NumPy array or a SciPy sparse matrix, and labels) and return the ``--data`` value
    naming them. Sparse matrices are densified, as the file loaders do."""
    if hasattr(X, "toarray") and hasattr(X, "nnz"):  # scipy.sparse, without importing it
        X = X.toarray()
    try:
        ds = checked("memory", np.asarray(X), np.asarray(y), where)
    except (TypeError, ValueError) as e:
        if isinstance(e, InputError):
            raise
        raise InputError(f"{where}: expected numeric arrays X (n x p) and y (n) ({' '.join(str(e).split())})") \
            from None
    X, y = np.array(ds.X, order="C", copy=True), np.array(ds.y, copy=True)  # later edits by the caller do not leak in
    h = hashlib.sha1()
    h.update(np.array(X.shape, dtype=np.int64).tobytes())
    h.update(X.tobytes())
    h.update(y.tobytes())
    spec = PREFIX + h.hexdigest()[:16]
    _ARRAYS[spec] = (X, y)
    return spec


def load(spec: str) -> Dataset:
    if spec not in _ARRAYS:
        raise InputError(f"--data {spec}: in-memory data exist only in the Python process that passed them "
                         "(signsim.run(data=(X, y))); save them as .npz to use them elsewhere")
    X, y = _ARRAYS[spec]
    return Dataset(spec, X, y)


SOURCE = DataSource("memory", "arrays passed to the Python API: signsim.run(data=(X, y))",
                    lambda spec: spec.startswith(PREFIX), load)
