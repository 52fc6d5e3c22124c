"""``signsim run``: one simulated optimization run of M workers (math.md §2), as a plain results document."""

from __future__ import annotations

import platform
from collections.abc import Callable
from typing import Any

import numpy as np

from signsim import __version__
from signsim.config import RunConfig

#: x_final is stored in the results for problems up to this dimension
MAX_STORED_DIM = 1000

SSDM_HETEROGENEOUS = (
    "ssdm on heterogeneous data ({problem}): SSDM's convergence proof needs every worker's stochastic gradient "
    "to be unbiased for the same global objective; the original claim for partitioned data was withdrawn in "
    "the correction (arXiv:1905.12938v6)"
)


#: Monte Carlo samples per tracked point when no exact or closed form applies
TRACK_SAMPLES = 200


def spb_tracker(problem, model, params, cfg: RunConfig, sink: list):
    """A hook for the driver: at x_k, the fraction of coordinates (with g_i != 0) where SPB holds, min rho and
    the rho-norm (exact or closed form where they apply, else Monte Carlo with TRACK_SAMPLES samples)."""
    from signsim.commands.check_spb import SpbOptions, spb_quantities
    from signsim.diagnostics import spb
    from signsim.diagnostics.estimators import choose

    method = choose(problem, model, cfg.batch_size, "auto")
    options = SpbOptions(samples=TRACK_SAMPLES)

    def track(k: int, x: np.ndarray) -> None:
        est, ver = spb_quantities(problem, model, params, x, cfg, options, method, salt=k + 1)
        nz = est.grad != 0
        sink.append({"iter": k, "method_of_estimate": method,
                     "spb_fraction": float(np.mean(ver.status[nz] == "holds")) if nz.any() else None,
                     "rho_min": float(np.min(est.rho[nz])) if nz.any() else None,
                     "rho_norm": spb.rho_norm(est.grad, est.rho),
                     "rho_M_norm": spb.rho_M_norm(est.grad, est.rho, cfg.workers),
                     "l1_norm": float(np.abs(est.grad).sum()),
                     "l2_norm": float(np.linalg.norm(est.grad)), "verdict": ver.verdict})

    return track


#: batch pairs per tracked point for the two-batch estimator
TRACK_PAIRS = 256


def diversity_tracker(problem, model, params, cfg: RunConfig, sink: list):
    """A hook: B_S at x_k, exact for finite sums, otherwise McCandlish's two-batch estimator from M simulated
    worker minibatches (small batch tau, big batch max(2, M) tau), averaged over TRACK_PAIRS pairs before
    the ratio."""
    from signsim.commands.diversity import DiversityOptions, choose, measure

    method = choose(problem, model.name, "auto")
    options = DiversityOptions(pairs=TRACK_PAIRS)

    def track(k: int, x: np.ndarray) -> None:
        d, _ = measure(problem, model, params, x, cfg, options, method, salt=10_000_000 + k)
        sink.append({"iter": k, "method_of_estimate": method, "B_S": d.B_S, "inv_B_S": d.inv_B_S,
                     "delta_S": d.delta_S, "B_simple": d.B_simple})

    return track


def problem_info(problem) -> dict[str, Any]:
    info = {"name": problem.name, "dim": problem.dim, "f_star": problem.f_star,
            "x_star_known": problem.x_star is not None, "heterogeneous": problem.heterogeneous}
    fs = problem.finite_sum
    if fs is not None:
        info.update(n_train=fs.n, n_test=int(problem.pi[2]), features=int(problem.pi[3]),
                    shard_sizes=np.diff(fs.split.ptr).tolist())
    return info


def run(cfg: RunConfig, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Simulate ``cfg``; with ``cfg.track_spb = N`` also estimate SPB every N iterations (``tracks.spb``), with
    ``cfg.track_diversity = N`` the gradient diversity (``tracks.diversity``)."""
    track_spb, track_diversity = cfg.track_spb, cfg.track_diversity
    from signsim import accounting, methods, noise, problems
    from signsim.engine import loop
    from signsim.engine.driver import Engine, Settings, simulate
    from signsim.resources import check_run

    method = methods.get(cfg.method)
    check_run(cfg, cfg.dim or 1)  # before anything is allocated ...
    problem = problems.build(cfg)
    check_run(cfg, problem.dim)  # ... and with the dimension the data gave
    model, params = noise.parse(cfg.noise or "none")
    settings = Settings.from_config(cfg, method)
    warnings = []
    if method.needs_homogeneous and problem.heterogeneous:
        warnings.append(SSDM_HETEROGENEOUS.format(problem=problem.name))
    if settings.byzantine and 2 * settings.byzantine >= cfg.workers:
        warnings.append(f"{cfg.byzantine} of {cfg.workers} workers are Byzantine: the majority-vote guarantee "
                        "needs fewer than half")
    engine = Engine(problem, model, params, settings, cfg.workers, cfg.iters, cfg.eval_every, cfg.seed)
    tracks: dict[str, list[dict[str, Any]]] = {}
    hooks = []
    if track_spb:
        tracks["spb"] = []
        hooks.append((track_spb, spb_tracker(problem, model, params, cfg, tracks["spb"])))
    if track_diversity:
        tracks["diversity"] = []
        hooks.append((track_diversity, diversity_tracker(problem, model, params, cfg, tracks["diversity"])))
    out = simulate(engine, progress, hooks)

    bits = accounting.bits_per_iteration(settings.compressor, settings.aggregate, cfg.workers, problem.dim,
                                         settings.sign_zero, settings.tie)
    h = out.history
    history = []
    for row in h:
        k = int(row[loop.H_ITER])
        entry = {"iter": k, "loss": row[loop.H_LOSS], "grad_norm": row[loop.H_GRAD_L2],
                 "grad_norm_l1": row[loop.H_GRAD_L1], "distance": row[loop.H_DIST],
                 "bits_up": k * bits.up, "bits_down": k * bits.down}
        if cfg.method == "ef-signsgd":
            entry["ef_error_norm"] = row[loop.H_EXTRA]
        if problem.classifier:
            entry["train_acc"] = row[loop.H_TRAIN_ACC]
            entry["test_acc"] = row[loop.H_TEST_ACC]
        history.append(entry)
    last = history[-1] if history else {}
    final = {**last, "iters_done": out.iters_done, "bits_up": out.iters_done * bits.up,
             "bits_down": out.iters_done * bits.down, "wall_time": out.wall_time,
             "reached_stop_loss": out.reached_target}
    doc: dict[str, Any] = {
        "signsim_version": __version__,
        "command": "run",
        "status": out.status,
        "config": cfg.to_dict(),
        "problem": problem_info(problem),
        "bits_per_iter": {"up": bits.up, "down": bits.down},
        "warnings": warnings,
        "history": history,
        "tracks": tracks,
        "final": final,
        "platform": {"python": platform.python_version(), "numpy": np.__version__},
    }
    if problem.dim <= MAX_STORED_DIM:
        doc["x_final"] = out.x
    return doc
