"""rand-k:K: (d / K) v_i on K coordinates drawn without replacement (a partial Fisher-Yates shuffle, K uniforms),
0 elsewhere (docs/theory.md §8.1). Unbiased, omega = d / K - 1; K = ceil(d / 10) when omitted. K (32 + I) bits."""

import math

from signsim.errors import InputError
from signsim.stages.base import Param, index_bits, index_bits_jit

NAME = "rand-k"
PARAMS = (Param("k", "int", low=1, high=2 ** 31, default_of_d=lambda d: max(1, math.ceil(d / 10)),
                  default_text="ceil(d/10)"),)
SUMMARY = "(d/K) v on K uniform coordinates (omega = d/K - 1; K = ceil(d/10) if omitted)"
KIND = "unbiased"
THEORY = "§8.1"
SCRATCH = True
BROADCAST = "sparse"
#: C(2^j v) = 2^j C(v) in law: the diversity's estimates may compute in a power-of-two unit (docs/theory.md §10.4)
DEGREE = 1


def constant(d, k):
    return d / k - 1.0


def may_be_zero(sign_zero):
    return True


def kernel(v, out, p, sign_zero, gen, iwork):
    d = v.shape[0]
    k = int(p[0])
    perm = iwork
    for i in range(d):
        out[i] = 0.0
        perm[i] = i
    for j in range(k):
        r = j + int(gen.random() * (d - j))
        t = perm[j]
        perm[j] = perm[r]
        perm[r] = t
        out[perm[j]] = (d / k) * v[perm[j]]
    return k * (32.0 + index_bits_jit(d))


def bits(d, p, sign_zero, nonzero):
    return int(p[0]) * (32 + index_bits(d))


def reference(v, p, sign_zero, gen):
    import numpy as np

    d, k = v.size, int(p[0])
    perm = list(range(d))
    out = np.zeros(d)
    for j in range(k):
        r = j + int(np.floor(gen.random() * (d - j)))
        perm[j], perm[r] = perm[r], perm[j]
        out[perm[j]] = d / k * v[perm[j]]
    return out


def check_params(params, dim, option, spec):
    if dim is not None and params[0] > dim:
        raise InputError(f"{option} {spec}: k exceeds the dimension {dim}")
