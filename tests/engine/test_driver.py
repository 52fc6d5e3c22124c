"""The driver's fast path (``signsim.engine.driver``): a later chunk calls the compiled loop's entry point only with
arguments of the first chunk's kinds (``argument_kinds``), which equal kinds mean equal Numba types; the oracle is
Numba's own ``typeof``."""

from __future__ import annotations

import numpy as np
from numba import typeof

from signsim.engine.driver import argument_kinds


def _variants():
    a = np.zeros((3, 4))
    ro = a.copy()
    ro.flags.writeable = False
    gens = [np.random.default_rng(0)]
    return [
        (a, np.zeros(5, dtype=np.int64), gens),
        (np.zeros((3, 4), dtype=np.int64), np.zeros(5, dtype=np.int64), gens),  # dtype
        (np.asfortranarray(np.zeros((3, 4))), np.zeros(5, dtype=np.int64), gens),  # layout
        (a[:, ::2], np.zeros(5, dtype=np.int64), gens),  # not contiguous
        (ro, np.zeros(5, dtype=np.int64), gens),  # read-only
        (np.zeros(12), np.zeros(5, dtype=np.int64), gens),  # dimensions
        (a, (np.zeros(2), np.zeros(2)), gens),  # a tuple
        (a, (np.zeros(2), np.zeros(2, dtype=np.int32)), gens),
    ]


def test_equal_kinds_mean_equal_numba_types_and_other_types_other_kinds():
    variants = _variants()
    for i, u in enumerate(variants):
        for v in variants[i:]:
            same_kinds = argument_kinds(u) == argument_kinds(v)
            same_types = tuple(typeof(x) for x in u) == tuple(typeof(x) for x in v)
            assert same_kinds == same_types, (u, v)


def test_new_arrays_of_the_same_kinds_keep_the_fast_path():
    u = (np.zeros((3, 4)), np.arange(5), [np.random.default_rng(1)])
    v = (np.ones((7, 2)), np.arange(9), [np.random.default_rng(2), np.random.default_rng(3)])
    assert argument_kinds(u) == argument_kinds(v)
