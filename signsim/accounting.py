"""Communication accounting, math.md §7: bits per message and per direction, kept apart from the compressors.

Uplink of one iteration = sum over workers of the message size; downlink = the server's broadcast times M.
Per message of d coordinates:

=====================  ==========================================================================
worker message         bits
=====================  ==========================================================================
float vector (SGD)     32 d
sign                   d, or 2 d when sign(0) = 0 is allowed (a ternary message)
stochastic sign        d (values +-1; the zero vector, which has probability 0 under noise, is not
                       counted separately)
scaled sign (EF)       d (2 d ternary) + 32 for the scale
=====================  ==========================================================================

=========================  ======================================================================
server broadcast           bits
=========================  ======================================================================
mean of floats / of EF     32 d (scaled signs of different scales average to arbitrary floats)
mean of signs              ceil(log2(M + 1)) d: the integer sum of M values in {-1, +1} takes M + 1
                           values; ceil(log2(2M + 1)) d when messages may contain 0
majority vote              d, or 2 d when ties are broken to 0 and a tie can happen (M even, or
                           messages that may contain 0)
=========================  ======================================================================

Byzantine workers send messages of the same size. Everything here is a pure function of the settings, so
it can be audited and tested on its own (``tests/test_accounting.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from signsim.codes import Aggregate, Compressor, SignZero, Tie

FLOAT_BITS = 32


def messages_may_be_zero(compressor: Compressor, sign_zero: SignZero) -> bool:
    """Can a coordinate of a worker message be exactly 0 (so that a sum of messages can tie at 0)?"""
    if compressor in (Compressor.SIGN, Compressor.SCALED_SIGN_EF):
        return sign_zero == SignZero.ZERO
    return True  # floats can be 0; a stochastic sign of the zero vector is 0


def uplink_bits(compressor: Compressor, d: int, sign_zero: SignZero) -> int:
    """Bits of one worker's message."""
    per_sign = 2 if sign_zero == SignZero.ZERO else 1
    if compressor == Compressor.IDENTITY:
        return FLOAT_BITS * d
    if compressor == Compressor.SIGN:
        return per_sign * d
    if compressor == Compressor.STO_SIGN:
        return d
    if compressor == Compressor.SCALED_SIGN_EF:
        return per_sign * d + FLOAT_BITS
    raise ValueError(f"unknown compressor {compressor}")


def downlink_bits(compressor: Compressor, aggregate: Aggregate, M: int, d: int, sign_zero: SignZero,
                  tie: Tie) -> int:
    """Bits of the server's broadcast to one worker."""
    if aggregate == Aggregate.MAJORITY:
        ties_possible = M % 2 == 0 or messages_may_be_zero(compressor, sign_zero)
        return (2 if tie == Tie.ZERO and ties_possible else 1) * d
    if compressor in (Compressor.IDENTITY, Compressor.SCALED_SIGN_EF):
        return FLOAT_BITS * d
    values = 2 * M + 1 if compressor == Compressor.SIGN and sign_zero == SignZero.ZERO else M + 1
    return math.ceil(math.log2(values)) * d


@dataclass(frozen=True)
class BitsPerIteration:
    up: int  # summed over the M workers
    down: int  # the broadcast times M


def bits_per_iteration(compressor: Compressor, aggregate: Aggregate, M: int, d: int, sign_zero: SignZero,
                       tie: Tie) -> BitsPerIteration:
    return BitsPerIteration(
        up=M * uplink_bits(compressor, d, sign_zero),
        down=M * downlink_bits(compressor, aggregate, M, d, sign_zero, tie),
    )
