"""scaled-sign: C(v) = (||v||_1 / d) sign(v) (docs/theory.md §8.1), contractive with alpha = 1/d. d bits (2 d
ternary) + 32 for the scale."""

from signsim.stages.base import SIGN_ZERO_ZERO, sign_value
from signsim.stages.reference_helpers import sign_with_policy

NAME = "scaled-sign"
PARAMS = ()
SUMMARY = "(||v||_1/d) sign(v) (alpha = 1/d)"
KIND = "contractive"
THEORY = "§8.1"
SCRATCH = False
BROADCAST = "floats"
#: C(2^j v) = 2^j C(v) in law: the diversity's estimates may compute in a power-of-two unit (docs/theory.md §10.4)
DEGREE = 1


def constant(d):
    return 1.0 / d


def may_be_zero(sign_zero):
    return sign_zero == SIGN_ZERO_ZERO


def kernel(v, out, p, sign_zero, gen, iwork):
    d = v.shape[0]
    scale = 0.0
    for i in range(d):
        scale += abs(v[i])
    scale /= d
    for i in range(d):
        out[i] = scale * sign_value(v[i], sign_zero, gen)
    return (2.0 if sign_zero == SIGN_ZERO_ZERO else 1.0) * d + 32.0


def bits(d, p, sign_zero, nonzero):
    return (2 if sign_zero == SIGN_ZERO_ZERO else 1) * d + 32


def reference(v, p, sign_zero, gen):
    return abs(v).sum() / v.size * sign_with_policy(v, sign_zero, gen)
