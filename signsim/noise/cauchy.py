"""Cauchy noise with scale c (Student-t with one degree of freedom): no mean, infinite variance (docs/theory.md §5).

xi = c * tan(pi (U - 1/2)) with U uniform on (0, 1). Unimodal and symmetric about 0, so its median is 0 and
the sign of g_i + xi agrees with sign g_i with probability 1/2 + arctan(|g_i| / c) / pi > 1/2 (SPB holds at
every nonzero coordinate although no moment of order >= 1 exists). The mean of tau draws is again Cauchy with
scale c, so minibatching does not help (the closed form used at any tau).
"""

import numpy as np
from numba import njit

from signsim.codes import Noise
from signsim.noise.base import NoiseModel

CODE = int(Noise.CAUCHY)  # assigned in signsim.codes


@njit(cache=True)
def draw(gen, p):
    return p[2] * np.tan(np.pi * (gen.random() - 0.5))


def _sample(gen, size, p):
    return p[2] * np.tan(np.pi * (gen.random(size) - 0.5))


def _cdf(z, p):
    z = np.asarray(z, dtype=np.float64)
    if p[2] == 0:
        return (z >= 0).astype(float)
    return 0.5 + np.arctan(z / p[2]) / np.pi


def _parse(args):
    return np.array([np.inf, 1.0, args[0]])


def _mean_of(p, tau):
    """The mean of tau Cauchy draws is Cauchy with the same scale."""
    return p


MODEL = NoiseModel(
    "cauchy", CODE, "Cauchy with scale C (infinite variance, no mean); cauchy:C", 1, True, _parse, _sample, _cdf,
    _mean_of,
)
