"""natural: sign(v_i) 2^e or 2^(e+1) (2^e <= |v_i| < 2^(e+1)), unbiased stochastic rounding to a power of two
(Horváth et al. 2019; docs/theory.md §8.1). omega = 1/8. 9 d bits (a sign and an 8-bit exponent per coordinate).
One uniform per coordinate."""

import math

NAME = "natural"
PARAMS = ()
SUMMARY = "natural compression, unbiased rounding to a power of two (omega = 1/8)"
KIND = "unbiased"
THEORY = "§8.1"
SCRATCH = False
BROADCAST = "floats"
#: C(2^j v) = 2^j C(v) in law: the diversity's estimates may compute in a power-of-two unit (docs/theory.md §10.4)
DEGREE = 1


def constant(d):
    return 0.125


def may_be_zero(sign_zero):
    return True


def kernel(v, out, p, sign_zero, gen, iwork):
    d = v.shape[0]
    for i in range(d):
        u = gen.random()
        a = abs(float(v[i]))
        if a == 0.0 or not math.isfinite(a):
            out[i] = v[i]
            continue
        _, e = math.frexp(a)  # a = f 2^e with f in [1/2, 1)
        lo = math.ldexp(1.0, e - 1)
        mag = 2.0 * lo if u < (a - lo) / lo else lo
        out[i] = mag if v[i] > 0.0 else -mag
    return 9.0 * d


def bits(d, p, sign_zero, nonzero):
    return 9 * d


def reference(v, p, sign_zero, gen):
    import numpy as np

    u = gen.random(v.size)
    a = np.abs(v)
    with np.errstate(divide="ignore"):
        lo = np.where(a > 0, 2.0 ** np.floor(np.log2(np.where(a > 0, a, 1.0))), 0.0)
    # log2 may round at the edge of a power of two: put lo <= a < 2 lo exactly
    lo = np.where(lo > a, lo / 2, lo)
    lo = np.where((a > 0) & (2 * lo <= a), 2 * lo, lo)
    mag = np.where(u < (a - lo) / np.where(lo > 0, lo, 1.0), 2 * lo, lo)
    return np.where(a > 0, np.sign(v) * mag, v)


def moments(G, p, sign_zero):
    """(E||C(g_j)||^2, E C(g_j)) for the rows g_j of G (docs/theory.md §10.4): unbiased, E C(g) = g, and a value
    t in [2^a, 2^(a+1)) adds the variance (2^(a+1) - t)(t - 2^a)."""
    import numpy as np

    a = np.abs(G)
    _, exp = np.frexp(a)  # a = mant 2^exp with mant in [1/2, 1): 2^a = 2^(exp - 1), exactly
    low = np.where(a > 0, np.ldexp(1.0, exp - 1), 0.0)
    return np.einsum("ij,ij->i", G, G) + np.sum((2.0 * low - a) * (a - low), axis=1), G
