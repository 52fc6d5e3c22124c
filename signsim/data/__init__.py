"""Registry of data sources. One module per source exporting ``SOURCE``; the first whose ``matches`` accepts
the ``--data`` value reads it (LIBSVM text is the fallback for other file names)."""

from __future__ import annotations

import importlib
from functools import cache

from signsim.data.base import Dataset, DataSource

_MODULES = ("builtin", "sparse", "synthetic", "memory", "idx", "npz", "csvfile", "svmlight")


@cache
def registry() -> dict[str, DataSource]:
    sources = [importlib.import_module(f"signsim.data.{m}").SOURCE for m in _MODULES]
    return {s.name: s for s in sources}


def load(spec: str) -> Dataset:
    for source in registry().values():
        if source.matches(spec):
            return source.load(spec)
    return registry()["libsvm"].load(spec)
