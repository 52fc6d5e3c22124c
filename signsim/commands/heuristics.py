"""Diversity-raising heuristics (Yin et al., arXiv 1706.05699, section on dropout, Langevin dynamics and
quantization; docs/theory.md §6, §10.4): B_S of the raw per-sample gradients at a point against B_S of the same
gradients after each transformation (closed forms where it has them, else sampled:
``signsim.diagnostics.transforms``), the predicted speedups with and without it, and, for Langevin noise, the
measured iterations-to-target of mini-batch SGD over B with and without the transformation.

Langevin dynamics adds N(0, s^2 I) to every per-sample gradient; the mean over a minibatch of B samples then
carries N(0, s^2 I / B), exactly what ``--noise gaussian:s`` adds to a minibatch gradient, so the measured runs
need nothing beyond the engine's own noise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from signsim import __version__
from signsim.errors import InputError
from signsim.interface.experiment_config import HeuristicsExperiment


def heuristics(base: dict[str, Any], e: HeuristicsExperiment,
               progress: Callable[[str], Callable[[int, int], None] | None] | None = None) -> dict[str, Any]:
    """The closed-form rows, one per transformation, and with ``measure`` the measured iterations-to-target.
    Ctrl-C or SIGTERM stops it within about a second: the document then keeps the rows computed and the batch
    sizes measured completely, and has status ``interrupted``."""
    from signsim import problems
    from signsim.diagnostics import transforms as tr
    from signsim.diagnostics.diversity import batch_grid, predicted_speedup
    from signsim.diagnostics.diversity_report import gradient_blocks, transforms_at
    from signsim.diagnostics.point import resolve_point
    from signsim.interface.config import resolve
    from signsim.interface.interrupts import acknowledge

    cfg = resolve(base)
    problem = problems.build(cfg)
    if problem.finite_sum is None:
        raise InputError(f"--problem {problem.name}: the heuristics experiment needs a finite-sum (data) problem")
    doc: dict[str, Any] = {"signsim_version": __version__, "command": "diversity-heuristics", "status": "ok",
                           "base": base, "experiment": e.__dict__, "point": None, "n": None, "rows": []}
    rows = doc["rows"]
    if e.measure is not None:
        doc["measured"] = []
    chosen = transforms_at(e.transforms, cfg.sign_zero, problem.dim)  # a plugin's compressor is known by now
    try:
        x, doc["point"] = resolve_point(e.at, problem, cfg)
        grid = batch_grid(problem.finite_sum.n)
        raw = tr.closed_form(tr.parse("langevin:0"), gradient_blocks(problem, x))  # s = 0: the raw gradients
        doc["n"] = raw.n
        rows.append({"transform": "none", **_summary(raw, grid, predicted_speedup)})
        for spec, t in zip(e.transforms, chosen, strict=True):
            t = tr.estimate(t, gradient_blocks(problem, x), tr.DRAWS, cfg.seed)
            rows.append({"transform": spec, **_summary(t, grid, predicted_speedup)})
        if e.measure is not None:
            _measure(base, e, progress, doc["measured"])
    except KeyboardInterrupt:
        acknowledge()
        doc["status"] = "interrupted"
    return doc


def _measure(base: dict[str, Any], e: HeuristicsExperiment, progress, measured: list[dict[str, Any]]) -> None:
    """Append the measured rows to ``measured``: iterations-to-target over B without and with Langevin noise
    (on an interrupt, the batch sizes measured completely, then the interrupt is raised again)."""
    from signsim.commands.run import iterations_to_target

    s = float(e.measure.split(":", 1)[1])
    for label, noise in (("none", "none"), (e.measure, f"gaussian:{s:g}")):
        stop = None
        try:
            iters = iterations_to_target({**base, "noise": noise}, e, progress, label)
        except KeyboardInterrupt as interrupt:
            stop, iters = interrupt, getattr(interrupt, "hits", {})
        t1 = iters.get(1, [])
        for B in e.batch_sizes:
            if B not in iters:
                continue
            mean_b = _mean(iters[B])
            measured.append({"transform": label, "B": B, "iters_to_target": mean_b,
                             "runs_reaching_target": sum(h is not None for h in iters[B]),
                             "measured_speedup": _mean(t1) / mean_b if (_mean(t1) and mean_b) else None})
        if stop is not None:
            raise stop


def _mean(hits: list[int | None]) -> float | None:
    return float(np.mean(hits)) if hits and all(h is not None for h in hits) else None


def _summary(t, grid, predicted_speedup) -> dict[str, Any]:
    interval = {"B_S_interval": list(t.interval), "draws": t.draws} if t.interval is not None else {}
    return {"B_S": t.B_S, "delta_S": t.delta_S, "B_simple": t.B_simple, "method_of_estimate": t.method, **interval,
            "speedup": [{"B": b, "predicted": float(v)}
                        for b, v in zip(grid, predicted_speedup(grid, t.B_simple + 1.0), strict=True)]}
