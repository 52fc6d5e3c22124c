"""Bimodal noise: +-a plus uniform jitter on [-c, c], c = sigma/5, a = sigma sqrt(1 - c^2/(3 sigma^2)).

Symmetric but not unimodal (docs/theory.md §5): it has the variance of the others but a different sign behaviour.
One uniform u per sample gives both the sign (u < 1/2 -> +) and the jitter (w = frac(2u) is uniform and
independent of the sign), so the Numba kernel and the NumPy sampler consume the stream identically.
"""

import numpy as np
from numba import njit

from signsim.codes import Noise
from signsim.noise.base import NoiseModel

CODE = int(Noise.BIMODAL)  # assigned in signsim.codes
JITTER = 0.2  # c / sigma


@njit(cache=True)
def draw(gen, p):
    u = gen.random()
    w = 2.0 * u - np.floor(2.0 * u)
    s = 1.0 if u < 0.5 else -1.0
    return s * p[1] + p[2] * (2.0 * w - 1.0)


def _sample(gen, size, p):
    u = gen.random(size)
    w = 2.0 * u - np.floor(2.0 * u)
    return np.where(u < 0.5, 1.0, -1.0) * p[1] + p[2] * (2.0 * w - 1.0)


def _cdf(z, p):
    a, c = p[1], p[2]
    z = np.asarray(z, dtype=np.float64)
    if c == 0:
        return (z >= 0).astype(float)
    return 0.5 * (np.clip((z - a + c) / (2 * c), 0, 1) + np.clip((z + a + c) / (2 * c), 0, 1))


def _parse(args):
    sigma = args[0]
    c = JITTER * sigma
    return np.array([sigma, sigma * np.sqrt(1.0 - JITTER**2 / 3.0), c])


MODEL = NoiseModel(
    "bimodal", CODE, "+-sigma with small uniform jitter: symmetric, not unimodal; bimodal:SIGMA", 1, False,
    _parse, _sample, _cdf,
)
