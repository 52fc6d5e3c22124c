"""Uniform noise on [-a, a] with a = sigma sqrt(3) (standard deviation sigma): unimodal, symmetric."""

import numpy as np
from numba import njit

from signsim.codes import Noise
from signsim.noise.base import NoiseModel

CODE = int(Noise.UNIFORM)  # assigned in signsim.codes


@njit(cache=True)
def draw(gen, p):
    return gen.uniform(-p[1], p[1])


def _sample(gen, size, p):
    return gen.uniform(-p[1], p[1], size)


def _cdf(z, p):
    from scipy.stats import uniform

    a = p[1]
    return uniform.cdf(z, loc=-a, scale=2 * a) if a > 0 else (np.asarray(z) >= 0).astype(float)


def _parse(args):
    return np.array([args[0], args[0] * np.sqrt(3.0), 0.0])


MODEL = NoiseModel(
    "uniform", CODE, "uniform on [-sigma*sqrt(3), sigma*sqrt(3)]; uniform:SIGMA", 1, True, _parse, _sample, _cdf
)
