"""``signsim.draws.index`` draws what NumPy's ``Generator.integers(0, n)`` draws, from the same bits."""

import numpy as np
import pytest
from numba import njit

from signsim.draws import index


@njit(cache=True)
def _interleaved(gen, n, k, out_int, out_float):
    for i in range(k):
        out_int[i] = index(gen, n)
        out_float[i] = gen.random()  # the stream position after each draw must match too


# 3 * 2^30 and 3 * 2^61 (+ a little) reject about a quarter of their raw draws: Lemire's rejection loops run
@pytest.mark.parametrize("n", [1, 2, 3, 10, 1000, 2**31, 2**31 + 1, 3 * 2**30, 3 * 2**30 + 7, 2**32 - 1, 2**32,
                               2**32 + 1, 2**40 + 3, 3 * 2**61, 3 * 2**61 + 5, 2**62, 2**63 - 1])
def test_index_equals_numpy_integers(n):
    k = 400
    ours_i, ours_f = np.empty(k, dtype=np.int64), np.empty(k)
    _interleaved(np.random.default_rng(n % 97), n, k, ours_i, ours_f)
    gen = np.random.default_rng(n % 97)
    numpy_i, numpy_f = np.empty(k, dtype=np.int64), np.empty(k)
    for i in range(k):
        numpy_i[i] = gen.integers(0, n)
        numpy_f[i] = gen.random()
    assert np.array_equal(ours_i, numpy_i) and np.array_equal(ours_f, numpy_f)
