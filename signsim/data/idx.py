"""MNIST IDX pairs: an images file (magic 0x00000803, unsigned bytes, n x rows x cols) and a labels file
(0x00000801, n), plain or gzip. ``--data IMAGES,LABELS``, or just the images file when the labels file is
named alike (``...-images-idx3-ubyte[.gz]`` -> ``...-labels-idx1-ubyte[.gz]``). Pixels are scaled to [0, 1]."""

from pathlib import Path

import numpy as np

from signsim.data.base import Dataset, DataSource, checked
from signsim.data.files import check_dense, existing, read_bytes
from signsim.errors import InputError

UBYTE = 0x08


def read_idx(path: Path, spec: str, ndim: int) -> np.ndarray:
    raw = read_bytes(path, spec)
    where = f"--data {spec}: {path.name}"
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise InputError(f"{where}: not an IDX file (bad magic number)")
    if raw[2] != UBYTE:
        raise InputError(f"{where}: IDX element type 0x{raw[2]:02x} is not supported (only unsigned bytes)")
    if raw[3] != ndim:
        raise InputError(f"{where}: expected {ndim} dimensions, the header says {raw[3]}")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise InputError(f"{where}: truncated header")
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    if dims[0] == 0:
        raise InputError(f"{where}: holds zero items")
    if any(n == 0 for n in dims):
        raise InputError(f"{where}: an item has zero size (dimensions {dims})")
    size = 1
    for n in dims:
        size *= n
    if len(raw) - header != size:
        raise InputError(f"{where}: header promises {size} values, the file holds {len(raw) - header}")
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


def pair(spec: str) -> tuple[str, str]:
    if "," in spec:
        images, labels = spec.split(",", 1)
        return images, labels
    name = Path(spec).name
    if "images-idx3" not in name:
        raise InputError(f"--data {spec}: name the labels file too: --data IMAGES,LABELS")
    return spec, str(Path(spec).with_name(name.replace("images-idx3", "labels-idx1")))


def load(spec: str) -> Dataset:
    images, labels = pair(spec)
    X = read_idx(existing(spec, images), spec, 3)
    y = read_idx(existing(spec, labels), spec, 1)
    check_dense(spec, (X.shape[0], X.shape[1] * X.shape[2]), what="the images as floats")
    return checked(Path(images).name, X.reshape(X.shape[0], -1) / 255.0, y, f"--data {spec}")


def matches(spec: str) -> bool:
    return "idx3" in spec or ("," in spec and "idx" in spec)


SOURCE = DataSource("idx", "MNIST IDX image/label pair: IMAGES,LABELS or *-images-idx3-ubyte[.gz]", matches, load)
