"""terngrad: C(v)_i = s sign(v_i) b_i, s = max|v|, b_i ~ Bernoulli(|v_i| / s) (Wen et al. 2017;
docs/theory.md §8.1). Unbiased, omega = sqrt(d) - 1. 32 + 2 d bits. One uniform per coordinate (none for v = 0)."""

import math

NAME = "terngrad"
PARAMS = ()
SUMMARY = "TernGrad, max|v| sign(v_i) Bernoulli(|v_i|/max|v|) (omega = sqrt(d) - 1)"
KIND = "unbiased"
THEORY = "§8.1"
SCRATCH = False
BROADCAST = "floats"
#: C(2^j v) = 2^j C(v) in law: the diversity's estimates may compute in a power-of-two unit (docs/theory.md §10.4)
DEGREE = 1


def constant(d):
    return math.sqrt(d) - 1.0


def may_be_zero(sign_zero):
    return True


def kernel(v, out, p, sign_zero, gen, iwork):
    d = v.shape[0]
    s = 0.0
    for i in range(d):
        s = max(s, abs(v[i]))
    for i in range(d):
        if s == 0.0:
            out[i] = 0.0
        elif gen.random() < abs(v[i]) / s:
            out[i] = s if v[i] > 0.0 else -s
        else:
            out[i] = 0.0
    return 32.0 + 2.0 * d


def bits(d, p, sign_zero, nonzero):
    return 32 + 2 * d


def reference(v, p, sign_zero, gen):
    import numpy as np

    s = np.max(np.abs(v))
    if s == 0:
        return np.zeros(v.size)
    return np.where(gen.random(v.size) < np.abs(v) / s, s * np.where(v > 0, 1.0, -1.0), 0.0)
