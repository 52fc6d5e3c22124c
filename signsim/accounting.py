"""Communication accounting, docs/theory.md §7: bits per message and per direction, kept apart from the compressors.

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
qsgd:s                 32 (norm) + 1 (format) + min(d (1 + L), n (I + 1 + L)), L = ceil(log2(s + 1))
                       bits for a level, I = max(1, ceil(log2 d)) for an index, n non-zero levels
terngrad               32 (scale) + 2 d (ternary)
top-k:k, rand-k:k      k (32 + I): k (index, float) pairs
natural                9 d: a sign and an 8-bit exponent per coordinate
onebit (1-bit SGD)     d (the sign mask) + 64 (the two means)
=====================  ==========================================================================

=========================  ======================================================================
server broadcast           bits
=========================  ======================================================================
mean of floats / of EF     32 d (scaled signs of different scales average to arbitrary floats)
mean of signs              ceil(log2(M + 1)) d: the integer sum of M values in {-1, +1} takes M + 1
                           values; ceil(log2(2M + 1)) d when messages may contain 0
majority vote              d, or 2 d when ties are broken to 0 and a tie can happen (M even, or
                           messages that may contain 0)
mean of qsgd, terngrad,    32 d
natural, onebit, scaled
mean of top-k, rand-k      1 + min(32 d, n (32 + I)), n the non-zero entries of the broadcast,
                           counted as the run goes (``broadcast_is_sparse``)
median, trimmed mean       32 d
=========================  ======================================================================

Byzantine workers send messages of the same size. These formulas are written apart from the kernels, which
count the bits of every message as they produce it; the tests compare the two. Everything here is a pure
function of the settings, so
it can be audited and tested on its own (``tests/test_accounting.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from signsim.codes import Aggregate, Compressor, SignZero, Tie

FLOAT_BITS = 32


def messages_may_be_zero(compressor: Compressor, sign_zero: SignZero) -> bool:
    """Can a coordinate of a worker message be exactly 0 (so that a sum of messages can tie at 0)?"""
    if compressor in (Compressor.SIGN, Compressor.SCALED_SIGN):
        return sign_zero == SignZero.ZERO
    return True  # floats can be 0; a stochastic sign of the zero vector is 0


def index_bits(d: int) -> int:
    """Bits of one coordinate index among d: max(1, ceil(log2 d))."""
    return max(1, (d - 1).bit_length())


def uplink_bits(compressor: Compressor, d: int, sign_zero: SignZero, param: float = 0,
                nonzero: int | None = None) -> int:
    """Bits of one worker's message (``param``: s of QSGD, k of top-k and rand-k; ``nonzero``: QSGD's
    non-zero levels, d when unknown)."""
    per_sign = 2 if sign_zero == SignZero.ZERO else 1
    if compressor == Compressor.QSGD:
        n = d if nonzero is None else nonzero
        level = (int(param)).bit_length()  # ceil(log2(s + 1))
        return FLOAT_BITS + 1 + min(d * (1 + level), n * (index_bits(d) + 1 + level))
    if compressor == Compressor.TERNGRAD:
        return FLOAT_BITS + 2 * d
    if compressor in (Compressor.TOP_K, Compressor.RAND_K):
        return int(param) * (FLOAT_BITS + index_bits(d))
    if compressor == Compressor.NATURAL:
        return 9 * d
    if compressor == Compressor.ONEBIT:
        return d + 2 * FLOAT_BITS
    if compressor == Compressor.IDENTITY:
        return FLOAT_BITS * d
    if compressor == Compressor.SIGN:
        return per_sign * d
    if compressor == Compressor.STO_SIGN:
        return d
    if compressor == Compressor.SCALED_SIGN:
        return per_sign * d + FLOAT_BITS
    raise ValueError(f"unknown compressor {compressor}")


def broadcast_is_sparse(compressor: Compressor, aggregate: Aggregate) -> bool:
    """The mean of sparse messages is sent as (index, float) pairs when that is cheaper; its size depends on
    the iteration, so the run counts it: 1 + min(32 d, n (32 + I)) for n non-zero entries."""
    return aggregate == Aggregate.MEAN and compressor in (Compressor.TOP_K, Compressor.RAND_K)


def sparse_broadcast_bits(d: int, nonzero: int) -> int:
    return 1 + min(FLOAT_BITS * d, nonzero * (FLOAT_BITS + index_bits(d)))


def downlink_bits(compressor: Compressor, aggregate: Aggregate, M: int, d: int, sign_zero: SignZero,
                  tie: Tie) -> int:
    """Bits of the server's broadcast to one worker (for a sparse broadcast: its dense upper bound)."""
    if aggregate == Aggregate.MAJORITY:
        ties_possible = M % 2 == 0 or messages_may_be_zero(compressor, sign_zero)
        return (2 if tie == Tie.ZERO and ties_possible else 1) * d
    if aggregate in (Aggregate.MEDIAN, Aggregate.TRIMMED):
        return FLOAT_BITS * d
    if aggregate != Aggregate.MEAN:
        raise ValueError(f"unknown aggregate {aggregate}")
    if compressor in (Compressor.IDENTITY, Compressor.SCALED_SIGN, Compressor.QSGD, Compressor.TERNGRAD,
                      Compressor.NATURAL, Compressor.ONEBIT):
        return FLOAT_BITS * d
    if broadcast_is_sparse(compressor, aggregate):
        return sparse_broadcast_bits(d, d)
    if compressor not in (Compressor.SIGN, Compressor.STO_SIGN):
        raise ValueError(f"unknown compressor {compressor}")
    values = 2 * M + 1 if compressor == Compressor.SIGN and sign_zero == SignZero.ZERO else M + 1
    return math.ceil(math.log2(values)) * d


@dataclass(frozen=True)
class BitsPerIteration:
    up: int  # summed over the M workers
    down: int  # the broadcast times M


def bits_per_iteration(compressor: Compressor, aggregate: Aggregate, M: int, d: int, sign_zero: SignZero,
                       tie: Tie, param: float = 0) -> BitsPerIteration:
    """Bits of one iteration (upper bounds for the messages whose size varies: QSGD, sparse broadcasts)."""
    return BitsPerIteration(
        up=M * uplink_bits(compressor, d, sign_zero, param),
        down=M * downlink_bits(compressor, aggregate, M, d, sign_zero, tie),
    )
