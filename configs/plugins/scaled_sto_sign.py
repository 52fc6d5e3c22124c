"""scaled-sto-sign: ||v||_2 times the stochastic sign, +-||v||_2 with +1 w.p. 1/2 + v_i/(2||v||_2).

Unbiased: E C(v)_i = ||v|| (2 p_i - 1) = v_i; E||C(v) - v||^2 = d ||v||^2 - ||v||^2, so omega = d - 1.
Encoded as d sign bits and one 32-bit float (the norm)."""

import math

STAGE = "compressor"
NAME = "scaled-sto-sign"
PARAMS = ()  # e.g. (Param("s", "int", default=4, low=1),) from signsim.stages.base: the spec scaled-sto-sign:S
SUMMARY = "||v||_2 times the stochastic sign (unbiased, omega = d - 1)"
KIND = "unbiased"  # or "contractive" (constant() returns alpha) or "biased" (constant() returns None)
THEORY = "my notes, eq. 3"
SCRATCH = False  # True: the kernel gets an int64 scratch vector of length d (iwork)
BROADCAST = "floats"  # how the server sends the mean of these messages: "floats", "sparse" or "sign-sum"


def constant(d):
    return d - 1.0


def may_be_zero(sign_zero):
    return True  # a coordinate of a message can be exactly 0 (the zero vector is sent as zeros)


def kernel(v, out, p, sign_zero, gen, iwork):
    """out <- C(v); return the bits of the message as encoded. Compiled by Numba: loops, math, gen.random()."""
    d = v.shape[0]
    nrm = 0.0
    for i in range(d):
        nrm += float(v[i]) * float(v[i])
    nrm = math.sqrt(nrm)
    for i in range(d):
        if nrm == 0.0:
            out[i] = 0.0
        else:
            out[i] = nrm if gen.random() < 0.5 + v[i] / (2.0 * nrm) else -nrm
    return d + 32.0


def bits(d, p, sign_zero, nonzero):
    """The same count as a formula (signsim's accounting; check-stage compares the two)."""
    return d + 32


def reference(v, p, sign_zero, gen):
    """The same compressor in NumPy, drawing the same numbers in the same order (the replay's contract)."""
    import numpy as np

    nrm = math.sqrt(float(np.sum(v * v)))
    if nrm == 0:
        return np.zeros(v.size)
    return np.where(gen.random(v.size) < 0.5 + v / (2 * nrm), nrm, -nrm)
