"""Binomial confidence intervals, one-sided binomial p-values and multiple-testing corrections (docs/theory.md §1).

Vectorized over coordinates; the tests compare them with ``scipy.stats.binomtest``."""

from __future__ import annotations

import numpy as np


def wilson(k: np.ndarray, n: int, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for a proportion k/n at the given two-sided confidence."""
    from scipy.stats import norm

    z = norm.ppf(0.5 + confidence / 2)
    p = np.asarray(k, dtype=float) / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo = np.where(p == 0, 0.0, np.clip(centre - half, 0, 1))  # exact ends, free of rounding
    hi = np.where(p == 1, 1.0, np.clip(centre + half, 0, 1))
    return lo, hi


def clopper_pearson(k: np.ndarray, n: int, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact (Clopper-Pearson) interval from beta quantiles."""
    from scipy.stats import beta

    k = np.asarray(k, dtype=float)
    a = (1 - confidence) / 2
    with np.errstate(invalid="ignore"):
        lo = np.where(k > 0, beta.ppf(a, k, n - k + 1), 0.0)
        hi = np.where(k < n, beta.ppf(1 - a, k + 1, n - k), 1.0)
    return lo, hi


INTERVALS = {"wilson": wilson, "clopper-pearson": clopper_pearson}


def one_sided_pvalues(k: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """For each coordinate: p-value of H0 rho <= 1/2 (evidence that SPB holds there) and of H0 rho >= 1/2
    (evidence that it is violated), from the binomial(n, 1/2) tails."""
    from scipy.stats import binom

    k = np.asarray(k)
    return binom.sf(k - 1, n, 0.5), binom.cdf(k, n, 0.5)


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values: sorted ascending, adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))."""
    p = np.asarray(p, dtype=float)
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    adj = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adj
    return out


def bonferroni(p: np.ndarray) -> np.ndarray:
    return np.minimum(1.0, np.asarray(p, dtype=float) * np.asarray(p).size)


CORRECTIONS = {"holm": holm, "bonferroni": bonferroni, "none": lambda p: np.asarray(p, dtype=float)}
