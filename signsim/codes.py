"""Integer codes that select branches inside the compiled loop.

Numba caches a kernel only when it dispatches on plain integers (not on function objects), so every choice a
run makes (compressor, server rule, sign conventions, schedule, attack) reaches the engine as one of these.
This module imports nothing heavy: the CLI and the registries can use it freely.
"""

from enum import IntEnum


class Compressor(IntEnum):
    """What a worker sends (math.md §2)."""

    IDENTITY = 0  # full-precision vector (SGD)
    SIGN = 1  # sign(v), sign(0) by the SignZero policy
    STO_SIGN = 2  # stochastic sign: +1 w.p. 1/2 + v_i / (2 ||v||_2), else -1
    SCALED_SIGN_EF = 3  # error feedback: p = gamma v + e, Delta = (||p||_1 / d) sign(p), e <- p - Delta


class Aggregate(IntEnum):
    """What the server does with the M messages."""

    MEAN = 0  # (1/M) sum_m msg_m
    MAJORITY = 1  # sign(sum_m msg_m), ties by the Tie policy


class SignZero(IntEnum):
    """What sign(0) returns in a worker message."""

    RANDOM = 0  # a fair random +-1 (keeps 1-bit messages)
    PLUS = 1  # +1
    ZERO = 2  # 0 (a ternary message: 2 bits per coordinate)


class Tie(IntEnum):
    """How the server breaks a tied vote (sum of messages exactly 0)."""

    RANDOM = 0  # a fair random +-1 drawn from the server's stream
    ZERO = 1  # 0 (the broadcast becomes ternary when ties can occur)


class Schedule(IntEnum):
    """Step-size schedule: gamma_k."""

    CONSTANT = 0  # gamma_k = gamma_0
    SQRT = 1  # gamma_k = gamma_0 / sqrt(k + 1)


class Attack(IntEnum):
    """What a blind Byzantine worker does to its own message (Bernstein et al. 2019)."""

    INVERT = 0  # send -msg
    RANDOM = 1  # send |msg_i| times a fair random sign, coordinate by coordinate


class Status(IntEnum):
    """How the compiled loop ended a chunk."""

    OK = 0
    DIVERGED = 1
    TARGET = 2  # the loss reached the stop-loss target


def choice(enum: type[IntEnum], name: str) -> IntEnum:
    """Map a user-facing name (``'sto-sign'``, ``'random'``) to its code."""
    return enum[name.upper().replace("-", "_")]


def names(enum: type[IntEnum]) -> list[str]:
    """The user-facing names of an enum, in code order."""
    return [e.name.lower().replace("_", "-") for e in enum]
