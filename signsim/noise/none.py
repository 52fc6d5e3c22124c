"""No noise: the oracle's own randomness only (exact gradients for full-gradient oracles)."""

import numpy as np
from numba import njit

from signsim.codes import Noise
from signsim.noise.base import NoiseModel

CODE = int(Noise.NONE)  # assigned in signsim.codes


@njit(cache=True)
def draw(gen, p):
    return 0.0


def _sample(gen, size, p):
    return np.zeros(size)


def _cdf(z, p):
    return (np.asarray(z) >= 0).astype(float)


def _parse(args):
    return np.zeros(3)


MODEL = NoiseModel("none", CODE, "no added noise", 0, True, _parse, _sample, _cdf)
