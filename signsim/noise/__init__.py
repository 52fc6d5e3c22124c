"""Registry of noise models (docs/theory.md §5). One module per model; add a module and list it in ``MODULES``
and in ``signsim.engine.dispatch.noise_draw``."""

from __future__ import annotations

import importlib
from functools import cache

import numpy as np

from signsim.errors import InputError
from signsim.noise.base import MAX_SIGMA, NoiseModel, sigma_param, with_scales  # noqa: F401 (re-exported)

#: the noise model modules of this package, by module name (``student_t`` for the model ``student-t``): the names
#: ``signsim.engine.dispatch`` imports them by
MODULES = ("none", "gaussian", "laplace", "uniform", "student_t", "bimodal", "skewed", "cauchy", "stable")


@cache
def modules() -> dict[str, NoiseModel]:
    """Module name -> its model, in ``MODULES``' order."""
    return {m: importlib.import_module(f"signsim.noise.{m}").MODEL for m in MODULES}


@cache
def registry() -> dict[str, NoiseModel]:
    """Model name (as ``--noise`` spells it) -> model, in ``MODULES``' order."""
    return {m.name: m for m in modules().values()}


def module_of(code: int) -> str:
    """The name of the module whose model has this integer code (the loop's ``I_NOISE``)."""
    for module, model in modules().items():
        if model.code == code:
            return module
    raise ValueError(f"unknown noise code {code}")


def parse(spec: str) -> tuple[NoiseModel, np.ndarray]:
    """Parse ``name[:p1][:sigma]`` (e.g. ``gaussian:0.5``, ``student-t:3:0.5``, ``none``)."""
    name, *raw = str(spec).strip().split(":")
    models = registry()
    if name not in models:
        from signsim.suggest import hint

        raise InputError(f"--noise: unknown noise model '{name}'{hint(name, models)}; choose from "
                         f"{', '.join(models)}")
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


def parse_scales(spec: str | None, d: int) -> np.ndarray | None:
    """Per-coordinate noise scales s_1..s_d from ``--noise-scales`` (docs/theory.md §10.2): ``first:K`` (1 on
    the first K coordinates, 0 after), ``power:A`` (s_i = i^-A, i from 1), or a ``.npy`` file holding d finite
    numbers >= 0. None: every scale is 1."""
    if spec is None:
        return None
    text = str(spec).strip()
    where = f"--noise-scales {spec}"
    kind, _, arg = text.partition(":")
    if kind == "first" and arg:
        try:
            K = int(arg)
        except ValueError:
            raise InputError(f"{where}: K must be an integer") from None
        if not 0 <= K <= d:
            raise InputError(f"{where}: K must lie between 0 and the dimension {d}")
        s = np.zeros(d)
        s[:K] = 1.0
        return s
    if kind == "power" and arg:
        try:
            A = float(arg)
        except ValueError:
            raise InputError(f"{where}: A must be a number") from None
        if not (np.isfinite(A) and A >= 0):
            raise InputError(f"{where}: A must be a finite number >= 0")
        return np.arange(1, d + 1, dtype=np.float64) ** -A
    if text.lower().endswith(".npy"):
        from pathlib import Path

        path = Path(text)
        if not path.is_file():
            what = "a directory" if path.is_dir() else "not a regular file" if path.exists() else "no such file"
            raise InputError(f"{where}: {what}")
        try:
            s = np.load(path, allow_pickle=False, mmap_mode="r")
        except (ValueError, OSError, EOFError) as e:
            raise InputError(f"{where}: not a readable .npy array ({' '.join(str(e).split())})") from None
        from signsim.data.base import is_real

        if s.shape != (d,) or not is_real(s.dtype):
            raise InputError(f"{where}: expected {d} real numbers (the dimension), got shape {s.shape} of {s.dtype}")
        s = np.asarray(s, dtype=np.float64)
        if not (np.all(np.isfinite(s)) and np.all(s >= 0) and np.all(s <= MAX_SIGMA)):
            bad = int(np.flatnonzero(~((s >= 0) & (s <= MAX_SIGMA)))[0])
            raise InputError(f"{where}: every scale must be a number between 0 and {MAX_SIGMA:g} (entry {bad} is "
                             f"{s[bad]:g})")
        return s
    raise InputError(f"{where}: expected first:K, power:A or a FILE.npy")




def for_config(cfg, d: int) -> tuple[NoiseModel, np.ndarray]:
    """The run's noise model and its parameters, with the per-coordinate scales of ``--noise-scales``."""
    model, params = parse(cfg.noise or "none")
    s = parse_scales(getattr(cfg, "noise_scales", None), d)
    if s is not None and s.size and model.arity:
        scale = float(str(cfg.noise).split(":")[-1])  # the model's scale (sigma or C), checked by ``parse``
        if scale * float(s.max()) > MAX_SIGMA:
            raise InputError(f"--noise-scales {cfg.noise_scales}: the largest scale {float(s.max()):g} times the "
                             f"scale {scale:g} of --noise {cfg.noise} exceeds {MAX_SIGMA:g}, the largest noise scale "
                             "(sums of squared gradients must stay finite)")
    return model, with_scales(params, s)
