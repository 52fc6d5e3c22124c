"""A run's target (``--target METRIC:V``, docs/theory.md §14.4): the first recorded iteration at which a metric
reaches V, and the simulated time and bits it took to get there.

The metrics: ``loss`` and ``test_loss`` (reached when <= V), ``train_acc``, ``test_acc`` and ``accuracy`` (the test
accuracy where the run records one, else the training accuracy; reached when >= V). The history is recorded every
``--eval-every`` iterations, so the iteration found is the first recorded one (give ``--eval-every 1`` for the
exact iteration). Pure Python.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from signsim.errors import InputError
from signsim.numbers import to_float

#: metric -> True when lower is better
METRICS = {"loss": True, "test_loss": True, "train_acc": False, "test_acc": False, "accuracy": False}
FORMS = "loss:V | test_loss:V | accuracy:V | train_acc:V | test_acc:V"


@dataclass(frozen=True)
class Target:
    metric: str
    value: float

    @property
    def lower(self) -> bool:
        return METRICS[self.metric]


def parse(spec: str) -> Target:
    """``--target spec`` as a Target; InputError naming the spec for a bad one."""
    metric, sep, rest = str(spec).partition(":")
    if metric not in METRICS or not sep:
        raise InputError(f"--target {spec}: give {FORMS}")
    try:
        value = to_float(rest)
    except ValueError:
        raise InputError(f"--target {spec}: '{rest}' is not a number") from None
    if not math.isfinite(value):
        raise InputError(f"--target {spec}: the value must be finite")
    return Target(metric, value)


def field_of(target: Target, history: list[dict[str, Any]]) -> str:
    """The history field the target reads (``accuracy``: the test accuracy where recorded, else the training one)."""
    if target.metric != "accuracy":
        return target.metric
    measured = any(isinstance(v := row.get("test_acc"), float) and math.isfinite(v) for row in history)
    return "test_acc" if measured else "train_acc"  # (no held-out split, --test-fraction 0: NaN test accuracies)


def reached(target: Target, history: list[dict[str, Any]]) -> dict[str, Any]:
    """The results' ``target``: the metric and value, whether a recorded row reached it, and at that first row its
    iteration, simulated time (None without a system model) and bits sent up and down so far."""
    field = field_of(target, history)
    out: dict[str, Any] = {"metric": field, "value": target.value, "reached": False, "iter": None, "time": None,
                           "bits_up": None, "bits_down": None}
    if history and field not in history[0]:
        raise InputError(f"--target {target.metric}:{target.value!r}: this run does not record {field}")
    for row in history:
        v = row.get(field)
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        if (v <= target.value) if target.lower else (v >= target.value):
            time = row.get("time")
            out.update(reached=True, iter=row["iter"], time=time, bits_up=row["bits_up"], bits_down=row["bits_down"])
            break
    return out
