"""Numba kernels for what a worker sends and what the server broadcasts (math.md §2).

Each kernel draws random numbers, when it needs them, from the generator it is given, in coordinate order;
``signsim.engine.reference`` does the same in NumPy and the tests compare the two.
"""

import numpy as np
from numba import njit

from signsim.codes import Aggregate, Attack, Compressor, SignZero, Tie


@njit(cache=True, inline="always")
def sign_value(v, sign_zero, gen):
    """sign(v) with sign(0) by policy: RANDOM draws one uniform (< 1/2 -> +1), PLUS gives +1, ZERO gives 0."""
    if v > 0.0:
        return 1.0
    if v < 0.0:
        return -1.0
    if sign_zero == SignZero.PLUS:
        return 1.0
    if sign_zero == SignZero.ZERO:
        return 0.0
    return 1.0 if gen.random() < 0.5 else -1.0


@njit(cache=True, inline="always")
def compress_row(kind, v, out, sign_zero, gen):
    """out <- C(v) for one worker.

    IDENTITY: v.  SIGN: sign(v).  STO_SIGN: +1 w.p. 1/2 + v_i / (2 ||v||_2) else -1, one uniform per
    coordinate, and the zero vector maps to 0.  SCALED_SIGN_EF: (||v||_1 / d) sign(v).
    """
    d = v.shape[0]
    if kind == Compressor.IDENTITY:
        for i in range(d):
            out[i] = v[i]
    elif kind == Compressor.SIGN:
        for i in range(d):
            out[i] = sign_value(v[i], sign_zero, gen)
    elif kind == Compressor.STO_SIGN:
        nrm = 0.0
        for i in range(d):
            nrm += v[i] * v[i]
        nrm = np.sqrt(nrm)
        if nrm == 0.0:
            for i in range(d):
                out[i] = 0.0
        else:
            for i in range(d):
                out[i] = 1.0 if gen.random() < 0.5 + v[i] / (2.0 * nrm) else -1.0
    else:
        scale = 0.0
        for i in range(d):
            scale += abs(v[i])
        scale /= d
        for i in range(d):
            out[i] = scale * sign_value(v[i], sign_zero, gen)


@njit(cache=True, inline="always")
def attack_row(attack, out, gen):
    """A blind Byzantine worker's message: INVERT sends -msg; RANDOM sends |msg_i| with a fair random sign
    (one uniform per coordinate)."""
    if attack == Attack.INVERT:
        for i in range(out.shape[0]):
            out[i] = -out[i]
    else:
        for i in range(out.shape[0]):
            out[i] = abs(out[i]) if gen.random() < 0.5 else -abs(out[i])


@njit(cache=True)
def finish_aggregate(rule, M, agg, tie, gen):
    """From the sum to the broadcast: MEAN divides by M; MAJORITY takes sign(sum), and a tied coordinate
    (sum exactly 0) becomes a fair +-1 from the server's stream (Tie.RANDOM, coordinate order) or 0."""
    d = agg.shape[0]
    if rule == Aggregate.MEAN:
        for i in range(d):
            agg[i] /= M
    else:
        for i in range(d):
            s = agg[i]
            if s > 0.0:
                agg[i] = 1.0
            elif s < 0.0:
                agg[i] = -1.0
            elif tie == Tie.ZERO:
                agg[i] = 0.0
            else:
                agg[i] = 1.0 if gen.random() < 0.5 else -1.0
