"""dither:S: natural dithering (Horváth et al. 2019; docs/theory.md §8.1). With r_i = |v_i| / ||v||_2 in [0, 1]
and the levels 0 < 2^(1-S) < ... < 1/2 < 1, r_i is rounded to the level a just below or b just above it, up
with probability (r_i - a) / (b - a); C(v)_i = ||v||_2 sign(v_i) level. Unbiased, with
omega = 1/8 + sqrt(d) 2^(1-S) min(1, sqrt(d) 2^(1-S)) (their Theorem 7, p = 2). One uniform per coordinate
(also for v = 0). Bits: 32 (the norm) + d (1 + ceil(log2(S + 1))): a sign and a level index per coordinate."""

import math

from signsim.stages.base import Param, index_bits_jit

NAME = "dither"
PARAMS = (Param("s", "int", default=8, low=1, high=1000),)
SUMMARY = ("natural dithering, |v_i|/||v||_2 rounded to 0 or a power of two >= 2^(1-s) "
           "(omega = 1/8 + t min(1, t), t = sqrt(d) 2^(1-s))")
KIND = "unbiased"
THEORY = "§8.1"
SCRATCH = False
BROADCAST = "floats"
#: C(2^j v) = 2^j C(v) in law: the diversity's estimates may compute in a power-of-two unit (docs/theory.md §10.4)
DEGREE = 1


def constant(d, s):
    t = math.sqrt(d) * 2.0 ** (1 - s)
    return 0.125 + t * min(1.0, t)


def may_be_zero(sign_zero):
    return True


def kernel(v, out, p, sign_zero, gen, iwork):
    d = v.shape[0]
    s = int(p[0])
    nrm = 0.0
    for i in range(d):
        nrm += float(v[i]) * float(v[i])
    nrm = math.sqrt(nrm)
    smallest = math.ldexp(1.0, 1 - s)
    for i in range(d):
        u = gen.random()
        if nrm == 0.0:
            out[i] = 0.0
            continue
        r = min(abs(float(v[i])) / nrm, 1.0)
        if r < smallest:
            lo = 0.0
            hi = smallest
        else:
            _, e = math.frexp(r)  # r = f 2^e, f in [1/2, 1)
            lo = math.ldexp(1.0, e - 1)
            hi = 2.0 * lo
        level = hi if (hi > lo and u < (r - lo) / (hi - lo)) else lo
        out[i] = nrm * level if v[i] > 0.0 else -nrm * level
    return 32.0 + d * (1.0 + index_bits_jit(s + 1.0))


def bits(d, p, sign_zero, nonzero):
    return 32 + d * (1 + int(p[0]).bit_length())  # ceil(log2(s + 1)) = bit length of s


def reference(v, p, sign_zero, gen):
    import numpy as np

    s, d = int(p[0]), v.size
    u = gen.random(d)
    nrm = np.sqrt(np.sum(v * v))
    if nrm == 0:
        return np.zeros(d)
    r = np.minimum(np.abs(v) / nrm, 1.0)
    smallest = 2.0 ** (1 - s)
    # the level below r, written from the definition (largest 2^-j <= r), independent of frexp
    lo = np.zeros(d)
    for i in range(d):
        if r[i] >= smallest:
            j = 0
            while 2.0 ** -j > r[i]:
                j += 1
            lo[i] = 2.0 ** -j
    hi = np.where(r < smallest, smallest, 2 * lo)
    up = u < (r - lo) / (hi - lo)
    return np.sign(v) * nrm * np.where(up, hi, lo)
