"""``signsim diversity``: gradient diversity, the batch-size bound and the noise scale at a point
(docs/theory.md §6); the numbers and their fields come from ``signsim.diagnostics.diversity_report``."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from signsim import __version__
from signsim.errors import InputError
from signsim.interface.config import RunConfig


@dataclass
class DiversityOptions:
    at: str = "init"
    delta: float = 1.0
    estimator: str = "auto"
    pairs: int = 2000
    small_batch: int | None = None  # default: the run's batch size
    big_batch: int | None = None  # default: max(2, M) times the small batch
    #: transformations of the per-sample gradients (dropout:p, langevin:s, or a compressor's spec)
    transform: list[str] | None = None
    #: draws of the transformed set for a transformation without closed forms (Monte Carlo)
    transform_draws: int = 200
    pairs_given: bool = False  # --pairs was given (it is used by the two-batch estimator only)
    draws_given: bool = False  # --transform-draws was given (it is used by sampled transformations only)

    @classmethod
    def build(cls, **given: Any) -> DiversityOptions:
        from signsim.interface.options import check_fields

        o = cls(**{k: v for k, v in given.items() if v is not None})
        check_fields(o, "diversity")  # each against its row of signsim.interface.options (range and choices)
        o.draws_given = given.get("transform_draws") is not None
        if o.draws_given and not o.transform:
            raise InputError(f"--transform-draws {o.transform_draws}: has no effect without --transform")
        if o.transform:
            from signsim.diagnostics.transforms import parse

            for spec in o.transform:
                parse(spec)
        return o


def diversity(cfg: RunConfig, o: DiversityOptions, split_given: bool = False) -> dict[str, Any]:
    from signsim import noise, problems
    from signsim.diagnostics import diversity_estimators as est
    from signsim.diagnostics.diversity import from_sums
    from signsim.diagnostics.diversity_report import choose, gradient_blocks, measure, summary, transformed
    from signsim.diagnostics.point import resolve_point

    # the two-batch estimator's options with another one: refused when the user chose it (before any work), said
    # when --estimator auto did
    given = (("--small-batch", o.small_batch), ("--big-batch", o.big_batch),
             ("--pairs", o.pairs if o.pairs_given else None))
    two_batch = [(flag, value) for flag, value in given if value is not None]
    if two_batch and o.estimator not in ("auto", "two-batch"):
        flag, value = two_batch[0]
        raise InputError(f"{flag} {value}: has no effect with --estimator {o.estimator} (only the two-batch "
                         f"estimator draws minibatches); drop {flag} or choose --estimator two-batch")
    problem = problems.build(cfg)
    model, params = noise.for_config(cfg, problem.dim)
    method = choose(problem, model.name, o.estimator)
    unused = [] if method == "two-batch" else [
        f"{flag} {value} is not used: --estimator auto chose the {method} estimator (only the two-batch one draws "
        "minibatches)" for flag, value in two_batch]
    if method == "two-batch":  # its pairs of a small and a big minibatch of per-sample gradients over d coordinates
        from signsim.diagnostics.diversity_report import batches
        from signsim.resources import check_work, note

        small, big = batches(cfg, o.small_batch, o.big_batch)
        note(check_work(float(o.pairs) * (small + big) * problem.dim,
                        f"--pairs {o.pairs} (minibatches of {small} and {big} over dimension {problem.dim})",
                        "lower --pairs (or --small-batch, --big-batch)"))
    chosen = _transforms(o, cfg, problem, unused) if o.transform else None
    x, where = resolve_point(o.at, problem, cfg)
    with np.errstate(over="ignore", invalid="ignore"):  # gradients past the floats: the error below says so
        d, info = measure(problem, model, params, x, cfg, method, o.pairs, o.small_batch, o.big_batch)
    if not d.undefined and not all(np.isfinite(v) for v in (d.grad_sq, d.trace) + ((d.A,) if d.A is not None else ())):
        at = o.at or "init"
        point = at if where == at else f"{at} ({where})"
        raise InputError(f"--at {point}: the gradients there are not finite (they overflow a float: the point, "
                         f"--x0 or the data's values are too large for {cfg.problem}); no "
                         "diversity to report")
    doc: dict[str, Any] = {
        "signsim_version": __version__, "command": "diversity", "config": cfg.to_dict(),
        "options": {k: v for k, v in asdict(o).items() if k not in ("pairs_given", "draws_given")},
        "problem": problem.facts(),
        "point": where, "method_of_estimate": method,
        **summary(d, o.delta),
    }
    doc["warnings"] = [*problem.warnings, *(doc.get("warnings") or []), *unused]
    if info:
        doc["two_batch"] = info
    from signsim.diagnostics.estimators import sampling
    from signsim.diagnostics.heterogeneity import measure as heterogeneity

    samp = sampling(problem, cfg.workers, cfg.batch_size)
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
    if chosen is not None:
        doc["transforms"] = transformed(lambda: gradient_blocks(problem, x), o.transform, chosen, o.delta, cfg.seed,
                                        o.transform_draws)
    return doc


def _transforms(o: DiversityOptions, cfg: RunConfig, problem, unused: list[str]) -> list:
    """The transformations of ``--transform`` at the problem's dimension, checked before any work (top-k:K needs
    K <= d), with the work of the sampled ones estimated (a note, or InputError past a year); a --transform-draws
    that none of them uses is added to ``unused``."""
    from signsim.diagnostics.diversity_report import transforms_at
    from signsim.diagnostics.transforms import has_closed_form
    from signsim.resources import check_work, note

    fs = problem.finite_sum
    if fs is None:
        raise InputError(f"--transform: needs per-sample gradients, which {problem.name} does not have "
                         "(a data problem, or --grads)")
    chosen = transforms_at(o.transform, cfg.sign_zero, problem.dim)
    sampled = [spec for spec, t in zip(o.transform, chosen, strict=True) if not has_closed_form(t)]
    if sampled:
        note(check_work(float(o.transform_draws) * len(sampled) * fs.n * problem.dim,
                        f"--transform-draws {o.transform_draws} ({', '.join(sampled)}: {len(sampled)} x "
                        f"{o.transform_draws} draws of {fs.n} gradients of dimension {problem.dim})",
                        "lower --transform-draws"))
    elif o.draws_given:
        unused.append(f"--transform-draws {o.transform_draws} is not used: every --transform has closed forms")
    return chosen
