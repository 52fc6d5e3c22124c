"""qsgd:S[:fixed|elias]: C(v)_i = ||v||_2 sign(v_i) l_i / s, l_i = floor(s |v_i| / ||v||_2) + 1 with probability the
fractional part, else the floor (Alistarh et al. 2017; docs/theory.md §8.1). Unbiased, omega = min(d / s^2,
sqrt(d) / s). One uniform per coordinate, in coordinate order (also for v = 0); the coding changes the bits only.

Bits, ``fixed`` (the default; the spec is recorded as ``qsgd:S``): 32 (norm) + 1 (format flag) + min(d (1 + L),
n (I + 1 + L)), L = ceil(log2(s + 1)), n the non-zero levels, I = max(1, ceil(log2 d)).
Bits, ``elias`` (the paper's encoding, recorded as ``qsgd:S:elias``): 32 (norm) + the sum over the non-zero levels,
in coordinate order, of omega(gap) + 1 (sign) + omega(level), gap the distance from the previous non-zero
coordinate (from position 0 for the first, positions counted from 1) and omega the Elias omega code length
(``signsim.stages.elias``)."""

import math

from signsim.stages.base import Param, index_bits, index_bits_jit
from signsim.stages.elias import omega_bits

NAME = "qsgd"
#: ``coding`` came after results recorded ``qsgd:4``: at its default it stays out of the recorded spec
PARAMS = (Param("s", "int", default=4, low=1, high=2 ** 31),
          Param("coding", "choice", default="fixed", choices=("fixed", "elias"), omit_default=True))
SUMMARY = ("QSGD, s levels of |v_i|/||v||_2 stochastically rounded (omega = min(d/s^2, sqrt(d)/s)); bits of a "
           "fixed-length code or, with :elias, of the paper's Elias code")
KIND = "unbiased"
THEORY = "§8.1"
SCRATCH = False
BROADCAST = "floats"
ELIAS = 1  # the code of "elias" among PARAMS[1].choices
#: C(2^j v) = 2^j C(v) in law: the diversity's estimates may compute in a power-of-two unit (docs/theory.md §10.4)
DEGREE = 1


def constant(d, s, coding=0):
    return min(d / s ** 2, math.sqrt(d) / s)


def may_be_zero(sign_zero):
    return True


def kernel(v, out, p, sign_zero, gen, iwork):
    d = v.shape[0]
    s = p[0]
    elias = p[1] == ELIAS
    nrm = 0.0
    for i in range(d):
        nrm += float(v[i]) * float(v[i])  # float64 products of a float32 v (--dtype)
    nrm = math.sqrt(nrm)
    nnz = 0
    coded = 0  # elias: the bits after the norm
    last = 0  # elias: the position (from 1) of the previous non-zero level
    for i in range(d):
        u = gen.random()
        if nrm == 0.0:
            out[i] = 0.0
            continue
        r = s * abs(v[i]) / nrm
        lo = math.floor(r)
        level = lo + 1.0 if u < r - lo else lo
        if level > 0.0:
            nnz += 1
            if elias:
                coded += omega_bits(i + 1 - last) + 1 + omega_bits(int(level))
                last = i + 1
        out[i] = (nrm * level / s) * (1.0 if v[i] > 0.0 else -1.0) if level > 0.0 else 0.0
    if elias:
        return 32.0 + coded
    lev = index_bits_jit(s + 1.0)
    return 32.0 + 1.0 + min(d * (1.0 + lev), nnz * (index_bits_jit(d) + 1.0 + lev))


def bits(d, p, sign_zero, nonzero):
    """The fixed code's size exactly; the Elias code's upper bound (its exact size is ``message_bits``): over all
    messages 32 + d (2 + omega(s)), since omega(g) <= 2g - 1, every level is at most s and the gaps sum to at most
    d; with n non-zero levels also 32 + n (omega(d - n + 1) + 1 + omega(s)) (no gap exceeds d - n + 1)."""
    n = d if nonzero is None else nonzero
    if len(p) > 1 and p[1] == ELIAS:
        worst = 32 + d * (2 + omega_bits(int(p[0])))
        if nonzero is None:
            return worst
        return min(worst, 32 + n * (omega_bits(max(1, d - n + 1)) + 1 + omega_bits(int(p[0]))))
    level = int(p[0]).bit_length()  # ceil(log2(s + 1))
    return 32 + 1 + min(d * (1 + level), n * (index_bits(d) + 1 + level))


def message_bits(v, out, p, sign_zero):
    """The bits of the message ``out`` = C(v), exactly (NumPy): the kernel's count, from the levels
    l_i = round(s |out_i| / ||v||_2)."""
    import numpy as np

    from signsim.stages.elias import omega_bits_np

    if len(p) < 2 or p[1] != ELIAS:
        return bits(v.size, p, sign_zero, int(np.count_nonzero(out)))
    s = float(p[0])
    v = np.asarray(v, dtype=np.float64)
    nrm = math.sqrt(float(np.sum(v * v)))
    where = np.flatnonzero(out)
    if nrm == 0.0 or where.size == 0:
        return 32
    level = np.rint(s * np.abs(np.asarray(out, dtype=np.float64)[where]) / nrm).astype(np.int64)
    gap = np.diff(where + 1, prepend=0)
    return int(32 + np.sum(omega_bits_np(gap)) + where.size + np.sum(omega_bits_np(level)))


def reference(v, p, sign_zero, gen):
    import numpy as np

    s, d = p[0], v.size
    u = gen.random(d)
    nrm = np.sqrt(np.sum(v * v))
    if nrm == 0:
        return np.zeros(d)
    r = s * np.abs(v) / nrm
    level = np.floor(r) + (u < r - np.floor(r))
    return np.where(level > 0, nrm * level / s * np.where(v > 0, 1.0, -1.0), 0.0)


def moments(G, p, sign_zero):
    """(E||C(g_j)||^2, E C(g_j)) for the rows g_j of G (docs/theory.md §10.4): unbiased, E C(g) = g, and coordinate
    i adds the variance (||g||_2 / s)^2 q_i (1 - q_i), q_i the fractional part of s |g_i| / ||g||_2."""
    import numpy as np

    s = float(p[0])
    sq = np.einsum("ij,ij->i", G, G)
    norm = np.sqrt(sq)
    r = np.divide(s * np.abs(G), norm[:, None], out=np.zeros_like(G), where=norm[:, None] > 0)
    q = r - np.floor(r)
    return sq + sq / s**2 * np.sum(q * (1.0 - q), axis=1), G
