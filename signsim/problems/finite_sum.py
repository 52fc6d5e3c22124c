"""What the data problems (logistic, least squares, MLP) share: loading and preparing the data, splitting it
over the workers, packing it for the kernels, and the per-sample views the diagnostics need."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from signsim.data import load
from signsim.data.prepare import Prepared, prepare
from signsim.data.splits import Split, make_split
from signsim.problems.sampling import minibatch_ref
from signsim.seeding import problem_streams

#: options every data problem reads
DATA_OPTIONS = frozenset({"data", "split", "test_fraction", "standardize", "replicate", "l2", "noise"})
DATA_DEFAULTS = {"split": "shared", "test_fraction": 0.2, "standardize": True, "replicate": 1, "l2": 0.0,
                 "noise": "none"}


@dataclass
class FiniteSum:
    """Per-sample access for diagnostics: f = (1/n) sum_j f_j over the n training samples."""

    n: int
    split: Split
    #: (x, rows) -> per-sample gradients of those training rows, materialized (len(rows) x d)
    per_sample_grads: Callable[[np.ndarray, np.ndarray], np.ndarray]
    #: x -> ||grad f_j(x)||^2 for every training sample, without an n x d matrix
    per_sample_sq_norms: Callable[[np.ndarray], np.ndarray]
    classes: np.ndarray | None = None


@dataclass
class Loaded:
    prep: Prepared
    split: Split
    init_rng: np.random.Generator


def load_prepared(cfg, intercept: bool) -> Loaded:
    """Data set -> held-out split, standardization, intercept, replication -> split over workers.
    The problem's random stream gives three generators: test split, worker split, initialization."""
    r_prepare, r_split, r_init = problem_streams(cfg.seed, 3)
    prep = prepare(load(cfg.data), cfg.test_fraction, cfg.standardize, intercept, cfg.replicate, r_prepare,
                   getattr(cfg, "dtype", "float64"))
    split = make_split(cfg.split, prep.y_train, cfg.workers, r_split)
    return Loaded(prep, split, r_init)


def pack(prep: Prepared, y_train: np.ndarray, y_test: np.ndarray, split: Split, pi_extra: list[int],
         pf: list[float], dtype: str = "float64") -> dict:
    """The kernels' arrays; the data matrix A (training rows, then held-out rows) in ``dtype`` (``--dtype``),
    filled from the float64 prepared rows without a float64 copy of the whole (labels stay float64)."""
    from signsim.problems.sampling import P_FEATURES, P_MODE, P_NTEST, P_NTRAIN

    pi = np.zeros(4 + len(pi_extra), dtype=np.int64)
    pi[[P_MODE, P_NTRAIN, P_NTEST, P_FEATURES]] = [split.mode, prep.n_train, len(y_test), prep.features]
    pi[4:] = pi_extra
    A = np.empty((prep.n_train + prep.X_test.shape[0], prep.features), dtype=dtype)
    A[: prep.n_train] = prep.X_train
    A[prep.n_train:] = prep.X_test
    return dict(pf=np.asarray(pf, dtype=np.float64), pi=pi, A=A,
                b=np.concatenate([y_train, y_test]).astype(np.float64), ptr=split.ptr, idx=split.idx)


def oracle_ref_from(per_sample_grads, split: Split, d: int):
    """The NumPy oracle: mean of the per-sample gradients of one minibatch drawn as the kernel draws it."""

    def oracle_ref(x, worker, gen, tau):
        rows = minibatch_ref(split.mode, worker, gen, tau, split.ptr, split.idx)
        return per_sample_grads(x, rows).mean(axis=0)

    return oracle_ref
