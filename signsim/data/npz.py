"""NumPy ``.npz`` archives with arrays ``X`` (n x p) and ``y`` (n). Loaded with allow_pickle=False."""

import zipfile

import numpy as np

from signsim.data.base import Dataset, DataSource, checked
from signsim.data.files import existing
from signsim.errors import InputError


def load(spec: str) -> Dataset:
    path = existing(spec)
    try:
        with np.load(path, allow_pickle=False) as archive:
            missing = [k for k in ("X", "y") if k not in archive.files]
            if missing:
                raise InputError(f"--data {spec}: missing array '{missing[0]}' (found: {', '.join(archive.files)})")
            X, y = archive["X"], archive["y"]
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as e:
        raise InputError(f"--data {spec}: not a readable .npz archive ({' '.join(str(e).split())})") from None
    for key, arr in (("X", X), ("y", y)):
        if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
            raise InputError(f"--data {spec}: array '{key}' is not numeric (dtype {arr.dtype})")
    return checked(path.name, X, y, f"--data {spec}")


SOURCE = DataSource("npz", "NumPy archive with arrays X and y: FILE.npz", lambda s: s.lower().endswith(".npz"), load)
