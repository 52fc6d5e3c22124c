"""Gradient diversity against the number of features (docs/theory.md §6): B_S at a fixed point of a generalized
linear model on generated data (``synthetic:glm``) with d = 10 ... 2,000 features, several seeds per d, and the
slope of log B_S against log d fitted by least squares.

Yin et al. (arXiv 1706.05699) bound the diversity of GLMs with i.i.d. sub-Gaussian features from below by a
term proportional to d (with high probability, for n large enough): the slope measures how far that
proportionality holds at the chosen n.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from signsim import __version__
from signsim.data.synthetic import FEATURES, LABELS
from signsim.errors import InputError


@dataclass
class DimensionExperiment:
    dims: list[int] = field(default_factory=lambda: [10, 20, 50, 100, 200, 500, 1000, 2000])
    samples: int = 20_000
    seeds: int = 3
    features: str = "gaussian"
    labels: str = "logistic"
    at: str = "init"


def parse(raw: dict[str, Any], where: str) -> DimensionExperiment:
    e = DimensionExperiment()
    known = {f.replace("_", "-") for f in DimensionExperiment.__dataclass_fields__}
    for key, value in raw.items():
        if key.replace("_", "-") not in known:
            raise InputError(f"{where}: unknown key '{key}' (known: kind, {', '.join(sorted(known))})")
        name = key.replace("-", "_")
        if name == "dims":
            if not (isinstance(value, list) and len(value) >= 2
                    and all(isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 10**6 for v in value)):
                raise InputError(f"{where}: 'dims' must be a list of at least two integers between 1 and 10^6")
        elif name in ("samples", "seeds"):
            if not (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 10**8):
                raise InputError(f"{where}: '{key}' must be a positive integer")
        elif name == "features" and value not in FEATURES:
            raise InputError(f"{where}: 'features' must be one of {', '.join(FEATURES)}")
        elif name == "labels" and value not in LABELS:
            raise InputError(f"{where}: 'labels' must be one of {', '.join(LABELS)}")
        elif name == "at" and not isinstance(value, str):
            raise InputError(f"{where}: 'at' must be a string such as \"init\"")
        setattr(e, name, value)
    return e


def fit_slope(d: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Least-squares slope of log b against log d, and its standard error."""
    x, y = np.log(d), np.log(b)
    n = len(x)
    X = np.column_stack([np.ones(n), x])
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ coef
    se = math.sqrt(float(resid @ resid) / (n - 2) / float(np.sum((x - x.mean()) ** 2))) if n > 2 else math.nan
    return float(coef[1]), se


def dimension(base: dict[str, Any], e: DimensionExperiment,
              progress: Callable[[str], Callable[[int, int], None] | None] | None = None) -> dict[str, Any]:
    from signsim.commands.diversity import DiversityOptions, diversity
    from signsim.config import resolve

    rows = []
    for d in e.dims:
        for s in range(e.seeds):
            data = f"synthetic:glm:n={e.samples}:d={d}:features={e.features}:labels={e.labels}:seed={s}"
            cfg = resolve({**base, "data": data})
            doc = diversity(cfg, DiversityOptions(at=e.at, estimator="exact"))
            rows.append({"d": d, "seed": s, "n": doc["n"], "B_S": doc["B_S"], "delta_S": doc["delta_S"]})
            if progress is not None and (tick := progress(f"d = {d}")) is not None:
                tick(1, 1)
    finite = [r for r in rows if math.isfinite(r["B_S"])]
    slope, se = fit_slope(np.array([r["d"] for r in finite], float), np.array([r["B_S"] for r in finite]))
    return {"signsim_version": __version__, "command": "diversity-dimension", "base": base,
            "experiment": e.__dict__, "rows": rows, "slope": slope, "slope_se": se}
