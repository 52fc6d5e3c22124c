"""Gradient diversity of transformed per-sample gradients (docs/theory.md §6, "diversity-raising transformations",
and §10.4).

A transformation T acts on each per-sample gradient g_j independently (fresh randomness per sample): ``dropout:p``
(inverted dropout, T_i = g_i b_i / (1 - p), b_i ~ Bernoulli(1 - p)), ``langevin:s`` (T = g + s N(0, I)), or any
compressor C (``sign``, ``sto-sign``, ``qsgd:S``, ``natural``, ``top-k:K``, a plugin's, ...): T = C, the stage
module itself (``signsim.stages.registry``), sign(0) by the --sign-zero policy.

With mu_j = E T(g_j) and v_j = E||T(g_j) - mu_j||^2, in expectation over T (Yin et al. compare ratios of
expectations for dropout and Langevin dynamics):

    A_T = sum_j E||T(g_j)||^2 = sum_j (||mu_j||^2 + v_j)
    C_T = E||sum_j T(g_j)||^2 = ||sum_j mu_j||^2 + sum_j v_j       (independence across samples)
    Delta_T = A_T / C_T,   B_S^T = n Delta_T.

The gradient noise scale of SGD run on the transformed gradients (one sample J drawn uniformly, then T) is
B_simple^T = tr Cov(T(g_J)) / ||E T(g_J)||^2 = n A_T / ||sum_j mu_j||^2 - 1; without a transformation
it equals B_S - 1, and the predicted speedup B (B_simple + 1) / (B + B_simple) uses it.

``closed_form`` computes A_T and C_T exactly from E||T(g)||^2 and E T(g) (``moments``): dropout's and Langevin's
here, a compressor's from its module's ``moments`` where it declares one (sign, sto-sign, qsgd, natural).
``monte_carlo`` samples the transformation itself, a compressor through its compiled ``kernel`` (the function every
run calls), ``draws`` times over the whole set, each draw from its own stream of the diagnostic's seeded streams
(``signsim.seeding.diagnostic_streams``): the estimate for a compressor without closed forms, and the independent
check of the closed forms. ``estimate`` takes the closed form when there is one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np

from signsim.errors import InputError
from signsim.interface.transform_specs import GRADIENT_NAMES, Transform, parse  # noqa: F401 (re-exported)

#: the salt of the transformations' streams among the diagnostic streams (``seeding.diagnostic_streams``)
SALT = 20_000_000
#: Monte Carlo draws of the transformed set when none are given (``diversity --transform-draws``)
DRAWS = 200
#: coordinates (rows x d x draws) one compiled call samples at most: Ctrl-C acts between calls
CALL_WORK = 2_000_000


def sign_zero_code(policy: str) -> int:
    from signsim.codes import SignZero

    return int(SignZero[policy.upper()])


def has_closed_form(t: Transform) -> bool:
    return t.stage is None or callable(getattr(t.module, "moments", None))


def degree(t: Transform) -> int | None:
    """k with T(2^j g) = 2^(jk) T(g) in law for every integer j (Langevin with its s scaled too), None when unknown:
    the sums are then kept in a power-of-two unit (``signsim.diagnostics.scaling``) only when k is known."""
    if t.stage is None:
        return 1
    k = getattr(t.module, "DEGREE", None)
    return k if k in (0, 1) else None


def moments(t: Transform, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Closed forms for the rows g_j of G (k x d): (E||T(g_j)||^2 per row, E T(g_j) as a k x d array)."""
    G = np.asarray(G, dtype=np.float64)
    d = G.shape[1]
    sq = np.einsum("ij,ij->i", G, G)
    if t.name == "dropout":  # E b^2/(1-p)^2 = 1/(1-p)
        return sq / (1.0 - t.param), G
    if t.name == "langevin":
        return sq + d * t.param**2, G
    if not has_closed_form(t):
        raise InputError(f"--transform {t.spec}: the compressor {t.name} declares no closed form (moments)")
    sq, mean = t.module.moments(G, t.stage.params, sign_zero_code(t.sign_zero))
    return np.asarray(sq, dtype=np.float64), np.asarray(mean, dtype=np.float64)


def sample(t: Transform, G: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw of T applied to each row of G, rows in order, fresh randomness per row and coordinate (a
    compressor: its compiled kernel, one call per row, drawing from ``rng``)."""
    G = np.asarray(G, dtype=np.float64)
    if t.name == "dropout":
        return G * (rng.random(G.shape) >= t.param) / (1.0 - t.param)
    if t.name == "langevin":
        return G + t.param * rng.standard_normal(G.shape)
    keep = np.zeros((1, *G.shape))
    _kernel_draws(t, np.ascontiguousarray(G), [rng], np.zeros(1), np.zeros((1, G.shape[1])), keep)
    return keep[0]


# --- a compressor applied by its kernel ------------------------------------------------------------------------

def _draws_for(module):
    """``transform_kernels.draws`` for the compressor ``module`` (compiled and cached once per compressor, under a
    type that names it with a hash of its source: ``signsim.engine.plan.Stages``)."""
    import functools

    from signsim.diagnostics import transform_kernels
    from signsim.engine.plan import Stages

    return functools.partial(transform_kernels.draws, Stages({"compressor": module}))


#: (stage, d) whose kernels passed ``smoke.smoke_test`` in this process
_SMOKED: set = set()


def _kernel_draws(t: Transform, G: np.ndarray, gens: list, a: np.ndarray, sums: np.ndarray,
                  keep: np.ndarray | None = None) -> None:
    """Accumulate the draws of the compressor ``t`` on the rows of G (C-contiguous float64) into a, sums (and keep),
    draw r from gens[r], in calls of at most CALL_WORK coordinates (Ctrl-C acts between them)."""
    from numba.typed import List

    from signsim.engine import smoke
    from signsim.interface.interrupts import interruptible

    n, d = G.shape
    if n == 0:
        return
    if (t.stage, d) not in _SMOKED:  # a plugin's kernel, bounds-checked first: a broken one is one line
        smoke.smoke_test(t.stage, d)
        _SMOKED.add((t.stage, d))
    fn = _draws_for(t.module)
    p = t.stage.param_array()
    code = sign_zero_code(t.sign_zero)
    out, iwork = np.zeros(d), np.zeros(d, dtype=np.int64)
    typed = List(gens)
    if keep is not None:
        interruptible(lambda: fn(G, p, code, typed, a, sums, keep, out, iwork))
        return
    none = np.zeros((0, 0, 0))
    rows = max(1, CALL_WORK // (d * len(gens)))  # rows per call; each draw's stream goes on from row to row
    for start in range(0, n, rows):
        block = G[start:start + rows]
        interruptible(lambda b=block: fn(b, p, code, typed, a, sums, none, out, iwork))


# --- the diversity of a transformed set ------------------------------------------------------------------------

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
    draws: int | None = None  # Monte Carlo only

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
            out["draws"] = self.draws
        return out


def blocks_of(G: np.ndarray | Iterable[np.ndarray]) -> Iterable[np.ndarray]:
    if isinstance(G, np.ndarray):
        yield G
    else:
        yield from G


class _Scaled:
    """The unit of a one-pass sum over row blocks for a transformation of degree k (``degree``): k = 0, each block
    in its own unit (only its norms need one, the transformed values do not change); k = 1, one running unit for
    every sum (``scaling.Units``), the sums so far rescaled when it grows; k unknown, no unit (the raw values)."""

    def __init__(self, t: Transform):
        from signsim.diagnostics.scaling import Units

        self.t, self.k, self.units = t, degree(t), Units()

    def block(self, block: np.ndarray) -> tuple[np.ndarray, Transform, float]:
        """(the block in its unit, the transformation for it, the factor r by which sums of values so far are
        multiplied, r^2 for sums of squares)."""
        from signsim.diagnostics.scaling import unit_for

        t = self.t
        largest = float(np.max(np.abs(block))) if block.size else 0.0
        if self.k is None:
            return block, t, 1.0
        if self.k == 0:
            unit, r = unit_for(largest), 1.0
        else:
            r = self.units.fit(max(largest, t.param or 0.0) if t.name == "langevin" else largest)
            unit = self.units.unit
            if t.name == "langevin" and unit != 1.0:
                t = replace(t, param=t.param / unit)
        return (block / unit if unit != 1.0 else block), t, r

    @property
    def unit(self) -> float:
        return self.units.unit if self.k == 1 else 1.0


def closed_form(t: Transform, G: np.ndarray | Iterable[np.ndarray]) -> TransformedDiversity:
    """Exact A_T, C_T from per-sample gradients (an n x d array or an iterable of row blocks). For a
    transformation of known degree the sums are kept in a power-of-two unit (``signsim.diagnostics.scaling``), so
    gradients of any finite magnitude give finite sums; the ratios reported do not depend on it."""
    n, A, V, total = 0, 0.0, 0.0, None
    scaled = _Scaled(t)
    for block in blocks_of(G):
        block = np.asarray(block, dtype=np.float64)
        block, tu, r = scaled.block(block)
        if r != 1.0:
            A, V = A * r * r, V * r * r
            total = total * r if total is not None else total
        sq, mean = moments(tu, block)
        A += float(sq.sum())
        V += float(sq.sum() - np.einsum("ij,ij->", mean, mean))
        s = mean.sum(axis=0)
        total = s if total is None else total + s
        n += len(block)
    mean_sq = float(total @ total) if total is not None else 0.0
    return TransformedDiversity(t.spec, n, A, mean_sq + V, mean_sq, "closed-form", unit=scaled.unit)


def monte_carlo(t: Transform, G: np.ndarray | Iterable[np.ndarray], draws: int, seed: int,
                z: float = 1.96) -> TransformedDiversity:
    """Draw the transformed set ``draws`` times (draw r from the r-th of the diagnostic's streams of ``seed``, rows
    in order, so the estimate does not depend on how the rows come in blocks): A_T and C_T are sample means of
    a_r = sum_j ||T_r(g_j)||^2 and c_r = ||sum_j T_r(g_j)||^2, ||sum mu_j||^2 the squared norm of the averaged sum
    minus its variance over ``draws`` (unbiased). The interval for B_S^T is the delta method's z-interval of the
    ratio of the two means."""
    from signsim.seeding import diagnostic_streams

    if draws < 2:
        raise InputError(f"--transform-draws {draws}: needs at least 2 draws")
    gens = diagnostic_streams(seed, draws, SALT)
    a = np.zeros(draws)
    sums = None
    n = 0
    scaled = _Scaled(t)
    for block in blocks_of(G):
        block = np.ascontiguousarray(block, dtype=np.float64)
        if sums is None:
            sums = np.zeros((draws, block.shape[1]))
        block, tu, r = scaled.block(block)
        if r != 1.0:
            a *= r * r
            sums *= r
        if t.stage is None:
            for i, gen in enumerate(gens):
                T = sample(tu, block, gen)
                a[i] += np.einsum("ij,ij->", T, T)
                sums[i] += T.sum(axis=0)
        else:
            _kernel_draws(tu, np.ascontiguousarray(block), gens, a, sums)
        n += len(block)
    if sums is None:
        sums = np.zeros((draws, 0))
    c = np.einsum("ij,ij->i", sums, sums)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(c))):
        raise InputError(f"--transform {t.spec}: the transformed gradients' squared norms overflow a float; sampling "
                         "needs smaller gradients (or a compressor that declares DEGREE, summed in a power-of-two "
                         "unit)")
    A, C = float(a.mean()), float(c.mean())
    mean_sum = sums.mean(axis=0)
    mean_sq = float(mean_sum @ mean_sum - np.sum(sums.var(axis=0, ddof=1)) / draws)
    cov = np.cov(a, c) / draws
    if C > 0:
        ratio = A / C
        se = math.sqrt(max(cov[0, 0] / C**2 - 2 * A * cov[0, 1] / C**3 + A**2 * cov[1, 1] / C**4, 0.0))
        interval = (n * (ratio - z * se), n * (ratio + z * se))
    else:
        interval = (math.inf, math.inf)
    return TransformedDiversity(t.spec, n, A, C, mean_sq, "monte-carlo", interval, unit=scaled.unit, draws=draws)


def estimate(t: Transform, G: np.ndarray | Iterable[np.ndarray], draws: int = DRAWS,
             seed: int = 0) -> TransformedDiversity:
    """The closed form where the transformation has one, else ``monte_carlo`` with ``draws`` draws."""
    if has_closed_form(t):
        return closed_form(t, G)
    return monte_carlo(t, G, draws, seed)
