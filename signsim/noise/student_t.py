"""Student-t noise with nu > 2 degrees of freedom, rescaled to standard deviation sigma (heavy tails).

xi = sigma * sqrt((nu - 2) / nu) * T_nu. Unimodal and symmetric.
"""

import numpy as np
from numba import njit

from signsim.codes import Noise
from signsim.errors import InputError
from signsim.noise.base import NoiseModel

CODE = int(Noise.STUDENT_T)  # assigned in signsim.codes


@njit(cache=True)
def draw(gen, p):
    return p[2] * gen.standard_t(p[1])


def _sample(gen, size, p):
    return p[2] * gen.standard_t(p[1], size)


def _cdf(z, p):
    from scipy.stats import t

    return t.cdf(z, p[1], scale=p[2]) if p[2] > 0 else (np.asarray(z) >= 0).astype(float)


def _parse(args):
    nu, sigma = args
    if not nu > 2 or not np.isfinite(nu):
        raise InputError(f"--noise student-t:{nu:g}:{sigma:g}: nu must be > 2 for a finite variance")
    return np.array([sigma, nu, sigma * np.sqrt((nu - 2.0) / nu)])


MODEL = NoiseModel(
    "student-t", CODE, "Student-t, nu > 2 degrees, scaled to std sigma; student-t:NU:SIGMA", 2, True,
    _parse, _sample, _cdf,
)
