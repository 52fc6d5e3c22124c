"""Yin et al.'s replicated-data experiment at small scale (docs/theory.md §6): for data replicated r = 1, 2, 4, 8
times and batch sizes B = 1, 2, 4, ..., the iterations mini-batch SGD needs to reach a target loss, the
measured speedup T_1 / T_B beside the predicted B B_S / (B + B_S - 1).

B_S is computed exactly where the B = 1 run first reaches the target (the regime that decides the
iteration count); replicating every sample r times divides Delta_S by r and leaves B_S unchanged.
The step size grows with the batch (``lr-scaling = "linear"``: gamma_B = min(B gamma_1, lr-max)) or stays.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from signsim import __version__
from signsim.errors import InputError


@dataclass
class TargetRuns:
    """Mini-batch SGD runs to a target loss, one group per batch size (``iterations_to_target``); the
    experiments that measure speedups share these options."""

    batch_sizes: list[int] = field(default_factory=lambda: [1, 2, 4, 8, 16, 32, 64])
    target_loss: float = 0.2
    max_iters: int = 20_000
    seeds: int = 3
    lr_scaling: str = "linear"
    lr_max: float = 1.0
    eval_every: int = 1


@dataclass
class Experiment(TargetRuns):
    replicate: list[int] = field(default_factory=lambda: [1, 2, 4, 8])


def check_option(key: str, value: Any, default: Any, where: str) -> Any:
    """A value of an experiment option checked by the kind of its default: a non-empty list of positive
    integers, 'linear' or 'none' (lr-scaling), a positive integer, or a positive finite number."""
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


def parse_experiment(raw: Any, where: str) -> Experiment:
    if not isinstance(raw, dict):
        raise InputError(f"{where} must be a table")
    known = {f.replace("_", "-") for f in Experiment.__dataclass_fields__}
    e = Experiment()
    for key, value in raw.items():
        name = key.replace("-", "_")
        if key.replace("_", "-") not in known:
            raise InputError(f"{where}: unknown key '{key}' (known: {', '.join(sorted(known))})")
        setattr(e, name, check_option(key, value, getattr(e, name), where))
    if 1 not in e.batch_sizes:
        raise InputError(f"{where}: 'batch-sizes' must include 1 (the speedup is measured against it)")
    return e


def first_hit(history: list[dict[str, Any]], target: float) -> int | None:
    for row in history:
        if row["loss"] is not None and row["loss"] <= target:
            return row["iter"]
    return None


def iterations_to_target(base: dict[str, Any], e, progress=None, prefix: str = "") -> dict[int, list[int | None]]:
    """For each batch size B of ``e.batch_sizes``: the first recorded iteration at which mini-batch SGD (the
    configured run, step size scaled with B by ``e.lr_scaling``) reaches ``e.target_loss``, one per seed (None
    where a run does not reach it within ``e.max_iters``)."""
    from signsim.commands.run import run
    from signsim.config import resolve

    lr1 = resolve(base).lr
    iters: dict[int, list[int | None]] = {}
    for B in e.batch_sizes:
        lr = min(B * lr1, e.lr_max) if e.lr_scaling == "linear" else lr1
        label = f"{prefix}, B = {B}" if prefix else f"B = {B}"
        hits = []
        for s in range(e.seeds):
            cfg = resolve({**base, "batch_size": B, "lr": lr, "iters": e.max_iters, "eval_every": e.eval_every,
                           "seed": int(base.get("seed", 0)) + s, "stop_loss": e.target_loss})
            hits.append(first_hit(run(cfg, progress(label) if progress else None)["history"], e.target_loss))
        iters[B] = hits
    return iters


def replication(base: dict[str, Any], e: Experiment,
                progress: Callable[[str], Callable[[int, int], None] | None] | None = None) -> dict[str, Any]:
    from signsim.commands.diversity import DiversityOptions, diversity
    from signsim.config import resolve
    from signsim.diagnostics.diversity import predicted_speedup

    lr1 = resolve(base).lr
    rows = []
    for r in e.replicate:
        iters = iterations_to_target({**base, "replicate": r}, e, progress, f"replicate {r}")
        t1 = iters[1]
        reached = [h for h in t1 if h is not None]
        B_S = delta_S = None
        if reached:
            at = f"run:{reached[0]}"
            cfg = resolve({**base, "replicate": r, "batch_size": 1, "lr": lr1, "seed": int(base.get("seed", 0))})
            d = diversity(cfg, DiversityOptions(at=at))
            B_S, delta_S = d["B_S"], d["delta_S"]
        mean1 = float(np.mean(reached)) if len(reached) == len(t1) else None
        for B in e.batch_sizes:
            hits = iters[B]
            ok = all(h is not None for h in hits)
            mean_b = float(np.mean(hits)) if ok else None
            rows.append({
                "replicate": r, "B": B, "lr": min(B * lr1, e.lr_max) if e.lr_scaling == "linear" else lr1,
                "iters_to_target": mean_b, "runs_reaching_target": sum(h is not None for h in hits),
                "measured_speedup": mean1 / mean_b if (mean1 and mean_b) else None,
                "predicted_speedup": float(predicted_speedup(B, B_S)) if B_S is not None else None,
                "B_S": B_S, "delta_S": delta_S,
            })
    return {"signsim_version": __version__, "command": "diversity-replication", "base": base,
            "experiment": e.__dict__, "rows": rows}
