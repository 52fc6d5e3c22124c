"""qsgd:S: C(v)_i = ||v||_2 sign(v_i) l_i / s, l_i = floor(s |v_i| / ||v||_2) + 1 with probability the fractional
part, else the floor (Alistarh et al. 2017; docs/theory.md §8.1). Unbiased, omega = min(d / s^2, sqrt(d) / s).
Bits: 32 (norm) + 1 (format flag) + min(d (1 + L), n (I + 1 + L)), L = ceil(log2(s + 1)), n the non-zero
levels, I = max(1, ceil(log2 d)). One uniform per coordinate, in coordinate order (also for v = 0)."""

import math

from signsim.stages.base import Param, index_bits, index_bits_jit

NAME = "qsgd"
PARAMS = (Param("s", "int", default=4, low=1, high=2 ** 31),)
SUMMARY = "QSGD, s levels of |v_i|/||v||_2 stochastically rounded (omega = min(d/s^2, sqrt(d)/s))"
KIND = "unbiased"
THEORY = "§8.1"
SCRATCH = False
BROADCAST = "floats"


def constant(d, s):
    return min(d / s ** 2, math.sqrt(d) / s)


def may_be_zero(sign_zero):
    return True


def kernel(v, out, p, sign_zero, gen, iwork):
    d = v.shape[0]
    s = p[0]
    nrm = 0.0
    for i in range(d):
        nrm += float(v[i]) * float(v[i])  # float64 products of a float32 v (--dtype)
    nrm = math.sqrt(nrm)
    nnz = 0
    for i in range(d):
        u = gen.random()
        if nrm == 0.0:
            out[i] = 0.0
            continue
        r = s * abs(v[i]) / nrm
        lo = math.floor(r)
        level = lo + 1.0 if u < r - lo else lo
        if level > 0.0:
            nnz += 1
        out[i] = (nrm * level / s) * (1.0 if v[i] > 0.0 else -1.0) if level > 0.0 else 0.0
    lev = index_bits_jit(s + 1.0)
    return 32.0 + 1.0 + min(d * (1.0 + lev), nnz * (index_bits_jit(d) + 1.0 + lev))


def bits(d, p, sign_zero, nonzero):
    n = d if nonzero is None else nonzero
    level = int(p[0]).bit_length()  # ceil(log2(s + 1))
    return 32 + 1 + min(d * (1 + level), n * (index_bits(d) + 1 + level))


def reference(v, p, sign_zero, gen):
    import numpy as np

    s, d = p[0], v.size
    u = gen.random(d)
    nrm = np.sqrt(np.sum(v * v))
    if nrm == 0:
        return np.zeros(d)
    r = s * np.abs(v) / nrm
    level = np.floor(r) + (u < r - np.floor(r))
    return np.where(level > 0, nrm * level / s * np.where(v > 0, 1.0, -1.0), 0.0)
