"""Gradient diversity, the batch-size bound and the gradient noise scale (docs/theory.md §6).

For a finite sum over n samples, A = sum_j ||grad f_j||^2 and C = ||sum_j grad f_j||^2:
Delta_S = A / C, B_S = n Delta_S (infinite at a stationary point: 1/B_S = 0 is reported), and the noise scale
B_simple = tr(Sigma) / ||G||^2 = B_S - 1 exactly. Predicted speedup of batch B over B = 1:
B B_S / (B + B_S - 1); mini-batch SGD keeps serial SGD's guarantees while B <= delta B_S + 1 (Yin et al.;
constants reconstructed in docs/theory.md §6).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass
class Diversity:
    n: int | None  # None: an infinite population (synthetic noise)
    A: float | None  # sum of squared per-sample norms (finite sums)
    grad_sq: float  # ||G||^2 of the mean gradient
    trace: float  # tr(Sigma): per-sample covariance trace (normalized by 1/n)
    #: why tr(Sigma) does not exist (noise without a finite variance, ``noise.base.no_variance``): then B_simple,
    #: B_S, 1/B_S and Delta_S are None (docs/theory.md §6, §10.1)
    undefined: str | None = None
    #: A, grad_sq and trace are in units of unit^2 (``signsim.diagnostics.scaling``; 1 but for gradients of
    #: extreme magnitude); the ratios below do not depend on it
    unit: float = 1.0

    def value(self, name: str) -> float:
        """A, grad_sq or trace in the gradients' own units (infinite where that exceeds the float range)."""
        v = getattr(self, name)
        return v * self.unit * self.unit

    @property
    def B_simple(self) -> float | None:
        if self.undefined:
            return None
        return self.trace / self.grad_sq if self.grad_sq > 0 else math.inf

    @property
    def B_S(self) -> float | None:
        return None if self.undefined else self.B_simple + 1.0

    @property
    def inv_B_S(self) -> float | None:
        if self.undefined:
            return None
        return 0.0 if math.isinf(self.B_S) else 1.0 / self.B_S

    @property
    def delta_S(self) -> float | None:
        return None if self.n is None or self.undefined else self.B_S / self.n

    def out_of_range(self) -> list[str]:
        """Estimates outside their possible range (a negative tr Sigma or ||G||^2: possible for the two-batch
        estimator, a difference of noisy averages), one sentence each; empty for exact quantities."""
        out = []
        if not self.undefined and self.trace < 0:
            out.append(f"the estimate of tr(Sigma) is negative ({self.trace:.4g}), outside its range (>= 0): the "
                       "two averages it subtracts are too noisy; B_simple and B_S computed from it are not meaningful "
                       "(more --pairs, or batches further apart)")
        if not self.undefined and self.grad_sq < 0:
            out.append(f"the estimate of ||G||^2 is negative ({self.grad_sq:.4g}), outside its range (>= 0): the "
                       "two averages it subtracts are too noisy; B_simple and B_S are not reported (more --pairs)")
        return out


def from_sums(n: int, A: float, total: np.ndarray, unit: float = 1.0) -> Diversity:
    """Exact quantities from A = sum ||grad f_j||^2 and the vector sum_j grad f_j over n samples (A in units
    of unit^2, the sum in units of unit)."""
    grad_sq = float(total @ total) / n**2
    trace = max(A / n - grad_sq, 0.0)
    return Diversity(n, A, grad_sq, trace, unit=unit)


def two_batch(mean_sq_small: float, mean_sq_big: float, small: int, big: int) -> tuple[float, float]:
    """McCandlish's unbiased estimates from averaged |G_b|^2 and |G_B|^2 (b < B), averaged before the ratio:
    |G|^2 ~ (B |G_B|^2 - b |G_b|^2)/(B - b), tr Sigma ~ (|G_b|^2 - |G_B|^2)/(1/b - 1/B)."""
    grad_sq = (big * mean_sq_big - small * mean_sq_small) / (big - small)
    trace = (mean_sq_small - mean_sq_big) / (1.0 / small - 1.0 / big)
    return grad_sq, trace


def predicted_speedup(B: np.ndarray | float, B_S: float) -> np.ndarray:
    """B B_S / (B + B_S - 1); tends to B as B_S -> infinity."""
    B = np.asarray(B, dtype=float)
    if math.isinf(B_S):
        return B
    return B * B_S / (B + B_S - 1)


def largest_batch(B_S: float, delta: float, limit: int | None) -> int | float:
    """The largest integer B with B <= delta B_S + 1 (capped at ``limit`` where given)."""
    bound = float(delta) * float(B_S) + 1  # Python floats: a product past 1.8e308 is inf, without a warning
    if math.isinf(bound):  # an infinite B_S, or a product too large for a float (delta up to 1e308)
        return limit if limit is not None else math.inf
    if math.isnan(bound):  # no B_S (the callers report non-finite gradients before this)
        return None
    b = math.floor(bound)
    return min(b, limit) if limit is not None else b


def batch_grid(limit: int | None, top: int = 2**20) -> list[int]:
    """1, 2, 4, ... up to n (or ``top`` for an infinite population)."""
    end = limit if limit is not None else top
    out, b = [], 1
    while b <= end:
        out.append(b)
        b *= 2
    return out
