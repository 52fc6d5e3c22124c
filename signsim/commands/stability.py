"""Stability and generalization against the batch size (Yin et al., arXiv 1706.05699, section on stability;
docs/theory.md §6.1): for each batch size B, coupled pairs of runs on training sets S and S' that differ in one
sample (``signsim.diagnostics.stability``) record ||w_S - w_S'|| and the loss difference on held-out points along
the run; every run spends the same number of gradient computations (``passes`` times n), so a run with batch B
takes passes n / (M B) iterations. The runs on S also give the generalization gap, test loss - training loss, at
their end. B_S is computed exactly at the start and at the end of the serial (B = 1) run on S.

The step size grows with the batch (``lr-scaling = "linear"``: gamma_B = min(B gamma_1, lr-max)) or stays.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from signsim import __version__
from signsim.errors import InputError
from signsim.interface.experiment_config import StabilityExperiment


def _mean_sd(values: list[float]) -> tuple[float | None, float | None]:
    v = np.array([x for x in values if x is not None and math.isfinite(x)], dtype=float)
    if v.size != len(values) or v.size == 0:
        return None, None
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0


def stability(base: dict[str, Any], e: StabilityExperiment,
              progress: Callable[[str], Callable[[int, int], None] | None] | None = None) -> dict[str, Any]:
    from dataclasses import replace

    from signsim import problems
    from signsim.diagnostics.diversity_estimators import exact
    from signsim.diagnostics.stability import coupled_runs, neighbour
    from signsim.interface.config import resolve
    from signsim.problems.sampling import P_NTEST, P_NTRAIN

    cfg1 = resolve(base)
    problem = problems.build(cfg1)
    if problem.finite_sum is None:
        raise InputError(f"--problem {problem.name}: the stability experiment needs a data problem (logistic, "
                         "least-squares, mlp)")
    n, n_test = int(problem.pi[P_NTRAIN]), int(problem.pi[P_NTEST])
    budget = e.passes * n
    M = cfg1.workers
    if budget < M * max(e.batch_sizes):
        raise InputError(f"[experiment]: passes = {e.passes} gives {budget} gradient computations, fewer than one "
                         f"iteration of {M} workers at B = {max(e.batch_sizes)}")
    B_S_init = exact(problem, problem.x0.astype(np.float64))[0].B_S
    curves, summary = [], []
    B_S_end = None
    for B in e.batch_sizes:
        lr = min(B * cfg1.lr, e.lr_max) if e.lr_scaling == "linear" else cfg1.lr
        iters = max(1, round(budget / (M * B)))
        tick = progress(f"B = {B}") if progress is not None else None
        finals: dict[str, list] = {k: [] for k in ("distance", "loss_diff_mean", "loss", "test_loss", "gap",
                                                   "test_acc")}
        statuses = []
        for p in range(e.pairs):
            seed = cfg1.seed + p
            rng = np.random.default_rng([cfg1.seed, p])
            position = int(rng.integers(n))
            replacement = None if e.replacement == "copy" else int(rng.integers(n_test))
            pair = neighbour(problem, position, replacement)
            cfg = resolve({**base, "batch_size": B, "lr": lr, "iters": iters, "seed": seed})
            cfg = replace(cfg, eval_every=cfg.iters)  # history at the start and the end only
            records, out_s, _ = coupled_runs(cfg, pair, max(1, cfg.iters // e.records))
            statuses.append(out_s.status)
            for r in records:
                curves.append({"B": B, "pair": p, "gradients": r["iter"] * M * B, **r})
            last = records[-1]
            finals["distance"].append(last["distance"])
            finals["loss_diff_mean"].append(last["loss_diff_mean"])
            row = _final_row(out_s, problem)
            for k in ("loss", "test_loss", "test_acc"):
                finals[k].append(row.get(k))
            finals["gap"].append(row["test_loss"] - row["loss"] if row.get("test_loss") is not None else None)
            if B == 1 and p == 0:
                B_S_end = exact(problem, out_s.x)[0].B_S
            if tick is not None:
                tick(p + 1, e.pairs)
        entry: dict[str, Any] = {"B": B, "lr": lr, "iters": iters, "gradients": iters * M * B,
                                 "statuses": sorted(set(statuses))}
        for k, values in finals.items():
            if k == "test_acc" and not problem.classifier:
                continue
            entry[k], entry[f"{k}_sd"] = _mean_sd(values)
        summary.append(entry)
    return {"signsim_version": __version__, "command": "diversity-stability", "base": base,
            "experiment": e.__dict__, "n": n, "n_test": n_test, "problem": problem.name,
            "B_S": {"init": _finite(B_S_init), "end_of_serial_run": _finite(B_S_end)},
            "rows": summary, "curves": curves}


def _finite(v: float | None) -> float | None:
    return float(v) if v is not None and math.isfinite(v) else None


def _final_row(out, problem) -> dict[str, Any]:
    """The last history row's loss, test loss and test accuracy (``signsim.history``'s columns)."""
    from signsim import history

    h = out.history[-1]
    row = {"loss": float(h[history.index("loss")]), "test_loss": float(h[history.index("test_loss")])}
    if problem.classifier:
        row["test_acc"] = float(h[history.index("test_acc")])
    return {k: (v if math.isfinite(v) else None) for k, v in row.items()}
