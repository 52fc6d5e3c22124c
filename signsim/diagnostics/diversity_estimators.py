"""How diversity quantities are obtained for a problem (docs/theory.md §6): exact for finite sums (one pass,
O(d) memory), from the noise model for synthetic problems with exact oracles (tr Sigma = sum sigma_i^2),
and McCandlish's two-batch estimator for anything (required where neither applies).

The two-batch estimator draws each batch as one call of the worker's own oracle. Under shared and shard
sampling E|G_b|^2 = |E g_hat|^2 + tr Sigma / b and it estimates |E g_hat|^2 and tr Sigma; under split-batch
sampling the group is drawn once per minibatch, Var G_b = V_between + V_within / b, and the estimates are
|E g_hat|^2 + tr V_between and tr V_within (docs/theory.md §9)."""

from __future__ import annotations

import math

import numpy as np

from signsim.diagnostics.diversity import Diversity, from_sums, two_batch

TWO_BATCH_CHUNKS = 16


def exact(problem, x: np.ndarray, rows: np.ndarray | None = None) -> Diversity:
    """Over all training rows, or over ``rows`` (one worker's shard)."""
    from signsim.diagnostics.kernels import diversity_sums

    fs = problem.finite_sum
    if problem.external is not None:  # a PyTorch model: its per-sample gradients' moments (docs/theory.md §13)
        idx = np.arange(fs.n) if rows is None else np.asarray(rows, dtype=np.int64)
        _, _, total, squares = problem.external.group_moments(x, idx)
        return from_sums(idx.size, float(squares.sum()), total), total
    r = np.zeros(0, dtype=np.int64) if rows is None else np.ascontiguousarray(rows, dtype=np.int64)
    A, total = diversity_sums(problem, np.ascontiguousarray(x, dtype=np.float64), r, 0, fs.n)
    return from_sums(fs.n if rows is None else len(rows), A, total), total


def population(problem, model, noise_params: np.ndarray, x: np.ndarray) -> Diversity:
    """Exact-gradient oracle plus additive noise of std sigma_i on coordinate i: tr Sigma = sum_i sigma_i^2
    (infinite for heavy-tailed noise without a variance)."""
    from signsim.diagnostics.estimators import true_gradient
    from signsim.noise.base import no_variance, sigma_vector

    g = true_gradient(problem, x)
    return Diversity(None, None, float(g @ g), float(np.sum(sigma_vector(model, noise_params, problem.dim) ** 2)),
                     no_variance(model, noise_params))


def undefined_two_batch(problem, why: str, small: int, big: int, pairs: int) -> tuple[Diversity, dict]:
    """The two-batch estimator under noise without a finite variance: E|G_b|^2 is infinite for every b, so both
    of its estimates are infinity minus infinity; nothing is drawn and every estimate is None (``why``)."""
    n = problem.finite_sum.n if problem.finite_sum is not None else None
    info = {"small": small, "big": big, "pairs": pairs, "mean_sq_small": None, "mean_sq_big": None}
    return Diversity(n, None, math.nan, math.nan, why), info


def two_batch_estimate(problem, noise_code: int, noise_params: np.ndarray, x: np.ndarray, small: int, big: int,
                       pairs: int, workers: int, seed: int, salt: int = 0) -> tuple[Diversity, dict]:
    from numba.typed import List

    from signsim.diagnostics.kernels import two_batch_sums
    from signsim.seeding import diagnostic_streams

    gens = List(diagnostic_streams(seed, TWO_BATCH_CHUNKS, salt))
    sums = two_batch_sums(problem, np.ascontiguousarray(x, dtype=np.float64), noise_code, noise_params, small, big,
                          workers, gens, pairs)
    ms, mb = sums / pairs
    grad_sq, trace = two_batch(ms, mb, small, big)
    n = problem.finite_sum.n if problem.finite_sum is not None else None
    info = {"small": small, "big": big, "pairs": pairs, "mean_sq_small": ms, "mean_sq_big": mb}
    return Diversity(n, None, grad_sq, trace), info
