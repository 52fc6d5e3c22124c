"""Registry of methods (math.md §2). One module per method, each exporting ``SPEC``."""

from __future__ import annotations

import importlib
from functools import cache

from signsim.errors import InputError
from signsim.methods.base import MethodSpec

_MODULES = ("sgd", "signsgd", "signum", "ssdm", "ef_signsgd", "sto_sign")


@cache
def registry() -> dict[str, MethodSpec]:
    specs = [importlib.import_module(f"signsim.methods.{m}").SPEC for m in _MODULES]
    return {s.name: s for s in specs}


def get(name: str) -> MethodSpec:
    specs = registry()
    if name not in specs:
        raise InputError(f"--method: unknown method '{name}'; choose from {', '.join(specs)}")
    return specs[name]
