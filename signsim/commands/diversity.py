"""``signsim diversity``: gradient diversity, the batch-size bound and the noise scale at a point
(docs/theory.md §6)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from signsim import __version__
from signsim.config import RunConfig
from signsim.errors import InputError

ESTIMATORS = ("auto", "exact", "population", "two-batch")


@dataclass
class DiversityOptions:
    at: str = "init"
    delta: float = 1.0
    estimator: str = "auto"
    pairs: int = 2000
    small_batch: int | None = None  # default: the run's batch size
    big_batch: int | None = None  # default: max(2, M) times the small batch
    #: transformations of the per-sample gradients (dropout:p, langevin:s, sign, sto-sign, qsgd:S, natural)
    transform: list[str] | None = None

    @classmethod
    def build(cls, **given: Any) -> DiversityOptions:
        o = cls(**{k: v for k, v in given.items() if v is not None})
        if not (o.delta > 0 and math.isfinite(o.delta)):
            raise InputError(f"--delta {o.delta}: must be a finite number > 0")
        if o.estimator not in ESTIMATORS:
            raise InputError(f"--estimator {o.estimator}: choose from {', '.join(ESTIMATORS)}")
        if not 2 <= o.pairs <= 10**9:
            raise InputError(f"--pairs {o.pairs}: must lie between 2 and 10^9")
        for name in ("small_batch", "big_batch"):
            v = getattr(o, name)
            if v is not None and not 1 <= v <= 2**31 - 1:
                raise InputError(f"--{name.replace('_', '-')} {v}: must lie between 1 and 2^31 - 1")
        if o.transform:
            from signsim.diagnostics.transforms import parse

            for spec in o.transform:
                parse(spec)
        return o


def choose(problem, noise_name: str, requested: str) -> str:
    options = []
    if problem.finite_sum is not None and noise_name == "none":
        options.append("exact")
    if problem.exact_oracle and not problem.heterogeneous:
        options.append("population")
    options.append("two-batch")
    if requested == "auto":
        return options[0]
    if requested not in options:
        why = {"exact": "needs a finite-sum problem without added noise",
               "population": "needs an exact-gradient oracle with additive noise"}[requested]
        raise InputError(f"--estimator {requested} does not apply to {problem.name} here: it {why}")
    return requested


def batches(cfg: RunConfig, o: DiversityOptions) -> tuple[int, int]:
    small = o.small_batch or cfg.batch_size
    big = o.big_batch or max(2, cfg.workers) * small
    if big <= small:
        raise InputError(f"--big-batch {big}: must exceed the small batch ({small})")
    return small, big


def measure(problem, model, params, x, cfg: RunConfig, o: DiversityOptions, method: str, salt: int = 0):
    from signsim.diagnostics import diversity_estimators as est

    if method == "exact":
        return est.exact(problem, x)[0], {}
    if method == "population":
        return est.population(problem, model, params, x), {}
    small, big = batches(cfg, o)
    return est.two_batch_estimate(problem, model.code, params, x, small, big, o.pairs, cfg.workers, cfg.seed, salt)


def summary(d, delta: float) -> dict[str, Any]:
    from signsim.diagnostics.diversity import batch_grid, largest_batch, predicted_speedup

    grid = batch_grid(d.n)
    return {
        "n": d.n, "delta_S": d.delta_S, "B_S": d.B_S, "inv_B_S": d.inv_B_S, "B_simple": d.B_simple,
        "stationary": d.grad_sq == 0, "grad_sq": d.grad_sq, "trace_sigma": d.trace,
        "delta": delta, "largest_batch": largest_batch(d.B_S, delta, d.n),
        "speedup": [{"B": b, "predicted": float(s)} for b, s in zip(grid, predicted_speedup(grid, d.B_S),
                                                                      strict=True)],
    }


def diversity(cfg: RunConfig, o: DiversityOptions, split_given: bool = False) -> dict[str, Any]:
    from signsim import noise, problems
    from signsim.diagnostics import diversity_estimators as est
    from signsim.diagnostics.diversity import from_sums
    from signsim.diagnostics.point import resolve_point

    problem = problems.build(cfg)
    model, params = noise.for_config(cfg, problem.dim)
    method = choose(problem, model.name, o.estimator)
    x, where = resolve_point(o.at, problem, cfg)
    d, info = measure(problem, model, params, x, cfg, o, method)
    doc: dict[str, Any] = {
        "signsim_version": __version__, "command": "diversity", "config": cfg.to_dict(),
        "options": asdict(o), "problem": problem.facts(), "point": where, "method_of_estimate": method,
        **summary(d, o.delta),
    }
    if info:
        doc["two_batch"] = info
    from signsim.diagnostics.estimators import sampling
    from signsim.diagnostics.heterogeneity import measure as heterogeneity

    samp = sampling(problem, cfg.workers)
    doc["sampling"] = {"scheme": samp.scheme, "description": samp.description}
    doc["heterogeneity"] = heterogeneity(problem, x, cfg.workers)
    fs = problem.finite_sum
    if method == "exact" and fs is not None and fs.split.mode != 0:
        workers, means = [], []
        for m in range(fs.split.groups):
            rows = fs.split.group(m)
            dm, total = est.exact(problem, x, rows)
            workers.append({"worker": m, "n": len(rows), "delta_S": dm.delta_S, "B_S": dm.B_S,
                            "inv_B_S": dm.inv_B_S})
            means.append(total / len(rows))
        G = np.array(means)
        between = from_sums(len(means), float(np.sum(G * G)), G.sum(axis=0))
        doc["workers"] = workers
        doc["between_workers"] = {"groups": len(means), "delta": between.delta_S, "B": between.B_S,
                                  "inv_B": between.inv_B_S}
    if o.transform:
        if fs is None:
            raise InputError(f"--transform: needs per-sample gradients, which {problem.name} does not have "
                             "(a data problem, or --grads)")
        from signsim.commands.heuristics import gradient_blocks

        doc["transforms"] = transformed(lambda: gradient_blocks(problem, x), o.transform, cfg.sign_zero, o.delta)
    return doc


def transformed(blocks, specs: list[str], sign_zero: str, delta: float) -> list[dict[str, Any]]:
    """For each transformation of the per-sample gradients (``blocks()`` yields them in row blocks): Delta_S,
    B_S and B_simple in expectation over it (closed forms, docs/theory.md §10.4) and the predicted speedups,
    beside the raw gradients' (the row "none")."""
    from signsim.diagnostics import transforms as tr
    from signsim.diagnostics.diversity import batch_grid, largest_batch, predicted_speedup

    rows = []
    for spec in ["none", *specs]:
        t = tr.closed_form(tr.parse("langevin:0" if spec == "none" else spec, sign_zero), blocks())
        grid = batch_grid(t.n)
        rows.append({**t.to_dict(), "transform": spec,
                     "largest_batch": largest_batch(t.B_simple + 1.0, delta, t.n),
                     "speedup": [{"B": b, "predicted": float(v)} for b, v in
                                 zip(grid, predicted_speedup(grid, t.B_simple + 1.0), strict=True)]})
    return rows
