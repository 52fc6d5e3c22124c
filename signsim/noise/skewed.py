"""Skewed noise: a centered exponential, xi = sigma (E - 1) with E ~ Exp(1). Mean 0, std sigma, asymmetric.

F(z) = 1 - exp(-(z/sigma + 1)) for z >= -sigma, else 0. A small positive g_i has rho_i = exp(g_i/sigma - 1),
below 1/2 when g_i < sigma (1 - ln 2): SPB fails at tau = 1 though the variance is that of the others.
"""

import numpy as np
from numba import njit

from signsim.codes import Noise
from signsim.noise.base import NoiseModel

CODE = int(Noise.SKEWED)  # assigned in signsim.codes


@njit(cache=True)
def draw(gen, p):
    return p[0] * (gen.standard_exponential() - 1.0)


def _sample(gen, size, p):
    return p[0] * (gen.standard_exponential(size) - 1.0)


def _cdf(z, p):
    from scipy.stats import expon

    z = np.asarray(z, dtype=np.float64)
    if p[0] == 0:
        return (z >= 0).astype(float)
    return expon.cdf(z / p[0] + 1.0)


def _parse(args):
    return np.array([args[0], 0.0, 0.0])


MODEL = NoiseModel(
    "skewed", CODE, "centered exponential sigma*(Exp(1) - 1): mean 0, asymmetric; skewed:SIGMA", 1, False,
    _parse, _sample, _cdf,
)
