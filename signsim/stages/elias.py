"""Lengths of the Elias omega code ("Elias recursive coding", Elias 1975), the integer code of QSGD's message
(Alistarh et al. 2017; docs/theory.md §8.1).

omega(k) for an integer k >= 1: start from "0"; while k > 1, prepend the binary representation of k (b bits) and
set k = b - 1. Its length is L(1) = 1 and L(k) = b(k) + L(b(k) - 1) for k >= 2, b(k) = floor(log2 k) + 1 the bit
length of k: log k + log log k + ... + 1 in the paper's words. L is non-decreasing, and L(k) <= 2k - 1.

``omega_bits`` is plain Python on integers (the kernels call it; Numba compiles it into them); ``omega_bits_np``
is its NumPy reference, from the closed form above on arrays.
"""


def omega_bits(k):
    """Bits of the Elias omega code of the integer k >= 1 (a loop, no recursion: kernels inline it)."""
    n = 1
    while k > 1:
        b = 0
        m = k
        while m > 0:
            m >>= 1
            b += 1
        n += b
        k = b - 1
    return n


def omega_bits_np(k):
    """The same length for an integer array k >= 1, by L(k) = 1 + sum of the bit lengths along k, b(k) - 1, ..."""
    import numpy as np

    k = np.asarray(k, dtype=np.int64).copy()
    if np.any(k < 1):
        raise ValueError("the Elias omega code is defined for integers >= 1")
    n = np.ones(k.shape, dtype=np.int64)
    while np.any(k > 1):
        live = k > 1
        b = np.zeros(k.shape, dtype=np.int64)  # bit length of k, by shifts (exact for every int64)
        m = k.copy()
        while np.any(m > 0):
            b += m > 0
            m >>= 1
        n = np.where(live, n + b, n)
        k = np.where(live, b - 1, k)
    return n
