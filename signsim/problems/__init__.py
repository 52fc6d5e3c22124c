"""Registry of problems (math.md §4, §5). One module per problem, each exporting ``SPEC``; add a module, list
it in ``_MODULES`` and add its kernels to ``signsim.engine.dispatch``."""

from __future__ import annotations

import importlib
from functools import cache

from signsim.errors import InputError
from signsim.problems.base import ProblemInstance, ProblemSpec

_MODULES = ("rosenbrock", "quadratic", "sign_trap", "vote_trap", "logistic", "least_squares", "mlp")


@cache
def registry() -> dict[str, ProblemSpec]:
    specs = [importlib.import_module(f"signsim.problems.{m}").SPEC for m in _MODULES]
    codes = [s.code for s in specs]
    assert len(set(codes)) == len(codes), "problem codes must be unique"
    return {s.name: s for s in specs}


def get(name: str) -> ProblemSpec:
    specs = registry()
    if name not in specs:
        raise InputError(f"--problem: unknown problem '{name}'; choose from {', '.join(specs)}")
    return specs[name]


def build(cfg) -> ProblemInstance:
    return get(cfg.problem).build(cfg)
