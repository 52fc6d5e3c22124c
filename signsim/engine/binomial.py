"""Exact vote counts without simulating workers: ``--votes binomial`` (docs/theory.md §11).

For signSGD with majority vote (or the mean of signs), without momentum or error feedback, on a shared
exact-gradient oracle with synthetic noise independent across coordinates and workers, each worker's
message on coordinate i at iterate x is sign(g_i + xi_mi) with xi_mi i.i.d. So, given x, worker m's
message is +1, 0 or -1 with probabilities (p+, p0, p-) that depend on i alone, independently across m and
i, and the numbers of +1, 0 and -1 among the M - b honest workers are Multinomial(M - b; p+, p0, p-).
The b blind Byzantine workers draw their own noisy signs the same way, then invert them (``invert``) or
replace each nonzero one by a fair coin (``random``). The server only ever sees the sum of the messages,
so drawing these counts gives the broadcast exactly in distribution, at O(d) per iteration for any M.

p+ = P(g_i + mean of tau draws > 0) = 1 - F_tau(-g_i), from the noise model's CDF F_tau of the mean of tau
draws: Gaussian (sigma / sqrt(tau)) and Cauchy (the same scale) at any tau, the other models with a CDF in
closed form at tau = 1 only. A continuous noise distribution has p0 = 0; without noise (or sigma = 0) the
sign is deterministic and p0 = 1 where g_i = 0. ``--sign-zero`` then maps the zero outcome to a fair +-1
(random), to +1 (plus) or keeps it (zero: a ternary message).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from signsim.codes import Aggregate, Attack, SignZero, Tie
from signsim.noise import bimodal, cauchy, gaussian, laplace, skewed, uniform
from signsim.noise.base import N_NOISE_PARAMS

#: noise models with an in-kernel CDF of the mean of tau draws: name -> the batch sizes it holds for
#: ("any" or 1); every other registered model is refused by ``refusal``
CLOSED_FORM_TAU = {"none": "any", "gaussian": "any", "cauchy": "any", "laplace": 1, "uniform": 1, "bimodal": 1,
                   "skewed": 1}


@njit(cache=True)
def noise_cdf(code, z, p, tau):
    """F_tau(z) = P(mean of tau draws <= z) for a noise model with positive scale (see CLOSED_FORM_TAU)."""
    if code == gaussian.CODE:
        s = p[0] / math.sqrt(tau)
        return 0.5 * math.erfc(-z / (s * math.sqrt(2.0)))
    if code == cauchy.CODE:
        return 0.5 + math.atan(z / p[2]) / math.pi
    if code == laplace.CODE:
        b = p[1]
        return 0.5 * math.exp(z / b) if z < 0 else 1.0 - 0.5 * math.exp(-z / b)
    if code == uniform.CODE:
        a = p[1]
        return min(max((z + a) / (2.0 * a), 0.0), 1.0)
    if code == bimodal.CODE:
        a, c = p[1], p[2]
        return 0.5 * (min(max((z - a + c) / (2 * c), 0.0), 1.0) + min(max((z + a + c) / (2 * c), 0.0), 1.0))
    if code == skewed.CODE:
        return 1.0 - math.exp(-(z / p[0] + 1.0)) if z >= -p[0] else 0.0
    raise ValueError("binomial votes: no closed-form CDF for this noise model")


@njit(cache=True)
def outcome_probabilities(code, g, p, tau, deterministic):
    """(P(+1), P(0)) of one worker's sign(g + noise) before the sign(0) policy (g already divided by the
    coordinate's noise scale)."""
    if deterministic:
        if g > 0:
            return 1.0, 0.0
        if g < 0:
            return 0.0, 0.0
        return 0.0, 1.0
    plus = 1.0 - noise_cdf(code, -g, p, tau)
    return min(max(plus, 0.0), 1.0), 0.0


@njit(cache=True)
def _counts(gen, n, plus, zero):
    """Numbers of +1 and 0 among n workers (the rest -1): a binomial, then a binomial of what is left."""
    if n == 0:
        return 0, 0
    a = gen.binomial(n, plus) if plus < 1.0 else n
    b = 0
    if zero > 0.0 and a < n:
        q = zero / (1.0 - plus) if plus < 1.0 else 1.0
        b = gen.binomial(n - a, min(q, 1.0)) if q < 1.0 else n - a
    return a, b


@njit(cache=True)
def vote_sum(g, code, p, tau, deterministic, M, byzantine, attack, sign_zero, gen, out):
    """out_i = sum over the M workers of their messages on coordinate i (one draw per count, coordinate by
    coordinate in order, from ``gen``)."""
    honest = M - byzantine
    scaled = p.shape[0] > N_NOISE_PARAMS
    for i in range(g.shape[0]):
        s = p[N_NOISE_PARAMS + i] if scaled else 1.0  # per-coordinate noise scale, docs/theory.md §10.2
        gi = g[i] / s if s > 0 else g[i]
        plus, zero = outcome_probabilities(code, gi, p, tau, deterministic or s == 0)
        if sign_zero == SignZero.RANDOM:
            plus += 0.5 * zero
            zero = 0.0
        elif sign_zero == SignZero.PLUS:
            plus += zero
            zero = 0.0
        hp, h0 = _counts(gen, honest, plus, zero)
        bp, b0 = _counts(gen, byzantine, plus, zero)
        bm = byzantine - bp - b0
        if attack == Attack.INVERT:
            bp, bm = bm, bp
        elif attack == Attack.RANDOM:
            nonzero = bp + bm
            bp = gen.binomial(nonzero, 0.5) if nonzero > 0 else 0
            bm = nonzero - bp
        else:
            raise ValueError("binomial votes: only the invert and random attacks")
        out[i] = float(hp - (honest - hp - h0) + bp - bm)


@njit(cache=True)
def broadcast(agg, M, aggregate, tie, gen):
    """Turn the sums into the broadcast in place: the majority vote (ties by ``tie``) or the mean."""
    for i in range(agg.shape[0]):
        s = agg[i]
        if aggregate == Aggregate.MAJORITY:
            if s > 0:
                agg[i] = 1.0
            elif s < 0:
                agg[i] = -1.0
            elif tie == Tie.RANDOM:
                agg[i] = 1.0 if gen.random() < 0.5 else -1.0
            else:
                agg[i] = 0.0
        elif aggregate == Aggregate.MEAN:
            agg[i] = s / M
        else:
            raise ValueError("binomial votes: only majority and mean aggregation")


def refusal(*, method, noise_name: str, noise_sigma: float, tau: int, problem, aggregate: str, attack: str,
            byzantine: int, monotone: bool = False) -> str | None:
    """Why ``--votes binomial`` would not be exact for this configuration (None when it is)."""
    if method.compressor_name != "sign" or method.error_feedback != "none":
        return (f"--votes binomial needs workers that send sign(g_hat) (signsgd); {method.label} compresses "
                "differently")
    if method.momentum:
        return "--votes binomial needs memoryless workers: --momentum must be 0"
    if aggregate not in ("majority", "mean"):
        return f"--votes binomial needs --aggregate majority or mean, not {aggregate}"
    if byzantine and attack not in ("invert", "random"):
        return f"--votes binomial supports the blind attacks invert and random, not --attack {attack}"
    if not problem.exact_oracle or problem.heterogeneous or problem.finite_sum is not None:
        return (f"--votes binomial needs a shared exact-gradient oracle with synthetic noise; --problem "
                f"{problem.name} here samples data or differs between workers")
    taus = CLOSED_FORM_TAU.get(noise_name)
    if taus is None:
        return f"--votes binomial needs a noise CDF in closed form; --noise {noise_name} has none in the kernel"
    if taus != "any" and tau != 1 and noise_sigma > 0:
        return (f"--votes binomial with --noise {noise_name} needs --batch-size 1 (the mean of {tau} draws has no "
                "closed-form CDF)")
    return None


def is_deterministic(model, params: np.ndarray) -> bool:
    """No noise, or noise of zero scale: every worker sends the same sign."""
    from signsim.noise.base import degenerate

    return degenerate(model, params)
