"""Iterations of mini-batch SGD to a target against the batch size on a problem whose diversity is exactly B_S
(docs/theory.md §6.3): past B_S the iterations stop falling in proportion to B, whatever the step size.

The problem is least squares on ``synthetic:sparse:...:values=ones:noise=0``: K groups of identical samples on
disjoint coordinates, so B_S = n / (conflict + 1) = K at every w away from the optimum, and f* = 0. For a batch of
B samples drawn with replacement and step gamma, each group's residual r_t becomes (1 - gamma s c_t / B) r_t with
c_t ~ Bin(B, 1/K), independently across iterations, so E f_k = q^k f(x_0) with

    q(gamma, B) = 1 - 2 gamma s / K + gamma^2 s^2 (K - 1 + B) / (B K^2)               [derived here, §6.3]

minimized by gamma* = B K / (s (K - 1 + B)) = (1/s) B B_S / (B + B_S - 1), where q* = (K - 1) / (K - 1 + B). The
experiment runs, for each B, the steps ``lr-factors`` times gamma_B = lr B B_S / (B + B_S - 1) (lr = 1/s is
gamma*), counts the iterations until f <= target-ratio f(x_0) (mean over seeds), and reports the fewest over the
factors beside ln(1 / target-ratio) / ln(1 / q), the iterations at which E f_k reaches the target.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from signsim import __version__
from signsim.errors import InputError
from signsim.interface.experiment_config import LowerBoundExperiment


def q_factor(gamma: float, B: int, K: int, s: int) -> float:
    """E f_{k+1} / E f_k on the construction (module docstring); inf for a step so large that its square overflows
    (products, not ``**``, which raised OverflowError for lr-factors = [1e300])."""
    gs = gamma * s
    return 1.0 - 2.0 * gs / K + gs * gs * (K - 1 + B) / (B * K * K)


def predicted_iterations(gamma: float, B: int, K: int, s: int, ratio: float) -> float | None:
    """The iterations k at which E f_k = q^k f(x_0) first reaches ratio f(x_0) (None when q >= 1)."""
    q = q_factor(gamma, B, K, s)
    if not 0 <= q < 1:
        return None
    return 0.0 if q == 0 else math.ceil(math.log(ratio) / math.log(q))


def lower_bound(base: dict[str, Any], e: LowerBoundExperiment,
                progress: Callable[[str], Callable[[int, int], None] | None] | None = None) -> dict[str, Any]:
    from signsim import problems
    from signsim.commands.run import first_hit, run
    from signsim.data.sparse import parse as parse_sparse
    from signsim.diagnostics.diversity_estimators import exact
    from signsim.interface.config import resolve

    cfg = resolve(base)
    if cfg.problem != "least-squares" or not str(cfg.data).startswith("synthetic:sparse"):
        raise InputError("[experiment] kind = \"lower-bound\": needs problem = \"least-squares\" on "
                         "data = \"synthetic:sparse:...:values=ones\" (the construction of docs/theory.md §6.3)")
    settings = parse_sparse(cfg.data)
    if settings["values"] != "ones" or settings["noise"] != 0 or settings["labels"] != "linear":
        raise InputError(f"--data {cfg.data}: the lower-bound construction needs values=ones, labels=linear and "
                         "noise=0 (identical samples in each group)")
    if cfg.standardize or cfg.intercept or cfg.test_fraction != 0 or cfg.l2 != 0:
        raise InputError("[experiment] kind = \"lower-bound\": set standardize = false, intercept = false, "
                         "test-fraction = 0 and l2 = 0 (the construction's samples, unchanged)")
    problem = problems.build(cfg)
    x0 = problem.x0.astype(np.float64)
    B_S = float(exact(problem, x0)[0].B_S)
    f0 = float(problem.loss_ref(x0))
    target = e.target_ratio * f0
    K, s = settings["n"] // (settings["conflict"] + 1), settings["s"]
    rows = []
    for B in e.batch_sizes:
        gamma_B = cfg.lr * B * B_S / (B + B_S - 1)
        tick = progress(f"B = {B}") if progress is not None else None
        per_factor = []
        for i, factor in enumerate(e.lr_factors):
            lr = factor * gamma_B
            hits = []
            for seed in range(e.seeds):
                run_cfg = resolve({**base, "batch_size": B, "lr": lr, "iters": e.max_iters, "eval_every": 1,
                                   "seed": cfg.seed + seed, "stop_loss": target})
                hits.append(first_hit(run(run_cfg)["history"], target))
            reached = [h for h in hits if h is not None]
            per_factor.append({"factor": factor, "lr": lr, "runs_reaching_target": len(reached),
                               "iters_to_target": float(np.mean(hits)) if len(reached) == len(hits) else None,
                               "predicted": predicted_iterations(lr, B, K, s, e.target_ratio)})
            if tick is not None:
                tick(i + 1, len(e.lr_factors))
        done = [p for p in per_factor if p["iters_to_target"] is not None]
        best = min(done, key=lambda p: p["iters_to_target"]) if done else None
        gamma_opt = B * K / (s * (K - 1 + B))
        rows.append({"B": B, "steps": per_factor,
                     "best_iters": best["iters_to_target"] if best else None,
                     "best_factor": best["factor"] if best else None,
                     "predicted_optimal": predicted_iterations(gamma_opt, B, K, s, e.target_ratio),
                     "gradients": best["iters_to_target"] * B if best else None})
    t1 = rows[0]["best_iters"] if rows and rows[0]["B"] == 1 else None
    for r in rows:
        r["speedup"] = t1 / r["best_iters"] if (t1 and r["best_iters"]) else None
    return {"signsim_version": __version__, "command": "diversity-lower-bound", "base": base,
            "experiment": e.__dict__, "n": problem.finite_sum.n, "groups": K, "s": s, "B_S": B_S, "f0": f0,
            "target": target, "rows": rows}
