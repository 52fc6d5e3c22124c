"""``signsim run``: one simulated optimization run of M workers (docs/theory.md §2), as a plain results document."""

from __future__ import annotations

import platform
from collections.abc import Callable
from typing import Any

import numpy as np

from signsim import __version__
from signsim.interface.config import RunConfig
from signsim.interface.experiment_config import TargetRuns
from signsim.stages.plugins import declared

#: x_final is stored in the results for problems up to this dimension
MAX_STORED_DIM = 1000

SSDM_HETEROGENEOUS = (
    "ssdm on heterogeneous data ({problem}): SSDM's convergence proof needs every worker's stochastic gradient "
    "to be unbiased for the same global objective; the original claim for partitioned data was withdrawn in "
    "the correction (arXiv:1905.12938v6)"
)


def recorder(quantity, rows: list) -> Callable[[int, np.ndarray], None]:
    """A hook for the driver: appends the tracked ``quantity``'s row at x_k to ``rows``."""

    def record(k: int, x: np.ndarray) -> None:
        rows.append({"iter": k, **quantity.compute(k, x)})

    return record


def run(cfg: RunConfig, progress: Callable[[int, int], None] | None = None,
        on_start: Callable[[], None] | None = None) -> dict[str, Any]:
    """Simulate ``cfg``; with ``cfg.track_spb = N`` also estimate SPB every N iterations (``tracks.spb``), with
    ``cfg.track_diversity = N`` the gradient diversity (``tracks.diversity``): the quantities of
    ``signsim.diagnostics.tracking``, each recorded on its own schedule. ``on_start()`` is called once
    the run is built (its options, data and memory checked), just before the compiled loop starts."""
    from signsim import history, stages
    from signsim.diagnostics import tracking
    from signsim.engine import loop
    from signsim.engine.build import build
    from signsim.engine.driver import simulate

    problem = budget_eval_every(cfg)  # (with a budget: the history's spacing, set in cfg; the problem it built)
    built = build(cfg, problem)
    method, problem, model, params, settings = built.method, built.problem, built.model, built.params, built.settings
    warnings = [*problem.warnings, *([built.votes_hint] if built.votes_hint else [])]
    heterogeneity = None
    split = (problem.finite_sum is not None and problem.finite_sum.split.name != "shared") or problem.heterogeneous
    if split and not cfg.heterogeneity:  # (--no-heterogeneity: nothing measured, the generic warning only)
        if method.needs_homogeneous:
            warnings.append(SSDM_HETEROGENEOUS.format(problem=problem.name))
    elif split:
        from signsim.diagnostics.heterogeneity import measure, ssdm_warning

        heterogeneity = measure(problem, problem.x0, cfg.workers)
        if method.needs_homogeneous and (warning := ssdm_warning(heterogeneity, problem.name)):
            warnings.append(warning)
    elif method.needs_homogeneous and problem.heterogeneous:
        warnings.append(SSDM_HETEROGENEOUS.format(problem=problem.name))
    from signsim.interface.config import lr_theory

    theory = lr_theory(cfg)  # --lr theory: the step's theorem and constants (docs/theory.md §3.6)
    if theory is not None:
        warnings += theory["warnings"]
    if settings.byzantine and 2 * settings.byzantine >= cfg.workers:
        warnings.append(f"{cfg.byzantine} of {cfg.workers} workers are Byzantine: the majority-vote guarantee "
                        "needs fewer than half")
    engine = built.engine
    from signsim.engine.build import RUN_REDUCE, run_asked
    from signsim.problems.finite_sum import oracle_rows
    from signsim.resources import check_work, note, run_work

    work = run_work(cfg, problem.dim, problem.finite_sum is not None, oracle_rows(problem, cfg.batch_size))
    note(check_work(work, run_asked(cfg), RUN_REDUCE))
    recorded = history.recorded(settings.error_feedback.module.TRACK_ERROR, problem.classifier,
                                problem.finite_sum is not None, settings.system is not None)
    target = checked_target(cfg, recorded)
    quantities = tracking.requested(cfg, problem, model, params)
    tracks: dict[str, list[dict[str, Any]]] = {q.name: [] for q in quantities}
    hooks = [(q.every, recorder(q, tracks[q.name])) for q in quantities]
    if on_start is not None:
        on_start()
    out = simulate(engine, progress, hooks, keep_failed=True)
    warnings += [w for q in quantities for w in q.warnings()]

    S = settings.participants(cfg.workers)
    two_point = getattr(settings.estimator.module, "TWO_POINT", False)  # MARINA: rounds of every exact gradient
    bits = declared_bits(settings, cfg.workers, problem.dim)
    columns = [(history.index(c.key), c) for c in recorded]
    rows = [{c.field: int(row[i]) if c.integer else row[i] for i, c in columns} for row in out.history]
    last = rows[-1] if rows else {}
    final = {**last, "iters_done": out.iters_done, "bits_up": int(out.tally[loop.T_UP]),
             "bits_down": int(out.tally[loop.T_DOWN]), "rounds": out.iters_done,
             "grad_calls": int(out.tally[loop.T_CALLS]) if two_point else out.iters_done * S * settings.local_steps,
             "wall_time": out.wall_time,
             "reached_stop_loss": out.reached_target}
    doc: dict[str, Any] = {
        "signsim_version": __version__,
        "command": "run",
        "status": out.status,
        **({"error": out.error} if out.error else {}),
        "config": cfg.to_dict(),
        "stages": stages.describe(settings, cfg, problem.dim),
        "problem": problem.facts(),
        "bits_per_iter": measured_bits(bits, out.tally, out.iters_done),
        "rounds": {"local_steps": settings.local_steps, "clients_per_round": S, "workers": cfg.workers,
                   "local_lr": settings.lr, "server_lr": settings.server_lr,
                   **({"aggregated": settings.keep} if settings.keep is not None else {})},
        "warnings": warnings,
        "history": rows,
        "tracks": tracks,
        "final": final,
        "platform": {"python": platform.python_version(), "numpy": np.__version__},
    }
    if settings.system is not None:
        from signsim.engine import clock
        from signsim.system.report import report

        t = out.tally
        parts = {"compute": t[clock.T_COMPUTE], "upload": t[clock.T_UPLOAD], "download": t[clock.T_DOWNLOAD]}
        doc["system"] = report(settings.system, t[clock.T_TIME], parts, out.idle, out.iters_done)
    if target is not None:
        from signsim import targets

        doc["target"] = targets.reached(target, rows)
    doc["note"] = budget_note(doc)
    if theory is not None:
        doc["lr_theory"] = theory["record"]
    if heterogeneity is not None:
        doc["heterogeneity"] = heterogeneity  # at x_0
    if problem.dim <= MAX_STORED_DIM:
        doc["x_final"] = out.x
    return doc


#: a run stopped by its budget records about this many history rows (or more) up to where it stopped
BUDGET_ROWS = 100
#: ... as long as its K / eval-every stays within this many rows (the engine allocates the history for K / eval-every
#: rows up front, 128 bytes a row: 32 MB)
BUDGET_MAX_ROWS = 250_000


def checked_target(cfg: RunConfig, recorded):
    """The run's ``--target`` (None without one), refused before the run when the run does not record its metric."""
    if cfg.target is None:
        return None
    from signsim import targets
    from signsim.errors import InputError

    target = targets.parse(cfg.target)
    fields = {c.field for c in recorded}
    field = target.metric if target.metric != "accuracy" else "train_acc"
    if field not in fields:
        raise InputError(f"--target {cfg.target}: this run does not record {target.metric} (it records "
                         f"{', '.join(sorted(fields & set(targets.METRICS)))})")
    return target


def declared_bits(settings, workers: int, d: int):
    """The declared bits of one iteration of a run (``accounting.bits_per_iteration``, its upper bounds): S
    participants' messages, the estimator's extra bits, and for a two-point estimator (MARINA) its rounds in which
    every worker sends its exact gradient; of an asynchronous run's server step, B messages up and B models down."""
    from signsim import accounting

    two_point = getattr(settings.estimator.module, "TWO_POINT", False)
    extra = declared(settings.estimator.module, "extra_bits", d, result="pair")
    S = settings.participants(workers)
    buffer = settings.system.buffer if settings.system is not None else None
    if buffer is not None:  # a server step of an asynchronous run (docs/theory.md §14.6): B uploads, and the model
        # downloaded by each client started in their place
        up = accounting.bits_per_iteration(settings.compressor, settings.aggregate, buffer.size, d,
                                           settings.sign_zero, settings.tie, None, extra).up
        return accounting.BitsPerIteration(up=up, down=buffer.size * accounting.FLOAT_BITS * d)
    return accounting.bits_per_iteration(settings.compressor, settings.aggregate, S, d, settings.sign_zero,
                                         settings.tie, settings.down_compressor, extra, workers if two_point else 0,
                                         S if S < workers and settings.catch_up and not two_point else 0)


def budget_eval_every(cfg: RunConfig):
    """With a communication budget and the default --eval-every (not given: ``eval_every_derived``), set
    ``cfg.eval_every`` so that the history has about BUDGET_ROWS rows up to where the budget stops the run:
    every max(1, min(K // 100, max(n // BUDGET_ROWS, ceil(K / BUDGET_MAX_ROWS)))) iterations, n = ceil(budget / b)
    the iterations the budget allows at b, the declared bits of one iteration up + down (an upper bound where a
    message's size varies, so the run lasts at least n iterations). Returns the problem built for it (None without
    a budget), for ``build`` to reuse."""
    import math

    from signsim import accounting
    from signsim.engine.build import prepare
    from signsim.interface.config import eval_every_derived

    budget = accounting.budget_bits(cfg)
    if not math.isfinite(budget) or not eval_every_derived(cfg):
        return None
    _, problem, _, _, settings = prepare(cfg)
    per = declared_bits(settings, cfg.workers, problem.dim)
    allowed = math.ceil(budget / max(per.up + per.down, 1))
    cfg.eval_every = max(1, min(cfg.eval_every, max(allowed // BUDGET_ROWS, -(-cfg.iters // BUDGET_MAX_ROWS))))
    return problem


def budget_note(doc: dict[str, Any]) -> str | None:
    """The results' ``note``: with a budget the run did not reach (it stopped at --iters, or at --stop-loss,
    having sent less), what it spent of it; None otherwise."""
    from signsim import accounting

    budget = accounting.budget_bits(doc["config"])
    seconds = doc["config"].get("budget_seconds")
    if doc["status"] != "ok" or (budget == float("inf") and seconds is None):
        return None
    fin = doc["final"]
    why = "the stop loss" if fin.get("reached_stop_loss") else f"--iters {doc['config']['iters']}"
    if budget == float("inf"):  # a time budget (docs/theory.md §14.3)
        spent = doc["system"]["time"]
        return (f"budget not reached: stopped at {why} after {fin['iters_done']:,} iterations at {spent:.4g} "
                f"simulated seconds of the {seconds:.4g} s budget ({100 * spent / seconds:.3g}%); a larger --iters "
                "lets it spend the budget")
    spent = fin["bits_up"] + fin["bits_down"]
    return (f"budget not reached: stopped at {why} after {fin['iters_done']:,} iterations having sent "
            f"{spent / 8e6:.4g} MB of the {budget / 8e6:.4g} MB budget ({100 * spent / budget:.3g}%); a larger "
            "--iters lets it spend the budget")


def measured_bits(declared, tally, iters: int) -> dict[str, Any]:
    """Bits per iteration: ``up`` and ``down`` as declared (the formulas of ``signsim.accounting``: the dense
    upper bound for messages whose size varies), beside the run's measured ``up_mean`` and ``down_mean``
    (bits sent / iterations done) and ``up_worst`` (the most bits sent up in one iteration); the measured values
    are None before the first iteration (docs/theory.md §7)."""
    from signsim.engine import loop

    done = iters > 0
    return {"up": declared.up, "down": declared.down,
            "up_mean": float(tally[loop.T_UP]) / iters if done else None,
            "up_worst": int(tally[loop.T_UP_MAX]) if done else None,
            "down_mean": float(tally[loop.T_DOWN]) / iters if done else None}


def diverged_message(doc: dict[str, Any]) -> str | None:
    """The line a diverged run prints on stderr (None for any other status): where it stopped and its last
    recorded loss."""
    if doc.get("status") != "diverged":
        return None
    fin = doc["final"]
    label = f"{doc['label']}: " if doc.get("label") else ""
    loss = fin.get("loss")
    return (f"{label}the run diverged at iteration {fin['iters_done']} (loss {'NaN' if loss is None else f'{loss:.3g}'}"
            "): the loss, its gradient or the iterate became NaN or infinite; the history up to there is kept")


def first_hit(history: list[dict[str, Any]], target: float) -> int | None:
    for row in history:
        if row["loss"] is not None and row["loss"] <= target:
            return row["iter"]
    return None


class TargetRunsInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during ``iterations_to_target``: ``hits`` holds the batch sizes whose runs all
    finished (the interrupted run and the rest of its batch size are left out)."""

    def __init__(self, hits: dict[int, list[int | None]]):
        super().__init__()
        self.hits = hits


def iterations_to_target(base: dict[str, Any], e: TargetRuns, progress=None,
                         prefix: str = "") -> dict[int, list[int | None]]:
    """For each batch size B of ``e.batch_sizes``: the first recorded iteration at which mini-batch SGD (the
    configured run, step size scaled with B by ``e.lr_scaling``) reaches ``e.target_loss``, one per seed (None
    where a run does not reach it within ``e.max_iters``): the measurement of the experiments that compare
    speedups (replication, heuristics). Ctrl-C or SIGTERM stops all of it: ``TargetRunsInterrupted`` carries
    the batch sizes measured completely."""
    from signsim.interface.config import resolve

    lr1 = resolve(base).lr
    iters: dict[int, list[int | None]] = {}
    try:
        for B in e.batch_sizes:
            lr = min(B * lr1, e.lr_max) if e.lr_scaling == "linear" else lr1
            label = f"{prefix}, B = {B}" if prefix else f"B = {B}"
            hits = []
            for s in range(e.seeds):
                cfg = resolve({**base, "batch_size": B, "lr": lr, "iters": e.max_iters, "eval_every": e.eval_every,
                               "seed": int(base.get("seed", 0)) + s, "stop_loss": e.target_loss})
                doc = run(cfg, progress(label) if progress else None)
                if doc["status"] == "interrupted":  # the run kept its partial history: the experiment stops
                    raise KeyboardInterrupt
                hits.append(first_hit(doc["history"], e.target_loss))
            iters[B] = hits
    except KeyboardInterrupt:
        raise TargetRunsInterrupted(iters) from None
    return iters
