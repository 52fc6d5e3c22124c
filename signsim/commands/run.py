"""``signsim run``: one simulated optimization run of M workers (docs/theory.md §2), as a plain results document."""

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
    """A hook for the driver: at x_k, the fraction of coordinates (with g_i != 0) where SPB holds, min rho,
    the rho-norm E<g, sign g_hat> under --sign-zero and the rho_M-norm E<g, vote> from each worker's own law
    (docs/theory.md §9); exact or closed form where they apply, else Monte Carlo with TRACK_SAMPLES
    samples per distinct worker oracle."""
    from signsim.commands.check_spb import SpbOptions, spb_quantities, vote_quantities
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
                     "rho_norm": spb.inner_product(est.grad, est.margin),
                     "rho_M_norm": vote_quantities(est, cfg)["rho_M_norm"],
                     "sampling": est.laws.sampling.scheme,
                     **per_worker_track(est, cfg),
                     "l1_norm": float(np.abs(est.grad).sum()),
                     "l2_norm": float(np.linalg.norm(est.grad)), "verdict": ver.verdict})

    return track


def per_worker_track(est, cfg: RunConfig) -> dict:
    """Workers that differ: each worker's min rho_i and E<g, sign g_hat_m> at the tracked point."""
    if est.laws.sampling.distinct == 1:
        return {}
    from signsim.diagnostics.estimators import per_worker

    rows = per_worker(est.laws, cfg.sign_zero, cfg.byzantine)
    return {"workers_rho_min": [r["rho_min"] for r in rows], "workers_rho_norm": [r["rho_norm"] for r in rows]}


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


def run(cfg: RunConfig, progress: Callable[[int, int], None] | None = None,
        on_start: Callable[[], None] | None = None) -> dict[str, Any]:
    """Simulate ``cfg``; with ``cfg.track_spb = N`` also estimate SPB every N iterations (``tracks.spb``), with
    ``cfg.track_diversity = N`` the gradient diversity (``tracks.diversity``). ``on_start()`` is called once
    the run is built (its options, data and memory checked), just before the compiled loop starts."""
    track_spb, track_diversity = cfg.track_spb, cfg.track_diversity
    from signsim import accounting, history, stages
    from signsim.build import build
    from signsim.engine import loop
    from signsim.engine.driver import simulate

    built = build(cfg)
    method, problem, model, params, settings = built.method, built.problem, built.model, built.params, built.settings
    warnings = [built.votes_hint] if built.votes_hint else []
    heterogeneity = None
    if (problem.finite_sum is not None and problem.finite_sum.split.name != "shared") or problem.heterogeneous:
        from signsim.diagnostics.heterogeneity import measure, ssdm_warning

        heterogeneity = measure(problem, problem.x0, cfg.workers)
        if method.needs_homogeneous and (warning := ssdm_warning(heterogeneity, problem.name)):
            warnings.append(warning)
    elif method.needs_homogeneous and problem.heterogeneous:
        warnings.append(SSDM_HETEROGENEOUS.format(problem=problem.name))
    if settings.byzantine and 2 * settings.byzantine >= cfg.workers:
        warnings.append(f"{cfg.byzantine} of {cfg.workers} workers are Byzantine: the majority-vote guarantee "
                        "needs fewer than half")
    engine = built.engine
    tracks: dict[str, list[dict[str, Any]]] = {}
    hooks = []
    if track_spb:
        tracks["spb"] = []
        hooks.append((track_spb, spb_tracker(problem, model, params, cfg, tracks["spb"])))
    if track_diversity:
        tracks["diversity"] = []
        hooks.append((track_diversity, diversity_tracker(problem, model, params, cfg, tracks["diversity"])))
    if on_start is not None:
        on_start()
    out = simulate(engine, progress, hooks)

    bits = accounting.bits_per_iteration(settings.compressor, settings.aggregate, cfg.workers, problem.dim,
                                         settings.sign_zero, settings.tie, settings.compressor_param)
    columns = [(history.index(c.key), c) for c in history.recorded(cfg.error_feedback == "ef", problem.classifier)]
    rows = [{c.field: int(row[i]) if c.integer else row[i] for i, c in columns} for row in out.history]
    last = rows[-1] if rows else {}
    final = {**last, "iters_done": out.iters_done, "bits_up": int(engine.tally[loop.T_UP]),
             "bits_down": int(engine.tally[loop.T_DOWN]), "wall_time": out.wall_time,
             "reached_stop_loss": out.reached_target}
    doc: dict[str, Any] = {
        "signsim_version": __version__,
        "command": "run",
        "status": out.status,
        "config": cfg.to_dict(),
        "stages": stages.describe(settings, cfg, problem.dim),
        "problem": problem.facts(),
        "bits_per_iter": {"up": bits.up, "down": bits.down},
        "warnings": warnings,
        "history": rows,
        "tracks": tracks,
        "final": final,
        "platform": {"python": platform.python_version(), "numpy": np.__version__},
    }
    if heterogeneity is not None:
        doc["heterogeneity"] = heterogeneity  # at x_0
    if problem.dim <= MAX_STORED_DIM:
        doc["x_final"] = out.x
    return doc
