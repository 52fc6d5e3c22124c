"""Generated data for generalized linear models: ``synthetic:glm[:KEY=VALUE]...`` (docs/theory.md §6).

Keys (all optional): ``n`` samples (default 1000), ``d`` features (default 50), ``features`` gaussian |
rademacher | uniform (default gaussian), ``labels`` logistic | linear (default logistic), ``noise`` the label
noise of the linear model (default 0.1), ``seed`` (default 0). Example: ``synthetic:glm:n=5000:d=200:seed=3``.

The features a_j are i.i.d. with mean 0 and variance 1 in every coordinate (N(0, 1); a fair +-1; U(-sqrt 3,
sqrt 3)), so they are sub-Gaussian, the setting of Yin et al.'s diversity bound for GLMs. A planted vector
w* has i.i.d. N(0, 1/d) entries, so that <w*, a_j> has variance 1 whatever d is. Labels: ``logistic``
y_j = 1 with probability 1 / (1 + exp(-<w*, a_j>)), else 0; ``linear`` y_j = <w*, a_j> + noise * N(0, 1).
The same key values and seed always give the same data.
"""

from __future__ import annotations

import numpy as np

from signsim.data import generated
from signsim.data.base import Dataset, DataSource, checked
from signsim.errors import InputError

PREFIX = "synthetic:glm"
FEATURES = ("gaussian", "rademacher", "uniform")
LABELS = ("logistic", "linear")
DEFAULTS = {"n": 1000, "d": 50, "features": "gaussian", "labels": "logistic", "noise": 0.1, "seed": 0}
#: the largest n * d generated (8 bytes each: 2 GiB)
MAX_ENTRIES = 2**28


def parse(spec: str) -> dict:
    """The generator's settings from ``synthetic:glm[:KEY=VALUE]...``; InputError naming the bad part."""
    where = f"--data {spec}"
    out = generated.key_values(spec, PREFIX, DEFAULTS, {"features": FEATURES, "labels": LABELS},
                               {"n": (1, 10**8), "d": (1, 10**7), "seed": (0, 2**63 - 1)},
                               f"unknown generated data set; the form is {PREFIX}[:KEY=VALUE]...")
    if out["n"] * out["d"] > MAX_ENTRIES:
        raise InputError(f"{where}: n * d = {out['n'] * out['d']:,} entries ({out['n'] * out['d'] * 8 / 2**30:.1f} "
                         f"GiB); at most {MAX_ENTRIES:,} can be generated — reduce n or d")
    return out


def generate(settings: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X, y, w_star) for parsed settings; features first, then w*, then the labels' randomness, all from
    one PCG64 stream seeded with ``seed``."""
    n, d = settings["n"], settings["d"]
    rng = np.random.default_rng(settings["seed"])
    kind = settings["features"]
    if kind == "gaussian":
        X = rng.standard_normal((n, d))
    elif kind == "rademacher":
        X = np.where(rng.random((n, d)) < 0.5, -1.0, 1.0)
    else:
        X = rng.uniform(-np.sqrt(3.0), np.sqrt(3.0), (n, d))
    w_star = rng.standard_normal(d) / np.sqrt(d)
    z = X @ w_star
    y = generated.labels(rng, z, settings["labels"], settings["noise"])
    return X, y, w_star


def load(spec: str) -> Dataset:
    X, y, _ = generate(parse(spec))
    return checked(spec, X, y, f"--data {spec}")


SOURCE = DataSource("synthetic", "generated GLM data: synthetic:glm[:n=N][:d=D][:features=gaussian|rademacher|"
                    "uniform][:labels=logistic|linear][:noise=S][:seed=K]",
                    lambda spec: spec.startswith("synthetic:"), load)
