"""Registry of problems (docs/theory.md §4, §5). One module per problem, each exporting ``SPEC``; add a module, list
it in ``_MODULES`` and add its kernels to ``signsim.engine.dispatch``."""

from __future__ import annotations

import importlib
from functools import cache

import numpy as np

from signsim.errors import InputError
from signsim.problems.base import ProblemInstance, ProblemSpec

_MODULES = ("rosenbrock", "quadratic", "sign_trap", "vote_trap", "logistic", "least_squares", "mlp", "model")


@cache
def registry() -> dict[str, ProblemSpec]:
    specs = [importlib.import_module(f"signsim.problems.{m}").SPEC for m in _MODULES]
    codes = [s.code for s in specs]
    assert len(set(codes)) == len(codes), "problem codes must be unique"
    return {s.name: s for s in specs}


def get(name: str) -> ProblemSpec:
    specs = registry()
    if name not in specs:
        from signsim.suggest import hint

        raise InputError(f"--problem: unknown problem '{name}'{hint(name, specs)}; choose from "
                         f"{', '.join(specs)}")
    return specs[name]


#: vectors of the problem's dimension a problem keeps (x0, x*, L, scratch) -- for the memory check
PROBLEM_VECTORS = 8


def build(cfg, simulated: bool = False) -> ProblemInstance:
    """The problem of ``cfg``. A data problem packs its data matrix in ``cfg.dtype``; only a simulated run
    (``simulated``: ``signsim.engine.build``) takes float32 data, the diagnostics compute from float64 data."""
    spec = get(cfg.problem)
    if getattr(cfg, "dtype", "float64") != "float64" and not simulated:
        raise InputError(f"--dtype {cfg.dtype}: applies to simulated runs only (run, compare, sweep); the "
                         "diagnostics estimate from float64 data: drop --dtype")
    if cfg.dim is not None:
        from signsim.resources import require

        require(8 * PROBLEM_VECTORS * cfg.dim, f"problem {spec.name} of dimension {cfg.dim}", "reduce --dim")
    x0 = cfg.x0
    if isinstance(x0, list):  # a vector x0: each problem fills its x0 with it; check its length first
        from dataclasses import replace

        probe = spec.build(replace(cfg, x0=None))
        if len(x0) != probe.dim:
            raise InputError(f"--x0: a vector of length {len(x0)}, but {probe.name} has dimension {probe.dim}")
        probe.x0 = np.asarray(x0, dtype=np.float64)
        return probe
    return spec.build(cfg)
