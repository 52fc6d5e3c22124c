"""How the training set is divided among M workers (issue #3). A split is a list of index groups in CSR form
(``ptr``, ``idx``: group g holds idx[ptr[g]:ptr[g+1]]) and a sampling mode read by the compiled oracle:

* ``shared``      one group, every worker samples the whole set (homogeneous);
* ``iid``         M equal random shards (homogeneous in distribution);
* ``label-skew:a`` per class, Dirichlet(a, ..., a) proportions over the workers (heterogeneous; large a ->
  iid, small a -> each worker sees few labels); every worker keeps at least one sample;
* ``sorted``      sorted by label, M contiguous shards (heterogeneous);
* ``split-batch`` the seed paper's sampling: two groups, the first and second half of the sorted label
  values; each minibatch comes from one group chosen with probability 1/2 (workers share both groups).

Minibatches are drawn with replacement from the worker's group (docs/theory.md notation: tau per worker).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from signsim.errors import InputError

SHARED, SHARD, SPLIT_BATCH = 0, 1, 2
NAMES = ("shared", "iid", "label-skew:ALPHA", "sorted", "split-batch")
SUMMARIES = {
    "shared": "every worker samples the whole training set",
    "iid": "equal random shards, one per worker",
    "label-skew:ALPHA": "per class, Dirichlet(ALPHA) proportions over the workers (small ALPHA: few labels each)",
    "sorted": "sorted by label, contiguous shards",
    "split-batch": "each minibatch from the lower or upper half of the labels, each with probability 1/2",
}


@dataclass
class Split:
    name: str
    mode: int
    ptr: np.ndarray
    idx: np.ndarray
    heterogeneous: bool

    def group(self, g: int) -> np.ndarray:
        return self.idx[self.ptr[g]: self.ptr[g + 1]]

    @property
    def groups(self) -> int:
        return len(self.ptr) - 1


def _csr(groups: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    ptr = np.zeros(len(groups) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(g) for g in groups])
    idx = np.concatenate(groups).astype(np.int64) if groups else np.zeros(0, dtype=np.int64)
    return ptr, idx


def check_syntax(spec: str) -> None:
    """InputError unless ``spec`` names a split (label-skew with ALPHA > 0), before any data is loaded."""
    name, sep, arg = spec.partition(":")
    if name == "label-skew":
        try:
            alpha = float(arg)
        except ValueError:
            alpha = float("nan")
        if not (alpha > 0 and np.isfinite(alpha)):
            raise InputError(f"--split {spec}: expected label-skew:ALPHA with ALPHA > 0")
        return
    if name not in ("shared", "iid", "sorted", "split-batch") or sep:
        raise InputError(f"--split: unknown split '{spec}'; choose from {', '.join(NAMES)}")


def make_split(spec: str, labels: np.ndarray, workers: int, rng: np.random.Generator) -> Split:
    check_syntax(spec)
    n = labels.shape[0]
    name, _, arg = spec.partition(":")
    if name in ("iid", "sorted", "label-skew") and workers > n:
        raise InputError(f"--split {spec}: {workers} workers but only {n} training samples")
    if name == "shared" and not arg:
        ptr, idx = _csr([np.arange(n)])
        return Split(spec, SHARED, ptr, idx, False)
    if name == "iid" and not arg:
        ptr, idx = _csr([np.sort(s) for s in np.array_split(rng.permutation(n), workers)])
        return Split(spec, SHARD, ptr, idx, False)
    if name == "sorted" and not arg:
        order = np.argsort(labels, kind="stable")
        ptr, idx = _csr(np.array_split(order, workers))
        return Split(spec, SHARD, ptr, idx, True)
    if name == "label-skew":
        try:
            alpha = float(arg)
        except ValueError:
            alpha = float("nan")
        if not (alpha > 0 and np.isfinite(alpha)):
            raise InputError(f"--split {spec}: expected label-skew:ALPHA with ALPHA > 0")
        ptr, idx = _csr(_label_skew(labels, workers, alpha, rng))
        return Split(spec, SHARD, ptr, idx, True)
    if name == "split-batch" and not arg:
        classes = np.unique(labels)
        if classes.size < 2:
            raise InputError(f"--split {spec}: needs at least two label values")
        first = np.isin(labels, classes[: classes.size // 2])
        ptr, idx = _csr([np.flatnonzero(first), np.flatnonzero(~first)])
        return Split(spec, SPLIT_BATCH, ptr, idx, False)
    raise InputError(f"--split: unknown split '{spec}'; choose from {', '.join(NAMES)}")


def _label_skew(labels: np.ndarray, M: int, alpha: float, rng: np.random.Generator) -> list[np.ndarray]:
    shards: list[list[np.ndarray]] = [[] for _ in range(M)]
    for c in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == c))
        cuts = (np.cumsum(rng.dirichlet(np.full(M, alpha)))[:-1] * members.size).astype(np.int64)
        for m, part in enumerate(np.split(members, cuts)):
            shards[m].append(part)
    out = [np.sort(np.concatenate(s)) for s in shards]
    for m in range(M):  # no empty shard: take one sample from the largest
        if out[m].size == 0:
            big = int(np.argmax([s.size for s in out]))
            out[m], out[big] = out[big][-1:], out[big][:-1]
    return out
