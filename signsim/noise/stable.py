"""Symmetric alpha-stable noise S(alpha, 0, c), 1 < alpha <= 2 (docs/theory.md §5): heavy tails with
P(|xi| > t) ~ t^-alpha, a mean of 0 and, for alpha < 2, an infinite variance. alpha = 2 is Gaussian with
standard deviation c sqrt(2); alpha = 1 would be Cauchy.

Sampler (Chambers, Mallows & Stuck 1976, symmetric case), two uniforms per draw: V ~ U(-pi/2, pi/2),
W = -log(1 - U') ~ Exp(1),
xi = c sin(alpha V) / cos(V)^(1/alpha) * (cos((1 - alpha) V) / W)^((1 - alpha)/alpha).
Its characteristic function is exp(-|c t|^alpha), which is scipy.stats.levy_stable(alpha, 0, scale=c); the
diagnostics take the CDF from there. The mean of tau draws is S(alpha, 0, c tau^(1/alpha - 1)).
"""

import numpy as np
from numba import njit

from signsim.codes import Noise
from signsim.errors import InputError
from signsim.noise.base import NoiseModel

CODE = int(Noise.STABLE)  # assigned in signsim.codes


@njit(cache=True)
def draw(gen, p):
    a = p[1]
    v = np.pi * (gen.random() - 0.5)
    w = -np.log(1.0 - gen.random())
    return p[2] * np.sin(a * v) / np.cos(v) ** (1.0 / a) * (np.cos((1.0 - a) * v) / w) ** ((1.0 - a) / a)


def _sample(gen, size, p):
    """Two uniforms per sample, consumed in the order ``draw`` consumes them (V's, then W's)."""
    a = p[1]
    shape = (size,) if np.ndim(size) == 0 else tuple(size)
    u = gen.random((*shape, 2))
    v = np.pi * (u[..., 0] - 0.5)
    w = -np.log(1.0 - u[..., 1])
    return p[2] * np.sin(a * v) / np.cos(v) ** (1.0 / a) * (np.cos((1.0 - a) * v) / w) ** ((1.0 - a) / a)


def _cdf(z, p):
    from scipy.stats import levy_stable

    z = np.asarray(z, dtype=np.float64)
    if p[2] == 0:
        return (z >= 0).astype(float)
    return levy_stable.cdf(z, p[1], 0.0, scale=p[2])


def _parse(args):
    alpha, scale = args
    if not 1 < alpha <= 2:
        raise InputError(f"--noise stable:{alpha:g}:{scale:g}: alpha must lie in (1, 2]")
    sigma = scale * np.sqrt(2.0) if alpha == 2 else np.inf
    return np.array([sigma, alpha, scale])


def _mean_of(p, tau):
    """The mean of tau draws of S(alpha, 0, c) is S(alpha, 0, c tau^(1/alpha - 1))."""
    c = p[2] * tau ** (1.0 / p[1] - 1.0)
    return np.array([c * np.sqrt(2.0) if p[1] == 2 else np.inf, p[1], c])


MODEL = NoiseModel(
    "stable", CODE, "symmetric alpha-stable, 1 < ALPHA <= 2, scale C (infinite variance below 2); stable:ALPHA:C",
    2, True, _parse, _sample, _cdf, _mean_of, "stable:1.5:1",
)
