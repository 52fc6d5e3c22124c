"""Minibatch sampling from a worker's index group (see ``signsim.data.splits``), in Numba.

Draw order for one minibatch (the NumPy references follow it): under ``split-batch`` one uniform picks the
group (< 1/2: the first), then tau indices, each ``gen.integers(0, group size)``.
"""

import numpy as np
from numba import njit

from signsim import draws
from signsim.data.splits import SHARD, SHARED

# layout of the integer parameters shared by every finite-sum problem
P_MODE, P_NTRAIN, P_NTEST, P_FEATURES = 0, 1, 2, 3


@njit(cache=True, inline="always")
def minibatch_group(mode, worker, gen):
    if mode == SHARED:
        return np.int64(0)
    if mode == SHARD:
        return np.int64(worker)  # a prange index may be unsigned: keep one integer type
    return np.int64(0) if gen.random() < 0.5 else np.int64(1)


@njit(cache=True, inline="always")
def draw_index(gen, ptr, idx, g):
    lo = ptr[g]
    return idx[lo + draws.index(gen, ptr[g + 1] - lo)]


def minibatch_ref(mode: int, worker: int, gen: np.random.Generator, tau: int, ptr, idx) -> np.ndarray:
    """NumPy reference of the same draws: the sample indices of one minibatch."""
    if mode == SHARED:
        g = 0
    elif mode == SHARD:
        g = worker
    else:
        g = 0 if gen.random() < 0.5 else 1
    group = idx[ptr[g]: ptr[g + 1]]
    return group[gen.integers(0, group.size, tau)]
