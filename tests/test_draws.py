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


@pytest.mark.parametrize("n", [1, 2, 3, 10, 1000, 2**31, 2**32 - 1, 2**32, 2**32 + 1, 2**40 + 3, 2**62])
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
    assert ours_i.min() >= 0 and ours_i.max() < n
