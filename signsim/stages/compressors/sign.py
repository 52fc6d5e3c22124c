"""sign: C(v) = sign(v), sign(0) by the --sign-zero policy (docs/theory.md §2, §8). d bits, 2 d when sign(0) = 0
is allowed (a ternary message)."""

from signsim.stages.base import SIGN_ZERO_PLUS, SIGN_ZERO_ZERO, sign_value
from signsim.stages.reference_helpers import sign_with_policy

NAME = "sign"
PARAMS = ()
SUMMARY = "sign(v), 1 bit per coordinate"
KIND = "biased"
THEORY = "§8.1"
SCRATCH = False
BROADCAST = "sign-sum"  # the sum of M signs: M + 1 values (2 M + 1 with zeros)
#: C(2^j v) = C(v): the diversity's estimates may compute in any power-of-two unit (docs/theory.md §10.4)
DEGREE = 0
#: C(v)_i = sign(v_i), a function of v_i alone: ``--votes binomial`` draws the counts of its values (docs/theory.md §11)
COORDINATE_SIGN = True


def constant(d):
    return None


def may_be_zero(sign_zero):
    return sign_zero == SIGN_ZERO_ZERO


def kernel(v, out, p, sign_zero, gen, iwork):
    d = v.shape[0]
    for i in range(d):
        out[i] = sign_value(v[i], sign_zero, gen)
    return (2.0 if sign_zero == SIGN_ZERO_ZERO else 1.0) * d


def bits(d, p, sign_zero, nonzero):
    return (2 if sign_zero == SIGN_ZERO_ZERO else 1) * d


def reference(v, p, sign_zero, gen):
    return sign_with_policy(v, sign_zero, gen)


def sum_values(M, sign_zero):
    """How many values the sum of M messages takes per coordinate: M + 1, or 2 M + 1 with zeros."""
    return 2 * M + 1 if sign_zero == SIGN_ZERO_ZERO else M + 1


def moments(G, p, sign_zero):
    """(E||C(g_j)||^2, E C(g_j)) for the rows g_j of G (docs/theory.md §10.4): d and sign g_j with a fair +-1 at a
    zero (mean 0) under random, +1 there under plus; under zero the nonzeros and sign g_j."""
    import numpy as np

    d = G.shape[1]
    mean = np.sign(G)
    if sign_zero == SIGN_ZERO_PLUS:
        return np.full(len(G), float(d)), np.where(G == 0, 1.0, mean)
    if sign_zero == SIGN_ZERO_ZERO:
        return (d - np.count_nonzero(G == 0, axis=1)).astype(float), mean
    return np.full(len(G), float(d)), mean
