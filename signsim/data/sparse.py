"""Generated sparse data with a set conflict degree: ``synthetic:sparse[:KEY=VALUE]...`` (docs/theory.md §6.2).

Keys (all optional): ``n`` samples (default 1024), ``s`` coordinates each sample touches (default 4),
``conflict`` the number of other samples each sample shares a coordinate with (default 0; conflict + 1 must
divide n), ``d`` features (default s n / (conflict + 1), the fewest that hold the blocks; at least that),
``values`` gaussian | ones (the s non-zero features: N(0, 1) or all 1), ``labels`` linear | logistic (default
linear), ``noise`` the label noise of the linear model (default 0), ``seed`` (default 0).
Example: ``synthetic:sparse:n=1024:s=4:conflict=7``.

Construction: the n samples form K = n / (conflict + 1) groups of conflict + 1 samples (a random assignment);
group t owns s coordinates, disjoint from every other group's (a random choice among the d). Every sample of
group t is non-zero exactly on its group's s coordinates, so two samples share a coordinate exactly when they
are in the same group: the conflict graph (samples joined when their supports meet) is K disjoint cliques and
every sample has degree ``conflict`` exactly. A planted w* has i.i.d. N(0, 1/s) entries (so <w*, a_j> has
variance 1 with gaussian values); labels as ``synthetic:glm``. With ``values=ones`` and ``noise=0`` the samples
of a group are identical: the worst case of the sparse-conflict bound B_S >= n / (conflict + 1), which it then
meets with equality at every w away from the optimum (§6.3).

Use it with ``--standardize false --intercept false``: centring the features or adding an intercept column
makes every sample touch every coordinate.
"""

from __future__ import annotations

import numpy as np

from signsim.data import generated
from signsim.data.base import Dataset, DataSource, checked
from signsim.errors import InputError

PREFIX = "synthetic:sparse"
VALUES = ("gaussian", "ones")
LABELS = ("linear", "logistic")
DEFAULTS = {"n": 1024, "s": 4, "conflict": 0, "d": None, "values": "gaussian", "labels": "linear", "noise": 0.0,
            "seed": 0}
#: the largest n * d generated (8 bytes each: 2 GiB)
MAX_ENTRIES = 2**28


def parse(spec: str) -> dict:
    """The generator's settings from ``synthetic:sparse[:KEY=VALUE]...``; InputError naming the bad part."""
    where = f"--data {spec}"
    out = generated.key_values(spec, PREFIX, DEFAULTS, {"values": VALUES, "labels": LABELS},
                               {"n": (1, 10**8), "s": (1, 10**6), "conflict": (0, 10**8), "d": (1, 10**8),
                                "seed": (0, 2**63 - 1)}, f"not {PREFIX}[:KEY=VALUE]...")
    n, s, c = out["n"], out["s"], out["conflict"]
    if c >= n:
        raise InputError(f"{where}: conflict={c} must be below n={n} (a sample conflicts with at most n - 1 others)")
    if n % (c + 1):
        raise InputError(f"{where}: conflict + 1 = {c + 1} must divide n = {n} (groups of conflict + 1 samples)")
    need = s * (n // (c + 1))
    if out["d"] is None:
        out["d"] = need
    elif out["d"] < need:
        raise InputError(f"{where}: d={out['d']} is below s n / (conflict + 1) = {need}, the coordinates the "
                         "groups need")
    if n * out["d"] > MAX_ENTRIES:
        raise InputError(f"{where}: n * d = {n * out['d']:,} entries; at most {MAX_ENTRIES:,} can be generated — "
                         "reduce n, s or d, or raise conflict")
    return out


def generate(settings: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(X, y, w_star, group) for parsed settings, group[j] the group of sample j; all from one PCG64 stream
    seeded with ``seed``: the groups, the coordinates, the values, w*, then the labels' randomness."""
    n, s, c, d = settings["n"], settings["s"], settings["conflict"], settings["d"]
    K = n // (c + 1)
    rng = np.random.default_rng(settings["seed"])
    group = rng.permutation(n) // (c + 1)
    coords = rng.permutation(d)[: K * s].reshape(K, s)
    X = np.zeros((n, d))
    cols = coords[group]
    vals = rng.standard_normal((n, s)) if settings["values"] == "gaussian" else np.ones((n, s))
    np.put_along_axis(X, cols, vals, axis=1)
    w_star = rng.standard_normal(d) / np.sqrt(s)
    z = X @ w_star
    y = generated.labels(rng, z, settings["labels"], settings["noise"])
    return X, y, w_star, group


def load(spec: str) -> Dataset:
    X, y, _, _ = generate(parse(spec))
    return checked(spec, X, y, f"--data {spec}")


SOURCE = DataSource("sparse", "generated sparse data: synthetic:sparse[:n=N][:s=S][:conflict=C][:d=D][:values=gaussian|"
                    "ones][:labels=linear|logistic][:noise=S][:seed=K]",
                    lambda spec: spec == PREFIX or spec.startswith(PREFIX + ":"), load)
