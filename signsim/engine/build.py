"""One place that assembles a run from its resolved config: problem, noise model, method stages, engine.

``signsim run``, the diagnostics' ``--at run:K`` and the tests all build through ``build(cfg)``, so a new
stage or problem is wired once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from signsim.errors import InputError
from signsim.stages.plugins import declared

#: from this many workers on, a run that qualifies is told about ``--votes binomial``
BINOMIAL_HINT_WORKERS = 1000


@dataclass
class Built:
    cfg: Any
    method: Any  # MethodSpec
    problem: Any  # ProblemInstance
    model: Any  # NoiseModel
    params: np.ndarray
    settings: Any  # engine.driver.Settings
    engine: Any  # engine.driver.Engine (or engine.binomial.BinomialEngine)
    #: a note for runs with many workers that ``--votes binomial`` would simulate exactly, much faster
    votes_hint: str | None = None


#: how to make a run of absurd work shorter (``resources.check_work``)
RUN_REDUCE = ("lower --iters (or --batch-size, --workers, --dim; a rule that compares every pair of messages, such as "
              "Krum or NNM, costs M^2 d a round), or give a --budget-mb or --stop-loss to stop earlier")


def run_asked(cfg) -> str:
    """The run as the user asked for it, for a work estimate's message."""
    from signsim.problems.sampling import is_full

    return (f"--iters {cfg.iters} with {cfg.workers} workers" + (f", --batch-size {cfg.batch_size}"
                                                                   if is_full(cfg.batch_size) or cfg.batch_size > 1
                                                                   else ""))


def prepare(cfg, problem=None) -> tuple[Any, Any, Any, np.ndarray, Any]:
    """Everything ``build`` checks before it allocates the engine: (method, problem, noise model, its
    parameters, settings) of ``cfg``, or InputError. ``problem`` reuses an instance already built from it (or
    from a config that differs only in options the problem does not read)."""
    from signsim import methods, noise, problems
    from signsim.engine.driver import Settings, check_settings, check_two_point
    from signsim.problems.finite_sum import oracle_rows
    from signsim.resources import check_run, check_work, run_work

    method = methods.get(cfg.method)
    if problem is None:
        check_run(cfg, cfg.dim or 1)  # before anything is allocated ...
        problem = problems.build(cfg, simulated=True)
    check_run(cfg, problem.dim)  # ... and with the dimension the data gave
    work = run_work(cfg, problem.dim, problem.finite_sum is not None, oracle_rows(problem, cfg.batch_size))
    check_work(work, run_asked(cfg), RUN_REDUCE)
    model, params = noise.for_config(cfg, problem.dim)
    settings = Settings.from_config(cfg, method, problem.dim)
    check_settings(settings, problem.dim)
    if getattr(settings.estimator.module, "TWO_POINT", False):  # MARINA: an exact local oracle
        check_two_point(settings, problem)
    check_budget(cfg, settings, problem.dim)
    from signsim.system.model import check as check_system

    check_system(settings.system, settings, cfg)
    if cfg.votes == "binomial":
        from signsim.engine import binomial

        reason = binomial.refusal(settings, problem, model, params, cfg.method)
        if reason is not None:
            raise InputError(reason)
    return method, problem, model, params, settings


def check_budget(cfg, settings, d: int) -> None:
    """A communication budget must allow at least one round: at least the fewest bits one iteration can send
    (``accounting.smallest_round_bits``, docs/theory.md §12)."""
    if settings.budget == np.inf:
        return
    from signsim import accounting
    from signsim.errors import shown

    S = settings.participants(cfg.workers)  # a round's participants send and receive (docs/theory.md §12)
    least = accounting.smallest_round_bits(settings.compressor, settings.aggregate, S, d, settings.sign_zero,
                                           settings.tie, settings.down_compressor,
                                           declared(settings.estimator.module, "extra_bits", d, result="pair"))
    if settings.budget < least:
        bits = cfg.budget_bits  # a count of bits, shown as one (10, not 10.0)
        given = (f"--budget-bits {int(bits) if float(bits).is_integer() and bits < 1e17 else shown(bits)}"
                 if bits is not None else f"--budget-mb {shown(cfg.budget_mb)}")
        raise InputError(f"{given}: below one round's bits (one iteration of {S} workers sends at least "
                         f"{least:,} bits = {least / 8e6:.4g} MB, up + down)")


def build(cfg, problem=None) -> Built:
    """Assemble ``cfg`` (a resolved RunConfig); ``problem`` reuses an instance already built from it."""
    from signsim.engine import ready
    from signsim.engine.driver import Engine

    ready.start()  # Numba's target context initialised beside the problem's set-up (its data, a model's probe)

    method, problem, model, params, settings = prepare(cfg, problem)
    if cfg.votes == "binomial":
        from signsim.engine import binomial

        engine = binomial.BinomialEngine(problem, model, params, settings, cfg.workers, cfg.iters, cfg.eval_every,
                                         cfg.seed)
        return Built(cfg, method, problem, model, params, settings, engine)
    hint = None
    if cfg.workers >= BINOMIAL_HINT_WORKERS:
        from signsim.engine import binomial

        if binomial.refusal(settings, problem, model, params, cfg.method) is None:
            hint = (f"with {cfg.workers:,} workers, --votes binomial draws the same vote counts in distribution "
                    "at O(d) cost per iteration (docs/theory.md §11)")
    if problem.A.size and problem.A.dtype != np.dtype(cfg.dtype):
        raise InputError(f"--dtype {cfg.dtype}: the problem given was built with {problem.A.dtype} data")
    engine = Engine(problem, model, params, settings, cfg.workers, cfg.iters, cfg.eval_every, cfg.seed,
                    dtype=cfg.dtype)
    return Built(cfg, method, problem, model, params, settings, engine, hint)
