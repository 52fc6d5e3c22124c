"""top-k:K: v_i on the K largest |v_i| (ties: the lower index), 0 elsewhere (docs/theory.md §8.1). Contractive,
alpha = K / d; K = ceil(d / 10) when omitted. K (32 + I) bits: K (index, float) pairs."""

import math

from signsim.errors import InputError
from signsim.stages.base import Param, index_bits, index_bits_jit
from signsim.stages.sorting import top_k_order

NAME = "top-k"
PARAMS = (Param("k", "int", low=1, high=2 ** 31, default_of_d=lambda d: max(1, math.ceil(d / 10)),
                  default_text="ceil(d/10)"),)
SUMMARY = "the K largest |v_i|, ties to the lower index (alpha = K/d; K = ceil(d/10) if omitted)"
KIND = "contractive"
THEORY = "§8.1"
SCRATCH = True  # int64 index scratch of length d per worker
BROADCAST = "sparse"  # the mean is sent as the cheaper of dense floats and (index, float) pairs
#: C(2^j v) = 2^j C(v) in law: the diversity's estimates may compute in a power-of-two unit (docs/theory.md §10.4)
DEGREE = 1


def constant(d, k):
    return k / d


def may_be_zero(sign_zero):
    return True


def kernel(v, out, p, sign_zero, gen, iwork):
    d = v.shape[0]
    k = int(p[0])
    top_k_order(v, k, iwork)  # ties: the lower index first
    for i in range(d):
        out[i] = 0.0
    for j in range(k):
        out[iwork[j]] = v[iwork[j]]
    return k * (32.0 + index_bits_jit(d))


def bits(d, p, sign_zero, nonzero):
    return int(p[0]) * (32 + index_bits(d))


def reference(v, p, sign_zero, gen):
    import numpy as np

    d, k = v.size, int(p[0])
    out = np.zeros(d)
    keep = sorted(range(d), key=lambda i: (-abs(v[i]), i))[:k]
    out[keep] = v[keep]
    return out


def check_params(params, dim, option, spec):
    if dim is not None and params[0] > dim:
        raise InputError(f"{option} {spec}: k exceeds the dimension {dim}")
