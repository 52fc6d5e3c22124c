"""onebit: 1-bit SGD (Seide et al. 2014; docs/theory.md §8.1): the mean of {v_j >= 0} where v_i >= 0, the mean of
{v_j < 0} elsewhere. Contractive, alpha = 1/d. d + 64 bits (the sign mask and the two means)."""

NAME = "onebit"
PARAMS = ()
SUMMARY = "1-bit SGD, sign mask decoded with the means of the non-negative and of the negative entries (alpha = 1/d)"
KIND = "contractive"
THEORY = "§8.1"
SCRATCH = False
BROADCAST = "floats"
#: C(2^j v) = 2^j C(v) in law: the diversity's estimates may compute in a power-of-two unit (docs/theory.md §10.4)
DEGREE = 1


def constant(d):
    return 1.0 / d


def may_be_zero(sign_zero):
    return True


def kernel(v, out, p, sign_zero, gen, iwork):
    d = v.shape[0]
    sp = 0.0
    np_ = 0
    sn = 0.0
    nn = 0
    for i in range(d):
        if v[i] >= 0.0:
            sp += v[i]
            np_ += 1
        else:
            sn += v[i]
            nn += 1
    mp = sp / np_ if np_ > 0 else 0.0
    mn = sn / nn if nn > 0 else 0.0
    for i in range(d):
        out[i] = mp if v[i] >= 0.0 else mn
    return d + 64.0


def bits(d, p, sign_zero, nonzero):
    return d + 64


def reference(v, p, sign_zero, gen):
    import numpy as np

    pos = v >= 0
    mp = v[pos].mean() if pos.any() else 0.0
    mn = v[~pos].mean() if (~pos).any() else 0.0
    return np.where(pos, mp, mn)
