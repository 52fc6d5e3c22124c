"""Worker splits: partitions, label concentration, split-batch frequencies."""

import numpy as np
import pytest
from numba import njit

from signsim.data.splits import SHARD, make_split
from signsim.problems.sampling import minibatch_group

LABELS = np.repeat(np.arange(10), 100).astype(float)


@pytest.mark.parametrize("spec", ["iid", "sorted", "label-skew:0.1", "label-skew:100"])
@pytest.mark.parametrize("workers", [1, 3, 8])
def test_shards_partition_the_data(spec, workers):
    s = make_split(spec, LABELS, workers, np.random.default_rng(0))
    assert s.mode == SHARD and s.groups == workers
    assert np.array_equal(np.sort(s.idx), np.arange(LABELS.size))
    assert all(s.group(m).size > 0 for m in range(workers))


def label_entropy(s, workers):
    ent = []
    for m in range(workers):
        counts = np.bincount(LABELS[s.group(m)].astype(int), minlength=10) / s.group(m).size
        counts = counts[counts > 0]
        ent.append(-(counts * np.log(counts)).sum())
    return np.mean(ent)


def test_label_skew_interpolates_between_iid_and_concentrated():
    M = 8
    iid = label_entropy(make_split("iid", LABELS, M, np.random.default_rng(1)), M)
    big = label_entropy(make_split("label-skew:1000", LABELS, M, np.random.default_rng(1)), M)
    small = label_entropy(make_split("label-skew:0.05", LABELS, M, np.random.default_rng(1)), M)
    assert abs(big - iid) < 0.05 and iid > np.log(10) - 0.1
    assert small < 0.5 * iid


def test_sorted_shards_hold_few_labels():
    s = make_split("sorted", LABELS, 10, np.random.default_rng(0))
    assert all(np.unique(LABELS[s.group(m)]).size == 1 for m in range(10))


@njit
def group_counts(mode, gen, n):
    c = np.zeros(2, dtype=np.int64)
    for _ in range(n):
        c[minibatch_group(mode, 0, gen)] += 1
    return c


def test_split_batch_draws_each_half_about_half_the_time():
    s = make_split("split-batch", LABELS, 4, np.random.default_rng(0))
    assert set(np.unique(LABELS[s.group(0)])) == {0, 1, 2, 3, 4}
    assert set(np.unique(LABELS[s.group(1)])) == {5, 6, 7, 8, 9}
    n = 100_000
    c = group_counts(s.mode, np.random.default_rng(3), n)
    assert abs(c[0] / n - 0.5) < 5 * np.sqrt(0.25 / n)
