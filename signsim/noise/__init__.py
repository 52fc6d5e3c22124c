"""Registry of noise models (math.md §5). One module per model; add a module and list it in ``_MODULES``
and in ``signsim.engine.dispatch.noise_draw``."""

from __future__ import annotations

import importlib
from functools import cache

import numpy as np

from signsim.errors import InputError
from signsim.noise.base import NoiseModel, sigma_param

_MODULES = ("none", "gaussian", "laplace", "uniform", "student_t", "bimodal", "skewed", "cauchy", "stable")


@cache
def registry() -> dict[str, NoiseModel]:
    models = [importlib.import_module(f"signsim.noise.{m}").MODEL for m in _MODULES]
    return {m.name: m for m in models}


def parse(spec: str) -> tuple[NoiseModel, np.ndarray]:
    """Parse ``name[:p1][:sigma]`` (e.g. ``gaussian:0.5``, ``student-t:3:0.5``, ``none``)."""
    name, *raw = str(spec).strip().split(":")
    models = registry()
    if name not in models:
        raise InputError(f"--noise: unknown noise model '{name}'; choose from {', '.join(models)}")
    model = models[name]
    if len(raw) != model.arity:
        form = model.summary.rsplit("; ", 1)[-1] if model.arity else "none"
        raise InputError(f"--noise {spec}: expected the form {form}")
    try:
        args = [float(a) for a in raw]
    except ValueError:
        raise InputError(f"--noise {spec}: parameters must be numbers") from None
    if args:
        sigma_param(args[-1], spec)
    return model, model.parse_params(args)
