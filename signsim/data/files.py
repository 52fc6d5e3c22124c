"""Helpers shared by the file loaders: the file must be a readable regular file, gzip is undone with a size
limit (no decompression bomb), and nothing dense is allocated before its size is checked."""

import zlib
from pathlib import Path

from signsim.errors import InputError


def existing(spec: str, name: str | None = None) -> Path:
    """The path ``name`` (default ``spec``) when it is a readable regular file; errors name ``--data spec``."""
    from signsim.paths import input_file

    target = spec if name is None else name
    where = f"--data {spec}" if name is None or name == spec else f"--data {spec}: {name}"
    if name is None and not Path(target).exists() and not Path(target).is_symlink():
        from signsim.data.builtin import NAMES

        raise InputError(f"{where}: no such file (the data sets shipped with signsim: "
                         f"{', '.join(f'builtin:{n}' for n in NAMES)}; 'signsim list' names every data source)")
    return input_file(target, where, per_byte=0)  # (each reader checks the memory its reading takes)


def check_dense(spec: str, shape: tuple[int, ...], itemsize: int = 8, what: str = "the data") -> None:
    """InputError when a dense array of ``shape`` would not fit in the memory available."""
    from signsim.resources import require

    size = itemsize
    for n in shape:
        size *= int(n)
    require(size, f"--data {spec}: {what} ({' x '.join(str(int(n)) for n in shape)} values)",
            "use a smaller data set")


def check_file_size(spec: str, path: Path, factor: float) -> None:
    """InputError when reading ``path`` (about ``factor`` bytes of memory per byte of file) cannot fit."""
    from signsim.resources import require

    require(path.stat().st_size * factor, f"--data {spec}: reading {path.name}", "use a smaller file")


def read_bytes(path: Path, spec: str) -> bytes:
    """The file's bytes, gunzipped when it starts with the gzip magic number (at most the memory available)."""
    from signsim.memory import available_bytes

    check_file_size(spec, path, 2)
    raw = path.read_bytes()
    if raw[:2] != b"\x1f\x8b":
        return raw
    limit = max(1 << 20, available_bytes() // 4)
    out = []
    total = 0
    data = raw
    try:
        while data:
            d = zlib.decompressobj(zlib.MAX_WBITS | 16)
            while True:
                piece = d.decompress(data, 1 << 24)
                total += len(piece)
                out.append(piece)
                if total > limit:
                    raise InputError(f"--data {spec}: {path.name} decompresses to more than {limit // 2**20} MB, "
                                     "more than the memory available")
                data = d.unconsumed_tail
                if d.eof or not data:
                    break
            if not d.eof:
                raise InputError(f"--data {spec}: {path.name}: broken gzip file (truncated)")
            data = d.unused_data  # a further gzip member, if any
            if data[:2] != b"\x1f\x8b":
                break
    except zlib.error as e:
        raise InputError(f"--data {spec}: {path.name}: broken gzip file ({e})") from None
    return b"".join(out)


def load_npy(path: Path, where: str):
    """A .npy array, its header checked first (a real array of the size the file holds, no Python objects);
    any malformed file is an InputError naming ``where``."""
    import numpy as np
    from numpy.lib import format as npformat

    try:
        with open(path, "rb") as f:
            version = npformat.read_magic(f)
            header = npformat.read_array_header_1_0 if version == (1, 0) else npformat.read_array_header_2_0
            shape, _, dtype = header(f)
            size = path.stat().st_size - f.tell()
        count = 1
        for n in shape:
            count *= n
        if dtype.hasobject:
            raise InputError(f"{where}: holds Python objects (not loaded)")
        if count * dtype.itemsize > size:
            raise InputError(f"{where}: the header promises shape {shape} but the file holds {size} bytes")
        from signsim.resources import require

        require(count * dtype.itemsize, f"{where}: an array of shape {shape}", "use a smaller file")
        return np.load(path, allow_pickle=False)
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 - any way a hostile header fails (ValueError, SyntaxError, TokenError)
        raise InputError(f"{where}: not a readable .npy file ({' '.join(str(e).split())[:200]})") from None
