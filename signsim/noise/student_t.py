"""Student-t noise with nu > 1 degrees of freedom (heavy tails; docs/theory.md §5).

``student-t:NU:S``: for nu > 2 the variance is finite and S is the standard deviation sigma,
xi = sigma sqrt((nu - 2) / nu) T_nu; for 1 < nu <= 2 the variance is infinite and S is the scale c,
xi = c T_nu (the mean exists, the variance does not; bounds that need sigma do not apply). Unimodal and
symmetric. ``params`` = [sigma (inf when nu <= 2), nu, scale].
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
    nu, s = args
    if not nu > 1 or not np.isfinite(nu):
        raise InputError(f"--noise student-t:{nu:g}:{s:g}: nu must be a finite number > 1 (a mean must exist)")
    if nu <= 2:  # infinite variance: s is the scale
        return np.array([np.inf, nu, s])
    return np.array([s, nu, s * np.sqrt((nu - 2.0) / nu)])


MODEL = NoiseModel(
    "student-t", CODE, "Student-t with NU > 1 degrees: S is the std for NU > 2, the scale for NU <= 2; student-t:NU:S",
    2, True, _parse, _sample, _cdf,
)
