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
from typing import Any

import numpy as np

from signsim import __version__
from signsim.interface.experiment_config import DimensionExperiment


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
    from signsim.interface.config import resolve
    from signsim.interface.interrupts import acknowledge

    rows = []
    status = "ok"
    try:
        for d in e.dims:
            for s in range(e.seeds):
                data = f"synthetic:glm:n={e.samples}:d={d}:features={e.features}:labels={e.labels}:seed={s}"
                cfg = resolve({**base, "data": data})
                doc = diversity(cfg, DiversityOptions(at=e.at, estimator="exact"))
                rows.append({"d": d, "seed": s, "n": doc["n"], "B_S": doc["B_S"], "delta_S": doc["delta_S"]})
                if progress is not None and (tick := progress(f"d = {d}")) is not None:
                    tick(1, 1)
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the rows measured so far, status interrupted
        acknowledge()
        status = "interrupted"
    finite = [r for r in rows if math.isfinite(r["B_S"])]
    slope = se = None
    if len({r["d"] for r in finite}) >= 2:
        slope, se = fit_slope(np.array([r["d"] for r in finite], float), np.array([r["B_S"] for r in finite]))
    return {"signsim_version": __version__, "command": "diversity-dimension", "status": status, "base": base,
            "experiment": e.__dict__, "rows": rows, "slope": slope, "slope_se": se}
