"""Gradient diversity of transformed per-sample gradients (docs/theory.md §6, "diversity-raising transformations").

A transformation T acts on each per-sample gradient g_j independently (fresh randomness per sample):
``dropout:p`` (inverted dropout, T_i = g_i b_i / (1 - p), b_i ~ Bernoulli(1 - p)), ``langevin:s``
(T = g + s N(0, I)), ``sign`` (sign g, sign(0) by the --sign-zero policy), ``sto-sign`` (+1 with probability
1/2 + g_i / (2 ||g||_2), else -1), ``qsgd:S`` (QSGD with S levels) and ``natural`` (natural compression).

With mu_j = E T(g_j) and v_j = E||T(g_j) - mu_j||^2, in expectation over T (Yin et al. compare ratios of
expectations for dropout and Langevin dynamics):

    A_T = sum_j E||T(g_j)||^2 = sum_j (||mu_j||^2 + v_j)
    C_T = E||sum_j T(g_j)||^2 = ||sum_j mu_j||^2 + sum_j v_j       (independence across samples)
    Delta_T = A_T / C_T,   B_S^T = n Delta_T.

The gradient noise scale of SGD run on the transformed gradients (one sample J drawn uniformly, then T) is
B_simple^T = tr Cov(T(g_J)) / ||E T(g_J)||^2 = n A_T / ||sum_j mu_j||^2 - 1; without a transformation
it equals B_S - 1, and the predicted speedup B (B_simple + 1) / (B + B_simple) uses it.

Each transformation has E||T(g)||^2 and E T(g) in closed form (``moments``); ``monte_carlo`` samples the
transformation itself and is the independent check (and the estimator offered for any transformation).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from signsim.errors import InputError
from signsim.interface.transform_specs import NAMES, Transform, parse  # noqa: F401 (the specs' syntax, re-exported)


def moments(t: Transform, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Closed forms for the rows g_j of G (k x d): (E||T(g_j)||^2 per row, E T(g_j) as a k x d array)."""
    G = np.asarray(G, dtype=np.float64)
    d = G.shape[1]
    sq = np.einsum("ij,ij->i", G, G)
    if t.name == "dropout":  # E b^2/(1-p)^2 = 1/(1-p)
        return sq / (1.0 - t.param), G
    if t.name == "langevin":
        return sq + d * t.param**2, G
    if t.name == "sign":
        mean = np.sign(G)
        zeros = np.count_nonzero(G == 0, axis=1)
        if t.sign_zero == "plus":
            return np.full(len(G), float(d)), np.where(G == 0, 1.0, mean)
        if t.sign_zero == "zero":
            return (d - zeros).astype(float), mean
        return np.full(len(G), float(d)), mean  # random: a fair +-1, mean 0, square 1
    if t.name == "sto-sign":
        norm = np.sqrt(sq)
        mean = np.divide(G, norm[:, None], out=np.zeros_like(G), where=norm[:, None] > 0)
        return np.full(len(G), float(d)), mean
    if t.name == "qsgd":  # unbiased; coordinate variance (||g||/s)^2 q (1 - q), q the fractional level
        s = t.param
        norm = np.sqrt(sq)
        r = np.divide(s * np.abs(G), norm[:, None], out=np.zeros_like(G), where=norm[:, None] > 0)
        q = r - np.floor(r)
        return sq + sq / s**2 * np.sum(q * (1.0 - q), axis=1), G
    if t.name == "natural":  # unbiased; a value t in [2^a, 2^(a+1)) has variance (2^(a+1) - t)(t - 2^a)
        a = np.abs(G)
        low = _power_below(a)
        return sq + np.sum((2.0 * low - a) * (a - low), axis=1), G
    raise InputError(f"--transform {t.spec}: no closed form")  # pragma: no cover - parse admits only NAMES


def _power_below(a: np.ndarray) -> np.ndarray:
    """2^floor(log2 a) for a > 0 (exact, via frexp), 0 where a = 0."""
    _, exp = np.frexp(a)  # a = mant 2^exp with mant in [1/2, 1)
    return np.where(a > 0, np.ldexp(1.0, exp - 1), 0.0)


def sample(t: Transform, G: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw of T applied to each row of G, fresh randomness per row and coordinate."""
    G = np.asarray(G, dtype=np.float64)
    if t.name == "dropout":
        return G * (rng.random(G.shape) >= t.param) / (1.0 - t.param)
    if t.name == "langevin":
        return G + t.param * rng.standard_normal(G.shape)
    if t.name == "sign":
        fill = {"plus": np.ones(G.shape), "zero": np.zeros(G.shape)}.get(t.sign_zero)
        if fill is None:
            fill = np.where(rng.random(G.shape) < 0.5, -1.0, 1.0)
        return np.where(G > 0, 1.0, np.where(G < 0, -1.0, fill))
    if t.name == "sto-sign":
        norm = np.linalg.norm(G, axis=1, keepdims=True)
        p = 0.5 + 0.5 * np.divide(G, norm, out=np.zeros_like(G), where=norm > 0)
        return np.where(rng.random(G.shape) < p, 1.0, -1.0)
    if t.name == "qsgd":
        s = t.param
        norm = np.linalg.norm(G, axis=1, keepdims=True)
        r = np.divide(s * np.abs(G), norm, out=np.zeros_like(G), where=norm > 0)
        level = np.floor(r) + (rng.random(G.shape) < r - np.floor(r))
        return norm * np.sign(G) * level / s
    if t.name == "natural":
        a = np.abs(G)
        _, exp = np.frexp(a)
        low = np.where(a > 0, np.ldexp(np.ones_like(a), exp - 1), 0.0)
        up = rng.random(G.shape) < np.divide(a - low, low, out=np.zeros_like(a), where=low > 0)
        return np.sign(G) * np.where(up, 2.0 * low, low)
    raise InputError(f"--transform {t.spec}: cannot sample")  # pragma: no cover


@dataclass
class TransformedDiversity:
    transform: str
    n: int
    A: float  # sum_j E||T(g_j)||^2
    C: float  # E||sum_j T(g_j)||^2
    mean_sq: float  # ||sum_j E T(g_j)||^2
    method: str  # closed-form | monte-carlo
    interval: tuple[float, float] | None = None  # for B_S^T, Monte Carlo only
    #: A, C and mean_sq are in units of unit^2 (``closed_form``; the ratios below do not depend on it)
    unit: float = 1.0

    @property
    def delta_S(self) -> float:
        return self.A / self.C if self.C > 0 else math.inf

    @property
    def B_S(self) -> float:
        return self.n * self.delta_S

    @property
    def B_simple(self) -> float:
        return self.n * self.A / self.mean_sq - 1.0 if self.mean_sq > 0 else math.inf

    def to_dict(self) -> dict:
        out = {"transform": self.transform, "method_of_estimate": self.method, "n": self.n,
               "delta_S": self.delta_S, "B_S": self.B_S, "B_simple": self.B_simple}
        if self.interval is not None:
            out["B_S_interval"] = list(self.interval)
        return out


def blocks_of(G: np.ndarray | Iterable[np.ndarray]) -> Iterable[np.ndarray]:
    if isinstance(G, np.ndarray):
        yield G
    else:
        yield from G


#: transformations whose output does not scale with the gradient (T(c g) = T(g) for c > 0); every other one is
#: homogeneous of degree 1 (T(c g) = c T(g) in law, Langevin with its scale s times c too, natural compression
#: for c a power of two)
SCALE_FREE = ("sign", "sto-sign")


def closed_form(t: Transform, G: np.ndarray | Iterable[np.ndarray]) -> TransformedDiversity:
    """Exact A_T, C_T from per-sample gradients (an n x d array or an iterable of row blocks). The sums are
    kept in a power-of-two unit (``signsim.diagnostics.scaling``), so gradients of any finite magnitude give
    finite sums; the ratios reported do not depend on it."""
    from dataclasses import replace

    from signsim.diagnostics.scaling import Units, unit_for

    n, A, V, total = 0, 0.0, 0.0, None
    units = Units()
    for block in blocks_of(G):
        block = np.asarray(block, dtype=np.float64)
        largest = float(np.max(np.abs(block))) if block.size else 0.0
        if t.name in SCALE_FREE:  # the block's own unit: only its norms need it
            unit, tu = unit_for(largest), t
        else:
            r = units.fit(max(largest, t.param or 0.0) if t.name == "langevin" else largest)
            A, V = A * r * r, V * r * r
            total = total * r if total is not None and r != 1.0 else total
            unit = units.unit
            tu = replace(t, param=t.param / unit) if t.name == "langevin" and unit != 1.0 else t
        sq, mean = moments(tu, block / unit if unit != 1.0 else block)
        A += float(sq.sum())
        V += float(sq.sum() - np.einsum("ij,ij->", mean, mean))
        s = mean.sum(axis=0)
        total = s if total is None else total + s
        n += len(block)
    mean_sq = float(total @ total)
    return TransformedDiversity(t.spec, n, A, mean_sq + V, mean_sq, "closed-form",
                                unit=1.0 if t.name in SCALE_FREE else units.unit)


def monte_carlo(t: Transform, G: np.ndarray, draws: int, seed: int, z: float = 1.96) -> TransformedDiversity:
    """Draw the transformed set ``draws`` times; A_T and C_T are sample means, ||sum mu_j||^2 the squared norm of
    the averaged sum minus its variance over ``draws`` (unbiased). The interval for B_S^T is the delta method's
    z-interval of the ratio of the two means."""
    rng = np.random.default_rng(seed)
    G = np.asarray(G, dtype=np.float64)
    n = len(G)
    a = np.empty(draws)
    c = np.empty(draws)
    sums = np.empty((draws, G.shape[1]))
    for r in range(draws):
        T = sample(t, G, rng)
        a[r] = np.einsum("ij,ij->", T, T)
        sums[r] = T.sum(axis=0)
        c[r] = sums[r] @ sums[r]
    A, C = a.mean(), c.mean()
    mean_sum = sums.mean(axis=0)
    mean_sq = float(mean_sum @ mean_sum - np.sum(sums.var(axis=0, ddof=1)) / draws)
    cov = np.cov(a, c) / draws
    ratio = A / C
    se = math.sqrt(max(cov[0, 0] / C**2 - 2 * A * cov[0, 1] / C**3 + A**2 * cov[1, 1] / C**4, 0.0))
    return TransformedDiversity(t.spec, n, float(A), float(C), mean_sq, "monte-carlo",
                                (n * (ratio - z * se), n * (ratio + z * se)))
