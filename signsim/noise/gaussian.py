"""Gaussian noise N(0, sigma^2): unimodal, symmetric. Closed form rho_i = Phi(sqrt(tau) |g_i| / sigma)
(docs/theory.md §1)."""

import numpy as np
from numba import njit

from signsim.codes import Noise
from signsim.noise.base import NoiseModel

CODE = int(Noise.GAUSSIAN)  # assigned in signsim.codes


@njit(cache=True)
def draw(gen, p):
    return p[0] * gen.standard_normal()


def _sample(gen, size, p):
    return p[0] * gen.standard_normal(size)


def _cdf(z, p):
    from scipy.stats import norm

    return norm.cdf(z, scale=p[0]) if p[0] > 0 else (np.asarray(z) >= 0).astype(float)


def _parse(args):
    return np.array([args[0], 0.0, 0.0])


def _mean_of(p, tau):
    """The mean of tau draws is N(0, sigma^2 / tau)."""
    return np.array([p[0] / np.sqrt(tau), 0.0, 0.0])


MODEL = NoiseModel("gaussian", CODE, "N(0, sigma^2) per coordinate; gaussian:SIGMA", 1, True, _parse, _sample, _cdf,
                   _mean_of)
