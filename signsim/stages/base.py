"""What every stage module declares, and the helpers the stage kernels share (docs/theory.md §2, §8).

A stage is one module in one of the folders ``momentum``, ``compressors``, ``error_feedback``, ``aggregation``,
``attacks`` (or a researcher's own file, ``signsim.stages.plugins``). It declares, in one place:

- ``NAME`` and ``PARAMS`` (a tuple of ``Param``: the spec grammar ``NAME[:p1[:p2]]``), ``SUMMARY`` (one line),
  ``THEORY`` (its section of docs/theory.md);
- compressors: ``KIND`` ("unbiased", "contractive" or "biased") and ``constant(d, *params)`` (omega for an
  unbiased compressor, alpha for a contractive one, None when there is none); ``SCRATCH`` (per-worker int64
  scratch of length d, or none); ``BROADCAST`` (how the server sends the mean of these messages); ``kernel``
  (out <- C(v), returns the bits of the message as encoded), ``bits`` (the same count as a formula, for the
  accounting) and ``reference`` (NumPy, same draws in the same order, for the replay); optionally
  ``message_bits(v, out, p, sign_zero)`` (NumPy: the exact bits of one message when its size depends on more than
  its count of non-zero entries, e.g. QSGD's Elias code; ``bits`` is then an upper bound); optionally
  ``moments(G, p, sign_zero)`` (NumPy: E||C(g_j)||^2 and E C(g_j) for each row g_j of G, in closed form;
  ``diversity --transform`` then reports exact expectations, else it samples ``kernel``, docs/theory.md §10.4),
  ``DEGREE`` (k with C(2^j v) = 2^(jk) C(v) for every integer j, draw for draw: the diversity's sums are then kept
  in a power-of-two unit, finite for gradients of any magnitude) and ``COORDINATE_SIGN`` (True when C(v)_i =
  sign(v_i) with sign(0) by the policy, a function of v_i alone: ``--votes binomial`` draws its vote counts, §11)
  and ``ALLREDUCE`` (True when the sum of two messages is a message of the same encoding: ``--topology allreduce``
  may carry them, §14);
- attacks may declare ``sign_law(p)``: a blind attack's effect on a sign message, P(sent | own sign) as 3 x 3 rows
  (own +1, 0, -1) of columns (sent +1, 0, -1) (``--votes binomial`` takes the attacks that do, §11);
  aggregations whose ``SUMMED`` is True read only the sum of the messages (``--votes binomial`` takes them too);
- the other kinds the functions their folder's ``__init__`` names.

Kernels are plain Python functions that use ``math`` only: the engine compiles them with Numba when a run
composes them (``signsim.engine.compose``), so that importing a stage (for ``--help``, ``signsim list``, a
config check) costs nothing. A stage's NumPy reference imports NumPy itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from signsim.errors import InputError
from signsim.numbers import to_float
from signsim.stages import kinds

FLOAT_BITS = 32
#: the kinds of stage, in the order of a step, and the option that names each (``signsim.stages.kinds``)
KINDS = tuple(k.name for k in kinds.PRIMARY)  # (a slot of a kind, kinds.Kind.of, takes that kind's modules)
OPTION = {k.name: k.option for k in kinds.TABLE}
#: every stage kernel takes its parameters as a float64 array of this length
MAX_PARAMS = 4


@dataclass(frozen=True)
class Param:
    """One parameter of a stage spec: ``kind`` "int", "float" or "choice" (then ``choices`` names the values,
    coded 0, 1, ... in order); values outside [low, high] (``low_open``: strictly above low) are refused."""

    name: str
    kind: str = "float"
    default: float | str | None = None
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] = ()
    #: a default that depends on the dimension d (e.g. top-k's k = ceil(d / 10)); used when ``default`` is None
    default_of_d: object = None
    #: how that default reads in the docs and ``signsim list`` (e.g. "ceil(d/10)")
    default_text: str = ""
    #: a trailing parameter left out of the resolved spec while it has its default (one added after results
    #: recorded the spec without it: ``qsgd:4`` stays ``qsgd:4``, ``qsgd:4:elias`` is written out)
    omit_default: bool = False

    def describe(self) -> str:
        if self.kind == "choice":
            return "|".join(self.choices)
        lo = "" if self.low is None else ("(" if self.low_open else "[") + f"{self.low:g}"
        hi = "" if self.high is None else f"{self.high:g}" + (")" if self.high_open else "]")
        rng = f" in {lo or '(-inf'}, {hi or 'inf)'}" if lo or hi else ""
        return f"{self.name} ({self.kind}{rng})"

    def parse(self, text: str, option: str, spec: str) -> float:
        """The value of ``text`` as this parameter, or InputError naming the spec."""
        if self.kind == "choice":
            if text not in self.choices:
                raise InputError(f"{option} {spec}: {self.name} must be one of {', '.join(self.choices)}")
            return float(self.choices.index(text))
        try:
            value = to_float(text)
        except (ValueError, OverflowError):
            raise InputError(f"{option} {spec}: {self.name} must be a number") from None
        if not math.isfinite(value):
            raise InputError(f"{option} {spec}: {self.name} must be finite")
        return self.check(value, option, spec)

    def check(self, value: float, option: str, spec: str) -> float:
        if self.kind == "int" and value != int(value):
            raise InputError(f"{option} {spec}: {self.name} must be an integer")
        if self.low is not None and (value < self.low or (self.low_open and value == self.low)):
            raise InputError(f"{option} {spec}: {self.name} must be {'>' if self.low_open else '>='} "
                             f"{_bound(self.low)}")
        if self.high is not None and (value > self.high or (self.high_open and value == self.high)):
            raise InputError(f"{option} {spec}: {self.name} must be {'<' if self.high_open else '<='} "
                             f"{_bound(self.high)}")
        return value

    def shown(self, value: float) -> str:
        if self.kind == "choice":
            return self.choices[int(value)]
        return str(int(value)) if self.kind == "int" else f"{value:g}"


def _bound(x: float) -> str:
    """A bound as the user would write it: an integer in full (2147483648, not 2.14748e+09)."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e16 else f"{x:g}"


# ----- helpers the kernels share (plain Python, compiled into each kernel that calls them) -----

#: sign(0) policies, by the codes of ``signsim.codes.SignZero``
SIGN_ZERO_RANDOM, SIGN_ZERO_PLUS, SIGN_ZERO_ZERO = 0, 1, 2


def sign_value(v, sign_zero, gen):
    """sign(v) with sign(0) by policy: RANDOM draws one uniform (< 1/2 -> +1), PLUS gives +1, ZERO gives 0."""
    if v > 0.0:
        return 1.0
    if v < 0.0:
        return -1.0
    if sign_zero == SIGN_ZERO_PLUS:
        return 1.0
    if sign_zero == SIGN_ZERO_ZERO:
        return 0.0
    if sign_zero == SIGN_ZERO_RANDOM:
        return 1.0 if gen.random() < 0.5 else -1.0
    return math.nan  # unknown code (checked before the loop)


def index_bits_jit(d):
    """Bits of one coordinate index: max(1, ceil(log2 d)) (the kernels' version, in floats)."""
    b = 1.0
    while 2.0 ** b < d:
        b += 1.0
    return b


def index_bits(d: int) -> int:
    """Bits of one coordinate index among d: max(1, ceil(log2 d))."""
    return max(1, (int(d) - 1).bit_length())
