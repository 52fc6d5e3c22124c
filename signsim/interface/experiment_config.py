"""The ``[experiment]`` table of a config file (``signsim diversity --config FILE``), parsed and checked below
the commands: ``kind`` selects the experiment (default ``replication``, the first one), the other keys are its
options. The experiments run in ``signsim/commands/`` (``commands/experiments.py`` maps each kind to its runner):

* ``replication``: Yin et al.'s replicated-data experiment (``commands/replication.py``);
* ``dimension``: B_S against the number of features of generated GLM data (``commands/dimension.py``);
* ``heuristics``: B_S after dropout, Langevin noise and quantization (``commands/heuristics.py``);
* ``conflicts``: B_S of generated sparse data against the conflict degree (``commands/conflicts.py``);
* ``lower-bound``: iterations to a target against B on the worst case of the sparse-conflict bound
  (``commands/lower_bound.py``);
* ``stability``: coupled runs on training sets that differ in one sample, and the generalization gap, against
  the batch size at a fixed number of gradient computations (``commands/stability.py``).

Pure Python: data and diagnostics modules are loaded only to check the values that name their entries.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from signsim.errors import InputError


@dataclass
class TargetRuns:
    """Mini-batch SGD runs to a target loss, one group per batch size (``commands.run.iterations_to_target``);
    the experiments that measure speedups share these options."""

    batch_sizes: list[int] = field(default_factory=lambda: [1, 2, 4, 8, 16, 32, 64])
    target_loss: float = 0.2
    max_iters: int = 20_000
    seeds: int = 3
    lr_scaling: str = "linear"
    lr_max: float = 1.0
    eval_every: int = 1


@dataclass
class ReplicationExperiment(TargetRuns):
    replicate: list[int] = field(default_factory=lambda: [1, 2, 4, 8])


@dataclass
class DimensionExperiment:
    dims: list[int] = field(default_factory=lambda: [10, 20, 50, 100, 200, 500, 1000, 2000])
    samples: int = 20_000
    seeds: int = 3
    features: str = "gaussian"
    labels: str = "logistic"
    at: str = "init"


@dataclass
class HeuristicsExperiment(TargetRuns):
    transforms: list[str] = field(default_factory=lambda: ["dropout:0.5", "langevin:1", "sto-sign", "qsgd:4",
                                                           "natural"])
    at: str = "init"
    measure: str | None = None  # a langevin:s transformation to measure iterations-to-target with, or none


@dataclass
class StabilityExperiment:
    batch_sizes: list[int] = field(default_factory=lambda: [1, 4, 16, 64, 256])
    #: gradient computations per run, in passes over the n training samples (iterations: passes n / (M B))
    passes: int = 10
    #: coupled pairs (S, S') per batch size: pair p runs with seed + p and replaces its own training sample
    pairs: int = 5
    #: records of ||w_S - w_S'|| along each run
    records: int = 20
    lr_scaling: str = "linear"
    lr_max: float = 1.0
    #: "held-out": S' replaces a training sample by a held-out one; "copy": by itself (S' = S, a check)
    replacement: str = "held-out"


@dataclass
class ConflictsExperiment:
    conflicts: list[int] = field(default_factory=lambda: [0, 1, 3, 7, 15, 31, 63])
    samples: int = 1024
    s: int = 4
    values: list[str] = field(default_factory=lambda: ["gaussian", "ones"])
    labels: str = "linear"
    noise: float = 0.0
    seeds: int = 3
    at: str = "init"


@dataclass
class LowerBoundExperiment:
    batch_sizes: list[int] = field(default_factory=lambda: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512])
    #: the target: f <= target-ratio f(x_0)
    target_ratio: float = 1e-3
    #: multiples of gamma_B = lr B B_S / (B + B_S - 1) tried at each B (the fewest iterations count)
    lr_factors: list[float] = field(default_factory=lambda: [0.5, 1.0, 1.5])
    max_iters: int = 20_000
    seeds: int = 5


#: the most seeds an experiment takes (each seed is a run, or a data set, per grid point: 2^63 - 1 ran forever)
MAX_SEEDS = 10_000


def check_seeds(key: str, value: Any, where: str) -> None:
    """``seeds``: a positive integer, at most MAX_SEEDS."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InputError(f"{where}: '{key}' must be a positive integer")
    if value > MAX_SEEDS:
        raise InputError(f"{where}: '{key}' {value}: at most {MAX_SEEDS:,} seeds (each is a run or a data set per "
                         "point of the experiment)")


def check_option(key: str, value: Any, default: Any, where: str) -> Any:
    """A value of an experiment option checked by the kind of its default: a non-empty list of positive
    integers, 'linear' or 'none' (lr-scaling), a positive integer, or a positive finite number; ``seeds`` at
    most MAX_SEEDS."""
    if key.replace("_", "-") == "seeds":
        check_seeds(key, value, where)
        return value
    if isinstance(default, list):
        ok = isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) and v >= 1
                                                      for v in value)
        if not ok:
            raise InputError(f"{where}: '{key}' must be a non-empty list of positive integers")
    elif isinstance(default, str):
        if value not in ("linear", "none"):
            raise InputError(f"{where}: '{key}' must be 'linear' or 'none'")
    elif isinstance(default, int):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InputError(f"{where}: '{key}' must be a positive integer")
    elif not isinstance(value, int | float) or isinstance(value, bool) or not (value > 0 and math.isfinite(value)):
        raise InputError(f"{where}: '{key}' must be a positive number")
    return value


def parse_replication(raw: Any, where: str) -> ReplicationExperiment:
    if not isinstance(raw, dict):
        raise InputError(f"{where} must be a table")
    known = {f.replace("_", "-") for f in ReplicationExperiment.__dataclass_fields__}
    e = ReplicationExperiment()
    for key, value in raw.items():
        name = key.replace("-", "_")
        if key.replace("_", "-") not in known:
            raise InputError(f"{where}: unknown key '{key}' (known: {', '.join(sorted(known))})")
        setattr(e, name, check_option(key, value, getattr(e, name), where))
    if 1 not in e.batch_sizes:
        raise InputError(f"{where}: 'batch-sizes' must include 1 (the speedup is measured against it)")
    return e


def parse_dimension(raw: dict[str, Any], where: str) -> DimensionExperiment:
    from signsim.data.synthetic import FEATURES, LABELS

    e = DimensionExperiment()
    _known(DimensionExperiment, raw, where)
    for key, value in raw.items():
        name = key.replace("-", "_")
        if name == "dims":
            if not (isinstance(value, list) and len(value) >= 2
                    and all(isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 10**6 for v in value)):
                raise InputError(f"{where}: 'dims' must be a list of at least two integers between 1 and 10^6")
        elif name == "seeds":
            check_seeds(key, value, where)
        elif name == "samples":
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


def parse_heuristics(raw: dict[str, Any], where: str) -> HeuristicsExperiment:
    from signsim.interface.transform_specs import check as check_transform
    from signsim.interface.transform_specs import parse as parse_transform

    e = HeuristicsExperiment()
    _known(HeuristicsExperiment, raw, where)
    for key, value in raw.items():
        name = key.replace("-", "_")
        default = getattr(e, name)
        if name == "transforms":
            if not (isinstance(value, list) and value and all(isinstance(v, str) for v in value)):
                raise InputError(f"{where}: 'transforms' must be a non-empty list of strings")
            for v in value:
                check_transform(v)  # (a plugin's compressor: checked when the experiment starts)
        elif name == "measure":
            if value == "none":
                value = None
            elif not (isinstance(value, str) and value.startswith("langevin:")):
                raise InputError(f"{where}: 'measure' must be a langevin:s transformation (the one the engine "
                                 "reproduces exactly with --noise gaussian:s)")
            else:
                parse_transform(value)
        elif name == "at":
            if not isinstance(value, str):
                raise InputError(f"{where}: 'at' must be a string such as \"init\"")
        else:
            check_option(key, value, default, where)
        setattr(e, name, value)
    if e.measure is not None and 1 not in e.batch_sizes:
        raise InputError(f"{where}: 'batch-sizes' must include 1 (the speedup is measured against it)")
    return e


def parse_stability(raw: dict[str, Any], where: str) -> StabilityExperiment:
    e = StabilityExperiment()
    _known(StabilityExperiment, raw, where)
    for key, value in raw.items():
        name = key.replace("-", "_")
        if name == "replacement":
            if value not in ("held-out", "copy"):
                raise InputError(f"{where}: 'replacement' must be 'held-out' or 'copy'")
        elif name in ("passes", "pairs", "records"):
            check_option(key, value, 1, where)
            if value > 10**6:
                raise InputError(f"{where}: '{key}' must be at most 10^6")
        else:
            check_option(key, value, getattr(e, name), where)
        setattr(e, name, value)
    return e


def _known(cls, raw: dict[str, Any], where: str) -> None:
    known = {f.replace("_", "-") for f in cls.__dataclass_fields__}
    for key in raw:
        if key.replace("_", "-") not in known:
            raise InputError(f"{where}: unknown key '{key}' (known: kind, {', '.join(sorted(known))})")


def parse_conflicts(raw: dict[str, Any], where: str) -> ConflictsExperiment:
    from signsim.data.sparse import LABELS, VALUES

    _known(ConflictsExperiment, raw, where)
    e = ConflictsExperiment()
    for key, value in raw.items():
        name = key.replace("-", "_")
        if name == "conflicts":
            if not (isinstance(value, list) and value
                    and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)):
                raise InputError(f"{where}: 'conflicts' must be a non-empty list of integers >= 0")
        elif name == "values":
            if not (isinstance(value, list) and value and all(v in VALUES for v in value)):
                raise InputError(f"{where}: 'values' must be a non-empty list of {', '.join(VALUES)}")
        elif name == "labels":
            if value not in LABELS:
                raise InputError(f"{where}: 'labels' must be one of {', '.join(LABELS)}")
        elif name == "noise":
            if not (isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
                    and value >= 0):
                raise InputError(f"{where}: 'noise' must be a finite number >= 0")
        elif name == "at":
            if not isinstance(value, str):
                raise InputError(f"{where}: 'at' must be a string such as \"init\"")
        else:
            check_option(key, value, getattr(e, name), where)
        setattr(e, name, value)
    for c in e.conflicts:
        if e.samples % (c + 1):
            raise InputError(f"{where}: conflict {c}: conflict + 1 must divide samples = {e.samples}")
    return e


def parse_lower_bound(raw: dict[str, Any], where: str) -> LowerBoundExperiment:
    _known(LowerBoundExperiment, raw, where)
    e = LowerBoundExperiment()
    for key, value in raw.items():
        name = key.replace("-", "_")
        if name == "lr_factors":
            if not (isinstance(value, list) and value and all(
                    isinstance(v, int | float) and not isinstance(v, bool) and 0 < v < math.inf for v in value)):
                raise InputError(f"{where}: 'lr-factors' must be a non-empty list of positive numbers")
        elif name == "target_ratio":
            if not (isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < 1):
                raise InputError(f"{where}: 'target-ratio' must lie in (0, 1)")
        else:
            check_option(key, value, getattr(e, name), where)
        setattr(e, name, value)
    return e


@dataclass(frozen=True)
class Kind:
    kind: str
    #: (raw table, where) -> options
    parse: Callable[[Any, str], Any]
    #: the ``command`` field of the experiment's results document (which the tables and figures dispatch on)
    command: str


#: every experiment, by kind; the first is the default
KINDS = {k.kind: k for k in (
    Kind("replication", parse_replication, "diversity-replication"),
    Kind("dimension", parse_dimension, "diversity-dimension"),
    Kind("heuristics", parse_heuristics, "diversity-heuristics"),
    Kind("stability", parse_stability, "diversity-stability"),
    Kind("conflicts", parse_conflicts, "diversity-conflicts"),
    Kind("lower-bound", parse_lower_bound, "diversity-lower-bound"),
)}


@dataclass
class Planned:
    """A parsed [experiment] table: which experiment and its options."""

    kind: str
    options: Any


def parse(raw: Any, where: str) -> Planned:
    if not isinstance(raw, dict):
        raise InputError(f"{where} must be a table")
    raw = dict(raw)
    kind = raw.pop("kind", "replication")
    if kind not in KINDS:
        raise InputError(f"{where}: kind = {kind!r}; choose from {', '.join(KINDS)}")
    return Planned(kind, KINDS[kind].parse(raw, where))
