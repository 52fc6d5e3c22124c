"""Sums of squares of numbers given by the user, in a power-of-two unit so that they stay finite and nonzero.

The diagnostics of per-sample gradients sum squares of the gradients (docs/theory.md §6, §9): entries near
1e200 overflow such sums to infinity (and their differences to NaN), entries near 1e-200 underflow them to 0.
The quantities reported (Delta_S, B_S, B_simple, the sign laws) are ratios that do not change when every
gradient is divided by the same unit u, so the sums are kept in units of u (sums of values in u, of squares in
u^2). u is a power of two, so dividing by it is exact (bit for bit) for every number that does not underflow,
and u = 1 whenever the largest magnitude lies in [2^-SAFE, 2^SAFE]: ordinary gradients are summed exactly as
without this module. One pass over row blocks keeps a running unit (``Units``): a block with a larger
magnitude raises it, and the sums so far are rescaled by the exact power of two between the units."""

from __future__ import annotations

import math

#: magnitudes within [2^-SAFE, 2^SAFE] are summed in the unit 1: sums of squares of up to 2^60 of them stay
#: finite and normal numbers
SAFE = 200


def unit_for(largest: float) -> float:
    """The unit for numbers of largest magnitude ``largest``: 1 within [2^-SAFE, 2^SAFE] (or for 0), else the
    power of two 2^e with largest / 2^e in [1/2, 1) (in [1, 2) for the largest floats, whose 2^e would be past
    the float range)."""
    if largest == 0 or 2.0**-SAFE <= largest <= 2.0**SAFE or not math.isfinite(largest):
        return 1.0
    return math.ldexp(1.0, min(math.frexp(largest)[1], 1023))


class Units:
    """The running unit of a one-pass sum over blocks: ``fit(largest)`` before each block returns the factor
    r = old unit / new unit by which sums of values so far must be multiplied (r^2 for sums of squares); the
    block itself is then divided by ``unit``."""

    def __init__(self) -> None:
        self.unit = 1.0
        self._set = False  # a block with a nonzero value has been seen

    def fit(self, largest: float) -> float:
        if largest == 0:
            return 1.0
        want = unit_for(largest)
        if not self._set:  # every sum so far is 0: any unit will do
            self._set, self.unit = True, want
            return 1.0
        if want <= self.unit:
            return 1.0
        r, self.unit = self.unit / want, want
        return r
