"""noisy-sign:[gaussian|uniform:]SIGMA: C(v)_i = sign(v_i + xi_i), xi_i i.i.d. N(0, sigma^2) (the default) or
uniform on [-sigma, sigma], one draw per coordinate in coordinate order, then sign(0) by the --sign-zero policy
(Chen, Wu, Hong 2020; docs/theory.md §8.1). For uniform noise with sigma >= |v_i|, E C(v)_i = v_i / sigma exactly;
for Gaussian noise E C(v)_i = 2 Phi(v_i / sigma) - 1. So with enough noise the vote of noisy signs tracks the
mean of the workers' vectors, not their median. A sign message: d bits (2 d when sign(0) = 0 is allowed)."""

from signsim.errors import InputError
from signsim.stages.base import SIGN_ZERO_ZERO, Param, sign_value

NAME = "noisy-sign"
FORM = "noisy-sign:[uniform:]SIGMA"
PARAMS = (Param("noise", "choice", default="gaussian", choices=("gaussian", "uniform")),
          Param("sigma", "float", low=0.0, low_open=True, high=1e300))
SUMMARY = "sign(v_i + xi_i), xi_i ~ N(0, sigma^2) or U[-sigma, sigma] (Chen et al. 2020)"
KIND = "biased"
THEORY = "§8.1"
SCRATCH = False
BROADCAST = "sign-sum"
UNIFORM = 1  # the code of "uniform" among PARAMS[0].choices


def parse_args(raw, option, spec):
    """``SIGMA`` or ``NOISE:SIGMA``."""
    if len(raw) == 1:
        return ["gaussian", raw[0]]
    if len(raw) == 2:
        return raw
    raise InputError(f"{option} {spec}: expected noisy-sign:SIGMA or noisy-sign:uniform:SIGMA")


def constant(d, noise, sigma):
    return None


def may_be_zero(sign_zero):
    return sign_zero == SIGN_ZERO_ZERO


def sum_values(M, sign_zero):
    return 2 * M + 1 if sign_zero == SIGN_ZERO_ZERO else M + 1


def kernel(v, out, p, sign_zero, gen, iwork):
    d = v.shape[0]
    uniform = p[0] == UNIFORM
    sigma = p[1]
    for i in range(d):
        if uniform:
            xi = sigma * (2.0 * gen.random() - 1.0)
        else:
            xi = sigma * gen.standard_normal()
        out[i] = sign_value(v[i] + xi, sign_zero, gen)
    return (2.0 if sign_zero == SIGN_ZERO_ZERO else 1.0) * d


def bits(d, p, sign_zero, nonzero):
    return (2 if sign_zero == SIGN_ZERO_ZERO else 1) * d


def reference(v, p, sign_zero, gen):
    import numpy as np

    from signsim.stages.base import SIGN_ZERO_PLUS, SIGN_ZERO_RANDOM

    out = np.zeros(v.size)
    for i in range(v.size):  # coordinate by coordinate: the noise draw, then sign(0)'s draw if any
        xi = p[1] * (2.0 * gen.random() - 1.0) if p[0] == UNIFORM else p[1] * gen.standard_normal()
        s = v[i] + xi
        if s != 0:
            out[i] = np.sign(s)
        elif sign_zero == SIGN_ZERO_PLUS:
            out[i] = 1.0
        elif sign_zero == SIGN_ZERO_RANDOM:
            out[i] = 1.0 if gen.random() < 0.5 else -1.0
    return out
