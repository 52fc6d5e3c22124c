"""Minibatch sampling from a worker's index group (see ``signsim.data.splits``), in Numba; the exact local
gradient of ``--batch-size full``; the labels a worker reads (``--attack label-flip``).

Draw order for one minibatch (the NumPy references follow it): under ``split-batch`` one uniform picks the
group (< 1/2: the first), then tau indices, each ``gen.integers(0, group size)``.

**Full batch** (``--batch-size full``, docs/theory.md §5): the kernels' batch size tau is then ``FULL_BATCH`` (0),
and the oracle is the exact gradient of the worker's local objective f_m = (1/n_m) sum_{j in group m} f_j, every
row of its group once, in index order, with no draw (``full_group``: the whole training set under ``shared``, the
worker's shard under a shard split; ``split-batch`` has no local objective and is refused by the config). The
additive noise (``--noise``) is then one draw per coordinate (``noise_draws``).

**Flipped labels** (``--attack label-flip``, docs/theory.md §8.5): the first ``pi[P_FLIPPED]`` workers read the
label of row j at ``b[j + A.shape[0]]``, where the run's data setup stored the flipped copy of the training labels
(``finite_sum.with_flipped_labels``); every other worker, and every evaluation of f, reads ``b[j]``.
"""

import numpy as np
from numba import njit

from signsim import draws
from signsim.data.splits import SHARD, SHARED

# layout of the integer parameters shared by every finite-sum problem; a problem's own follow from P_OWN on
P_MODE, P_NTRAIN, P_NTEST, P_FEATURES, P_FLIPPED = 0, 1, 2, 3, 4
P_OWN = 5

#: ``--batch-size full``: the option's word, and the batch size tau the kernels and the NumPy references take for it
FULL = "full"
FULL_BATCH = 0


def is_full(batch_size) -> bool:
    """Is ``batch_size`` (an option value, or the kernels' tau) the full local batch?"""
    return batch_size == FULL or (not isinstance(batch_size, str) and int(batch_size) == FULL_BATCH)


def tau_code(batch_size) -> int:
    """The kernels' tau of the option value ``batch_size``: the integer itself, ``FULL_BATCH`` for ``full``."""
    return FULL_BATCH if is_full(batch_size) else int(batch_size)


def noise_draws(batch_size) -> int:
    """How many draws of the additive noise a worker's gradient averages: tau for a minibatch of tau, one for the
    full local batch (the noise perturbs the exact local gradient once, docs/theory.md §5)."""
    return 1 if is_full(batch_size) else int(batch_size)


@njit(cache=True, inline="always")
def minibatch_group(mode, worker, gen):
    if mode == SHARED:
        return np.int64(0)
    if mode == SHARD:
        return np.int64(worker)  # a prange index may be unsigned: keep one integer type
    return np.int64(0) if gen.random() < 0.5 else np.int64(1)


@njit(cache=True, inline="always")
def full_group(mode, worker):
    """The group whose every row a full-batch oracle reads: 0 under ``shared``, the worker's under a shard split;
    -1 under ``split-batch`` (no local objective: the config refuses it, the oracle writes NaN)."""
    if mode == SHARED:
        return np.int64(0)
    if mode == SHARD:
        return np.int64(worker)
    return np.int64(-1)


@njit(cache=True, inline="always")
def label_offset(pi, A, worker):
    """Where worker m reads its labels: b[j + offset], offset = the rows of A for the first pi[P_FLIPPED] workers
    (the flipped copy, ``--attack label-flip``), 0 for the others."""
    return np.int64(A.shape[0]) if worker < pi[P_FLIPPED] else np.int64(0)


@njit(cache=True, inline="always")
def draw_index(gen, ptr, idx, g):
    lo = ptr[g]
    return idx[lo + draws.index(gen, ptr[g + 1] - lo)]


@njit(cache=True)
def minibatch_rows(mode, workers, gens, ptr, idx, out):
    """out[h, j] <- the h-th minibatch (tau = out.shape[2] indices) of participant ``workers[j]``, drawn from
    ``gens[j]`` (a typed list) as the compiled oracles draw them: participant by participant, its H minibatches in
    order. ``minibatch_ref`` is its NumPy reference (tau >= 1 here; the full batch draws nothing)."""
    H, S, tau = out.shape
    if len(gens) != S or len(workers) != S:
        raise ValueError("as many participants, generators and rows as each other")
    for j in range(S):
        gen = gens.getitem_unchecked(j)
        for h in range(H):
            g = minibatch_group(mode, workers[j], gen)
            for i in range(tau):
                out[h, j, i] = draw_index(gen, ptr, idx, g)


def minibatch_ref(mode: int, worker: int, gen: np.random.Generator, tau: int, ptr, idx) -> np.ndarray:
    """NumPy reference of the same draws: the sample indices of one minibatch (``tau`` = FULL_BATCH: every row of
    the worker's group, in index order, with no draw)."""
    if is_full(tau):
        g = 0 if mode == SHARED else worker if mode == SHARD else None
        if g is None:
            raise ValueError("--batch-size full has no local objective under split-batch")
        return idx[ptr[g]: ptr[g + 1]]
    if mode == SHARED:
        g = 0
    elif mode == SHARD:
        g = worker
    else:
        g = 0 if gen.random() < 0.5 else 1
    group = idx[ptr[g]: ptr[g + 1]]
    return group[gen.integers(0, group.size, tau)]
