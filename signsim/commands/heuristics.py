"""Diversity-raising heuristics (Yin et al., arXiv 1706.05699, section on dropout, Langevin dynamics and
quantization; docs/theory.md §6): B_S of the raw per-sample gradients at a point against B_S of the same
gradients after each transformation (closed forms, ``signsim.diagnostics.transforms``), the predicted speedups
with and without it, and, for Langevin noise, the measured iterations-to-target of mini-batch SGD over B with
and without the transformation.

Langevin dynamics adds N(0, s^2 I) to every per-sample gradient; the mean over a minibatch of B samples then
carries N(0, s^2 I / B), exactly what ``--noise gaussian:s`` adds to a minibatch gradient, so the measured runs
need nothing beyond the engine's own noise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from signsim import __version__
from signsim.commands.replication import TargetRuns, check_option
from signsim.errors import InputError


@dataclass
class HeuristicsExperiment(TargetRuns):
    transforms: list[str] = field(default_factory=lambda: ["dropout:0.5", "langevin:1", "sto-sign", "qsgd:4",
                                                           "natural"])
    at: str = "init"
    measure: str | None = None  # a langevin:s transformation to measure iterations-to-target with, or none


def parse(raw: dict[str, Any], where: str) -> HeuristicsExperiment:
    from signsim.diagnostics.transforms import parse as parse_transform

    e = HeuristicsExperiment()
    known = {f.replace("_", "-") for f in HeuristicsExperiment.__dataclass_fields__}
    for key, value in raw.items():
        if key.replace("_", "-") not in known:
            raise InputError(f"{where}: unknown key '{key}' (known: kind, {', '.join(sorted(known))})")
        name = key.replace("-", "_")
        default = getattr(e, name)
        if name == "transforms":
            if not (isinstance(value, list) and value and all(isinstance(v, str) for v in value)):
                raise InputError(f"{where}: 'transforms' must be a non-empty list of strings")
            for v in value:
                parse_transform(v)
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


def heuristics(base: dict[str, Any], e: HeuristicsExperiment,
               progress: Callable[[str], Callable[[int, int], None] | None] | None = None) -> dict[str, Any]:
    from signsim import problems
    from signsim.commands.replication import iterations_to_target
    from signsim.config import resolve
    from signsim.diagnostics import transforms as tr
    from signsim.diagnostics.diversity import batch_grid, predicted_speedup
    from signsim.diagnostics.diversity_report import gradient_blocks
    from signsim.diagnostics.point import resolve_point

    cfg = resolve(base)
    problem = problems.build(cfg)
    if problem.finite_sum is None:
        raise InputError(f"--problem {problem.name}: the heuristics experiment needs a finite-sum (data) problem")
    x, where = resolve_point(e.at, problem, cfg)
    grid = batch_grid(problem.finite_sum.n)
    raw = tr.closed_form(tr.parse("langevin:0"), gradient_blocks(problem, x))  # s = 0: the raw gradients
    rows = [{"transform": "none", **_summary(raw, grid, predicted_speedup)}]
    for spec in e.transforms:
        t = tr.closed_form(tr.parse(spec, cfg.sign_zero), gradient_blocks(problem, x))
        rows.append({"transform": spec, **_summary(t, grid, predicted_speedup)})
    doc: dict[str, Any] = {"signsim_version": __version__, "command": "diversity-heuristics", "base": base,
                           "experiment": e.__dict__, "point": where, "n": raw.n, "rows": rows}
    if e.measure is not None:
        s = float(e.measure.split(":", 1)[1])
        measured = []
        for label, noise in (("none", "none"), (e.measure, f"gaussian:{s:g}")):
            iters = iterations_to_target({**base, "noise": noise}, e, progress, label)
            t1 = iters[1]
            for B in e.batch_sizes:
                mean_b = _mean(iters[B])
                measured.append({"transform": label, "B": B, "iters_to_target": mean_b,
                                 "runs_reaching_target": sum(h is not None for h in iters[B]),
                                 "measured_speedup": _mean(t1) / mean_b if (_mean(t1) and mean_b) else None})
        doc["measured"] = measured
    return doc


def _mean(hits: list[int | None]) -> float | None:
    return float(np.mean(hits)) if hits and all(h is not None for h in hits) else None


def _summary(t, grid, predicted_speedup) -> dict[str, Any]:
    return {"B_S": t.B_S, "delta_S": t.delta_S, "B_simple": t.B_simple, "method_of_estimate": t.method,
            "speedup": [{"B": b, "predicted": float(v)}
                        for b, v in zip(grid, predicted_speedup(grid, t.B_simple + 1.0), strict=True)]}
