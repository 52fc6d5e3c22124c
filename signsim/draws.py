"""Scalar random draws that allocate nothing and equal NumPy's, bit for bit (docs/theory.md §2.4).

In Numba, ``gen.integers(0, n)`` builds a one-element array for every draw: an allocation per sampled row,
and the reference counting that comes with it. ``index(gen, n)`` draws the same integer from the same bits by
the same algorithm that NumPy's ``Generator.integers(0, n)`` uses for int64 (Lemire's bounded rejection on 32-bit
draws when n - 1 < 2^32, on 64-bit draws beyond), through Numba's own translation of NumPy's C code, and
allocates nothing. ``tests/base/test_draws.py`` compares the streams with NumPy's.
"""

import numpy as np
from numba import njit
from numba.np.random.generator_core import next_uint32
from numba.np.random.random_methods import bounded_lemire_uint64, buffered_bounded_lemire_uint32

UINT32_MAX = 0xFFFFFFFF


@njit(cache=True, inline="always")
def index(gen, n):
    """One draw of ``gen.integers(0, n)``, uniform on {0, ..., n - 1}; n = 1 draws nothing. Needs n >= 1 (the
    callers' ranges are never empty): unlike NumPy, nothing here checks it."""
    rng = np.uint64(n - 1)
    if rng == 0:
        return np.int64(0)
    if rng < UINT32_MAX:
        return np.int64(buffered_bounded_lemire_uint32(gen.bit_generator, rng))
    if rng == UINT32_MAX:
        return np.int64(next_uint32(gen.bit_generator))
    return np.int64(bounded_lemire_uint64(gen.bit_generator, rng))
