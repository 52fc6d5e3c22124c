"""What the data problems (logistic, least squares, MLP) share: loading and preparing the data, splitting it
over the workers, packing it for the kernels, the per-sample views the diagnostics need, and the run's view of the
data when its Byzantine workers flip their labels (``with_flipped_labels``, docs/theory.md §8.5)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from signsim.data import load
from signsim.data.prepare import Prepared, prepare
from signsim.data.splits import Split, make_split
from signsim.problems.sampling import is_full, minibatch_ref
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
    #: (x, rows[, labels]) -> per-sample gradients of those training rows, materialized (len(rows) x d), with the
    #: rows' own labels or the ``labels`` given (a Byzantine worker's flipped ones)
    per_sample_grads: Callable[..., np.ndarray]
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
    filled from the float64 prepared rows without a float64 copy of the whole (labels stay float64). No worker reads
    flipped labels (pi[P_FLIPPED] = 0; ``with_flipped_labels`` makes a run's view where some do)."""
    from signsim.problems.sampling import P_FEATURES, P_FLIPPED, P_MODE, P_NTEST, P_NTRAIN, P_OWN

    pi = np.zeros(P_OWN + len(pi_extra), dtype=np.int64)
    pi[[P_MODE, P_NTRAIN, P_NTEST, P_FEATURES, P_FLIPPED]] = [split.mode, prep.n_train, len(y_test), prep.features, 0]
    pi[P_OWN:] = pi_extra
    A = np.empty((prep.n_train + prep.X_test.shape[0], prep.features), dtype=dtype)
    A[: prep.n_train] = prep.X_train
    A[prep.n_train:] = prep.X_test
    return dict(pf=np.asarray(pf, dtype=np.float64), pi=pi, A=A,
                b=np.concatenate([y_train, y_test]).astype(np.float64), ptr=split.ptr, idx=split.idx)


def oracle_ref_from(per_sample_grads, split: Split, d: int):
    """The NumPy oracle: mean of the per-sample gradients of one minibatch drawn as the kernel draws it; with tau =
    ``full`` (or FULL_BATCH) the mean over every row of the worker's group, the gradient of its local objective."""

    def oracle_ref(x, worker, gen, tau):
        rows = minibatch_ref(split.mode, worker, gen, tau, split.ptr, split.idx)
        return per_sample_grads(x, rows).mean(axis=0)

    return oracle_ref


def oracle_rows(problem, batch_size) -> float:
    """The rows of data one oracle call reads, on average over the workers (for the work estimates and the choice
    of the threaded loop): the batch size for a finite sum, the mean size of the workers' groups with ``--batch-size
    full`` (n under ``shared``, n / M for a partition), 1 for a problem without data."""
    fs = problem.finite_sum
    if fs is None:
        return 1.0
    if not is_full(batch_size):
        return float(batch_size)
    return float(np.mean(np.diff(fs.split.ptr)))


def with_flipped_labels(problem, byzantine: int):
    """The run's view of ``problem`` in which its first ``byzantine`` workers compute their gradients on flipped
    labels (``--attack label-flip``, docs/theory.md §8.5): b extended by the flipped copy of the training labels,
    b[N + j] = flip(y_j) for the N = n_train + n_test rows of A, pi[P_FLIPPED] = byzantine (``sampling.label_offset``:
    those workers read b[j + N]), and the NumPy oracle reading them for those workers. One copy of n_train labels
    serves every Byzantine worker, whichever rows they share with honest ones (``shared``, ``split-batch``); A is not
    copied. The problem's own arrays are left as they are: f, its evaluation and the diagnostics read the true
    labels."""
    from dataclasses import replace

    from signsim.problems.sampling import P_FLIPPED

    fs = problem.finite_sum
    if fs is None or problem.flip_labels is None:
        from signsim.errors import InputError

        raise InputError(f"--attack label-flip: {problem.name} has no class labels to flip")
    n, N = fs.n, problem.A.shape[0]
    b = np.concatenate([problem.b, np.asarray(problem.flip_labels(problem.b[:n]), dtype=np.float64)])
    pi = problem.pi.copy()
    pi[P_FLIPPED] = byzantine
    honest = problem.oracle_ref
    split = fs.split

    def oracle_ref(x, worker, gen, tau):
        if worker >= byzantine:
            return honest(x, worker, gen, tau)
        rows = minibatch_ref(split.mode, worker, gen, tau, split.ptr, split.idx)
        return fs.per_sample_grads(x, rows, b[N + np.asarray(rows)]).mean(axis=0)

    return replace(problem, pi=pi, b=b, oracle_ref=oracle_ref)
