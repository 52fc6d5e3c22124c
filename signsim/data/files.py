"""Helpers shared by the file loaders."""

import gzip
from pathlib import Path

from signsim.errors import InputError


def existing(spec: str) -> Path:
    path = Path(spec)
    if not path.is_file():
        raise InputError(f"--data {spec}: no such file")
    return path


def read_bytes(path: Path, spec: str) -> bytes:
    """The file's bytes, gunzipped when it starts with the gzip magic number."""
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise InputError(f"--data {spec}: broken gzip file ({e})") from None
    return raw
