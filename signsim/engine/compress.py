"""What the loop itself counts about the server's broadcast (docs/theory.md §7). The stages' kernels (compressors,
aggregations, attacks) live in their own modules, ``signsim.stages``, and are composed into each run's loop by
``signsim.engine.compose``."""

from numba import njit

FLOAT_BITS = 32.0


@njit(cache=True, inline="always")
def index_bits(d):
    """Bits of one coordinate index: max(1, ceil(log2 d))."""
    b = 1.0
    while 2.0 ** b < d:
        b += 1.0
    return b


@njit(cache=True)
def sparse_broadcast_bits(agg):
    """Bits of a broadcast sent as the cheaper of dense floats and (index, float) pairs of its non-zero
    entries, plus one format bit: 1 + min(32 d, n (32 + I))."""
    d = agg.shape[0]
    n = 0
    for i in range(d):
        if agg[i] != 0.0:
            n += 1
    return 1.0 + min(FLOAT_BITS * d, n * (FLOAT_BITS + index_bits(d)))
