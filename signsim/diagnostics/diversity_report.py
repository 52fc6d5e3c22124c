"""What the gradient-diversity diagnostics report at a point (docs/theory.md §6): which estimator applies,
its measurement, the fields that summarize it, and the same for transformed per-sample gradients (§10.4).
``diversity``, ``diversity --grads`` (``samples.diversity_document``), the heuristics experiment and the run's
diversity track (``tracking.DiversityTrack``) all compute their numbers here."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from signsim.errors import InputError

ESTIMATORS = ("auto", "exact", "population", "two-batch")

#: rows of per-sample gradients computed at a time (bounds memory at BLOCK x d floats)
BLOCK = 4096


def choose(problem, noise_name: str, requested: str) -> str:
    """The estimator of B_S for ``problem`` under noise ``noise_name``: ``requested``, or with "auto" the first
    that applies (exact for a finite sum without added noise, population for an exact-gradient oracle with
    additive noise, else two-batch); InputError when the requested one does not apply."""
    options = []
    if problem.finite_sum is not None and noise_name == "none":
        options.append("exact")
    if problem.exact_oracle and not problem.heterogeneous:
        options.append("population")
    if problem.external is None:  # (a PyTorch model's minibatch pairs would come from compiled oracles)
        options.append("two-batch")
    if requested == "auto":
        return options[0]
    if requested not in options:
        why = {"exact": "needs a finite-sum problem without added noise",
               "population": "needs an exact-gradient oracle with additive noise",
               "two-batch": "is not implemented for --model yet (use exact)"}[requested]
        raise InputError(f"--estimator {requested} does not apply to {problem.name} here: it {why}")
    return requested


def batches(cfg, small_batch: int | None = None, big_batch: int | None = None) -> tuple[int, int]:
    """The two-batch estimator's batch sizes: ``small_batch`` (default the run's batch size; 1 with ``--batch-size
    full``, whose oracle draws no minibatch: the estimator's pairs are a device for per-sample quantities, whatever
    their size, docs/theory.md §6) and ``big_batch`` (default max(2, M) times the small one)."""
    from signsim.problems.sampling import is_full

    small = small_batch or (1 if is_full(cfg.batch_size) else cfg.batch_size)
    big = big_batch or max(2, cfg.workers) * small
    if big <= small:
        raise InputError(f"--big-batch {big}: must exceed the small batch ({small})")
    return small, big


def measure(problem, model, params, x, cfg, method: str, pairs: int, small_batch: int | None = None,
            big_batch: int | None = None, salt: int = 0):
    """(Diversity at x, the two-batch estimator's details or {}) by ``method``; the two-batch estimator
    averages ``pairs`` pairs of minibatches of the sizes ``batches`` gives."""
    from signsim.diagnostics import diversity_estimators as est

    if method == "exact":
        return est.exact(problem, x)[0], {}
    if method == "population":
        return est.population(problem, model, params, x), {}
    small, big = batches(cfg, small_batch, big_batch)
    from signsim.noise.base import no_variance

    if (why := no_variance(model, params)) is not None:
        return est.undefined_two_batch(problem, why, small, big, pairs)
    return est.two_batch_estimate(problem, model.code, params, x, small, big, pairs, cfg.workers, cfg.seed, salt)


def summary(d, delta: float) -> dict[str, Any]:
    """The fields of diversity's document for the Diversity ``d``: Delta_S, B_S, B_simple, the largest batch
    with B <= delta B_S + 1 and the predicted speedups."""
    from signsim.diagnostics.diversity import batch_grid, largest_batch, predicted_speedup

    grid = batch_grid(d.n)
    warnings = d.out_of_range()
    if d.undefined or d.grad_sq < 0:  # no B_S to report: no finite variance, or ||G||^2 estimated below 0
        return {
            "n": d.n, "delta_S": None, "B_S": None, "inv_B_S": None, "B_simple": None, "stationary": False,
            "grad_sq": None if d.undefined and not np.isfinite(d.grad_sq) else d.grad_sq,
            "trace_sigma": None if d.undefined else d.trace, "sigma_note": d.undefined,
            "delta": delta, "largest_batch": None, "speedup": [], "warnings": warnings,
        }
    return {
        "n": d.n, "delta_S": d.delta_S, "B_S": d.B_S, "inv_B_S": d.inv_B_S, "B_simple": d.B_simple,
        "stationary": d.grad_sq == 0, "grad_sq": d.value("grad_sq"), "trace_sigma": d.value("trace"),
        "sigma_note": None,
        "delta": delta, "largest_batch": largest_batch(d.B_S, delta, d.n),
        "speedup": [{"B": b, "predicted": float(s)} for b, s in zip(grid, predicted_speedup(grid, d.B_S),
                                                                      strict=True)],
        "warnings": warnings,
    }


def gradient_blocks(problem, x: np.ndarray) -> Iterator[np.ndarray]:
    """The per-sample gradients of a finite-sum problem at x, BLOCK rows at a time."""
    fs = problem.finite_sum
    for start in range(0, fs.n, BLOCK):
        yield fs.per_sample_grads(x, np.arange(start, min(start + BLOCK, fs.n)))


def transforms_at(specs: list[str], sign_zero: str, d: int) -> list:
    """The transformations ``specs`` for gradients of dimension d (``transform_specs.parse``, then
    ``Transform.at_dim``): InputError naming the first bad one, before any work."""
    from signsim.diagnostics import transforms as tr

    return [tr.parse(spec, sign_zero).at_dim(d, spec) for spec in specs]


def transformed(blocks, specs: list[str], chosen: list, delta: float, seed: int = 0,
                draws: int | None = None) -> list[dict[str, Any]]:
    """For each transformation of the per-sample gradients (``blocks()`` yields them in row blocks; ``chosen`` the
    transformations of ``specs``, from ``transforms_at``): Delta_S, B_S and B_simple from the expectations of A and
    C over it (B_S^T = n E[A] / E[C], docs/theory.md §10.4), in closed form where the transformation has one, else
    from ``draws`` draws of the transformed set (the diagnostic's streams of ``seed``), and the predicted speedups,
    beside the raw gradients' (the row "none")."""
    from signsim.diagnostics import transforms as tr
    from signsim.diagnostics.diversity import batch_grid, largest_batch, predicted_speedup

    rows = []
    for spec, t in [("none", tr.parse("langevin:0")), *zip(specs, chosen, strict=True)]:
        t = tr.estimate(t, blocks(), tr.DRAWS if draws is None else draws, seed)
        grid = batch_grid(t.n)
        rows.append({**t.to_dict(), "transform": spec,
                     "largest_batch": largest_batch(t.B_simple + 1.0, delta, t.n),
                     "speedup": [{"B": b, "predicted": float(v)} for b, v in
                                 zip(grid, predicted_speedup(grid, t.B_simple + 1.0), strict=True)]})
    return rows
