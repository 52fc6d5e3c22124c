"""NumPy ``.npz`` archives with arrays ``X`` (n x p) and ``y`` (n). Loaded with allow_pickle=False; each
member's header is checked (a real array, of the size the archive holds) before anything is allocated."""

import zipfile
import zlib

import numpy as np

from signsim.data.base import Dataset, DataSource, checked, is_real
from signsim.data.files import check_dense, existing
from signsim.errors import InputError


def _header(archive: zipfile.ZipFile, key: str, spec: str) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype of member ``key`` from its .npy header; InputError if it is not an array."""
    from numpy.lib import format as npformat

    name = f"{key}.npy" if f"{key}.npy" in archive.namelist() else key
    info = archive.getinfo(name)
    with archive.open(info) as f:
        try:
            version = npformat.read_magic(f)
            if version == (1, 0):
                shape, _, dtype = npformat.read_array_header_1_0(f)
            else:
                shape, _, dtype = npformat.read_array_header_2_0(f)
        except Exception as e:  # noqa: BLE001 - any way a hostile header fails (ValueError, TokenError, ...)
            raise InputError(f"--data {spec}: member '{name}' is not a NumPy array ({' '.join(str(e).split())})") \
                from None
    if dtype.hasobject:
        raise InputError(f"--data {spec}: array '{key}' holds Python objects (not loaded)")
    count = 1
    for n in shape:
        count *= n
    if count * dtype.itemsize > info.file_size:
        raise InputError(f"--data {spec}: array '{key}' claims shape {shape} but its member holds only "
                         f"{info.file_size} bytes")
    return shape, dtype


def load(spec: str) -> Dataset:
    path = existing(spec)
    with open(path, "rb") as f:
        magic = f.read(4)
    if magic != b"PK\x03\x04":
        what = "a .npy array, not an archive" if magic == b"\x93NUM" else "not a zip archive"
        raise InputError(f"--data {spec}: not a .npz archive ({what})")
    try:
        with zipfile.ZipFile(path) as zf:
            names = {n.removesuffix(".npy") for n in zf.namelist()}
            missing = [k for k in ("X", "y") if k not in names]
            if missing:
                raise InputError(f"--data {spec}: missing array '{missing[0]}' (found: {', '.join(sorted(names))})")
            for key in ("X", "y"):
                shape, _ = _header(zf, key, spec)
                check_dense(spec, shape, what=f"array '{key}'")
        with np.load(path, allow_pickle=False) as archive:
            X, y = archive["X"], archive["y"]
    except InputError:
        raise
    except (ValueError, OSError, zipfile.BadZipFile, EOFError, zlib.error, KeyError, NotImplementedError,
            RuntimeError, SyntaxError) as e:
        raise InputError(f"--data {spec}: not a readable .npz archive ({' '.join(str(e).split())})") from None
    for key, arr in (("X", X), ("y", y)):
        if not isinstance(arr, np.ndarray):
            raise InputError(f"--data {spec}: member '{key}' is not a NumPy array")
        if np.iscomplexobj(arr):
            raise InputError(f"--data {spec}: array '{key}' is complex; expected real numbers")
        if not is_real(arr.dtype):
            raise InputError(f"--data {spec}: array '{key}' is not numeric (dtype {arr.dtype}); expected real numbers")
    return checked(path.name, X, y, f"--data {spec}")


SOURCE = DataSource("npz", "NumPy archive with arrays X and y: FILE.npz", lambda s: s.lower().endswith(".npz"), load)
