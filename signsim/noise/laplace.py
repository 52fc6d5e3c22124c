"""Laplace noise with scale b = sigma / sqrt(2) (standard deviation sigma): unimodal, symmetric."""

import numpy as np
from numba import njit

from signsim.codes import Noise
from signsim.noise.base import NoiseModel

CODE = int(Noise.LAPLACE)  # assigned in signsim.codes


@njit(cache=True)
def draw(gen, p):
    return gen.laplace(0.0, p[1])


def _sample(gen, size, p):
    return gen.laplace(0.0, p[1], size)


def _cdf(z, p):
    from scipy.stats import laplace

    return laplace.cdf(z, scale=p[1]) if p[1] > 0 else (np.asarray(z) >= 0).astype(float)


def _parse(args):
    return np.array([args[0], args[0] / np.sqrt(2.0), 0.0])


MODEL = NoiseModel(
    "laplace", CODE, "Laplace, scale sigma/sqrt(2), heavier tails; laplace:SIGMA", 1, True, _parse, _sample, _cdf
)
