"""How the training set is divided among M workers (issue #3; the federated partitioners of issue #32). A split
is a list of index groups in CSR form (``ptr``, ``idx``: group g holds idx[ptr[g]:ptr[g+1]]) and a sampling
mode read by the compiled oracle:

* ``shared``      one group, every worker samples the whole set (homogeneous);
* ``iid``         M equal random shards (homogeneous in distribution);
* ``label-skew:a`` per class, Dirichlet(a, ..., a) proportions over the workers (heterogeneous; large a ->
  iid, small a -> each worker sees few labels); every worker keeps at least one sample;
* ``label-skew:a:m`` the same draw repeated until every worker holds at least m samples (at most
  MAX_DRAWS draws), as the federated-learning benchmarks' ``min_require_size`` loop does;
* ``shards:K``    McMahan et al. 2017's pathological split: sorted by label, cut into M*K shards of equal
  size (up to one sample), K random shards per worker;
* ``power-law:a`` client sizes on a power law, n_m - 1 proportional to r_m^(-a) for the ranks r_m = 1..M in a
  random order (largest remainders), the samples otherwise a random partition;
* ``sorted``      sorted by label, M contiguous shards (heterogeneous);
* ``split-batch`` the seed paper's sampling: two groups, the first and second half of the sorted label
  values; each minibatch comes from one group chosen with probability 1/2 (workers share both groups).

Minibatches are drawn with replacement from the worker's group (docs/theory.md notation: tau per worker). The
algorithms and their sources: docs/theory.md §9.8.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from signsim.errors import InputError

SHARED, SHARD, SPLIT_BATCH = 0, 1, 2
NAMES = ("shared", "iid", "label-skew:ALPHA", "label-skew:ALPHA:MIN", "shards:K", "power-law:A", "sorted",
         "split-batch")
SUMMARIES = {
    "shared": "every worker samples the whole training set",
    "iid": "equal random shards, one per worker",
    "label-skew:ALPHA": "per class, Dirichlet(ALPHA) proportions over the workers (small ALPHA: few labels each)",
    "label-skew:ALPHA:MIN": "label-skew:ALPHA drawn again until every worker has at least MIN samples",
    "shards:K": "sorted by label, cut into M*K equal shards, K random shards per worker (McMahan et al. 2017)",
    "power-law:A": "worker sizes on a power law, n_m - 1 proportional to rank^(-A) (A = 0: equal), samples iid",
    "sorted": "sorted by label, contiguous shards",
    "split-batch": "each minibatch from the lower or upper half of the labels, each with probability 1/2",
}
#: label-skew:ALPHA:MIN draws the Dirichlet split at most this many times
MAX_DRAWS = 1000
#: the split's report lists each worker's sizes and label counts up to this many workers (as heterogeneity's bias)
MAX_LISTED = 64
#: ... and counts labels when the training labels take at most this many values (classes, not regression targets)
MAX_CLASSES = 100


@dataclass
class Split:
    name: str
    mode: int
    ptr: np.ndarray
    idx: np.ndarray
    heterogeneous: bool
    #: the label of each training sample (for the split's report); None when not known
    labels: np.ndarray | None = None

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


def _positive_int(text: str) -> int | None:
    """``text`` as an integer >= 1 (decimal digits only; more than 18 digits saturate at 10^18), else None."""
    text = text.strip()
    if not (text.isdecimal() and text.isascii()):
        return None
    digits = text.lstrip("0")
    value = int(digits) if 0 < len(digits) <= 18 else (10**18 if digits else 0)
    return value if value >= 1 else None


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return float("nan")


def parse(spec: str) -> tuple[str, tuple]:
    """(name, parameters) of ``spec``; InputError (one line) unless it names a split with valid parameters. The
    parameters that need the data (M*K <= n, M*MIN <= n) are checked by ``make_split``."""
    name, sep, arg = spec.partition(":")
    if name == "label-skew":
        a, sep2, low = arg.partition(":")
        alpha = _float(a)
        if not (alpha > 0 and np.isfinite(alpha)):
            raise InputError(f"--split {spec}: expected label-skew:ALPHA or label-skew:ALPHA:MIN with ALPHA > 0")
        if not sep2:
            return name, (alpha, None)
        minimum = _positive_int(low)
        if minimum is None:
            raise InputError(f"--split {spec}: expected label-skew:ALPHA:MIN with MIN an integer >= 1")
        return name, (alpha, minimum)
    if name == "shards":
        K = _positive_int(arg)
        if K is None:
            raise InputError(f"--split {spec}: expected shards:K with K an integer >= 1 (shards per worker)")
        return name, (K,)
    if name == "power-law":
        a = _float(arg)
        if not (a >= 0 and np.isfinite(a)):
            raise InputError(f"--split {spec}: expected power-law:A with A >= 0 (the exponent; 0: equal sizes)")
        return name, (a,)
    if name not in ("shared", "iid", "sorted", "split-batch") or sep:
        raise InputError(f"--split: unknown split '{spec}'; choose from {', '.join(NAMES)}")
    return name, ()


def check_syntax(spec: str) -> None:
    """InputError unless ``spec`` names a split with valid parameters, before any data is loaded."""
    parse(spec)


def make_split(spec: str, labels: np.ndarray, workers: int, rng: np.random.Generator) -> Split:
    name, params = parse(spec)
    labels = np.asarray(labels)
    n = labels.shape[0]
    if name in ("iid", "sorted", "label-skew", "shards", "power-law") and workers > n:
        raise InputError(f"--split {spec}: {workers} workers but only {n} training samples")
    if name == "shared":
        groups, mode, het = [np.arange(n)], SHARED, False
    elif name == "iid":
        groups, mode, het = [np.sort(s) for s in np.array_split(rng.permutation(n), workers)], SHARD, False
    elif name == "sorted":
        groups, mode, het = np.array_split(np.argsort(labels, kind="stable"), workers), SHARD, True
    elif name == "label-skew":
        alpha, minimum = params
        groups = (_label_skew(labels, workers, alpha, rng) if minimum is None
                  else _label_skew_min(spec, labels, workers, alpha, minimum, rng))
        mode, het = SHARD, True
    elif name == "shards":
        (K,) = params
        if workers * K > n:
            raise InputError(f"--split {spec}: {workers} workers x {K} shards = {workers * K} shards but only {n} "
                             f"training samples (each shard needs one; at most shards:{n // workers})")
        groups, mode, het = _shards(labels, workers, K, rng), SHARD, True
    elif name == "power-law":
        groups, mode, het = _power_law(n, workers, params[0], rng), SHARD, True
    else:  # split-batch
        classes = np.unique(labels)
        if classes.size < 2:
            raise InputError(f"--split {spec}: needs at least two label values")
        first = np.isin(labels, classes[: classes.size // 2])
        groups, mode, het = [np.flatnonzero(first), np.flatnonzero(~first)], SPLIT_BATCH, False
    ptr, idx = _csr(groups)
    return Split(spec, mode, ptr, idx, het, labels)


def _dirichlet_shards(labels: np.ndarray, M: int, alpha: float, rng: np.random.Generator) -> list[np.ndarray]:
    """One draw: per class (in sorted order), its samples in a random order cut by Dirichlet(alpha) proportions."""
    shards: list[list[np.ndarray]] = [[] for _ in range(M)]
    for c in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == c))
        cuts = (np.cumsum(rng.dirichlet(np.full(M, alpha)))[:-1] * members.size).astype(np.int64)
        for m, part in enumerate(np.split(members, cuts)):
            shards[m].append(part)
    return [np.sort(np.concatenate(s)) for s in shards]


def _label_skew(labels: np.ndarray, M: int, alpha: float, rng: np.random.Generator) -> list[np.ndarray]:
    out = _dirichlet_shards(labels, M, alpha, rng)
    for m in range(M):  # no empty shard: take one sample from the largest
        if out[m].size == 0:
            big = int(np.argmax([s.size for s in out]))
            out[m], out[big] = out[big][-1:], out[big][:-1]
    return out


def _label_skew_min(spec: str, labels: np.ndarray, M: int, alpha: float, minimum: int,
                    rng: np.random.Generator) -> list[np.ndarray]:
    """Dirichlet draws until every worker holds at least ``minimum`` samples (the first draw is label-skew:ALPHA's
    before its fix-up of empty shards); InputError after MAX_DRAWS draws."""
    n = labels.shape[0]
    if M * minimum > n:
        raise InputError(f"--split {spec}: {M} workers x {minimum} samples = {M * minimum} but only {n} training "
                         "samples")
    smallest = 0
    for _ in range(MAX_DRAWS):
        out = _dirichlet_shards(labels, M, alpha, rng)
        smallest = min(s.size for s in out)
        if smallest >= minimum:
            return out
    raise InputError(f"--split {spec}: in {MAX_DRAWS} Dirichlet({alpha:g}) draws no split gave each of the {M} "
                     f"workers {minimum} samples (the last draw's smallest worker had {smallest}); lower MIN or "
                     "raise ALPHA")


def _shards(labels: np.ndarray, M: int, K: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Samples sorted by label (in a random order within a label), cut into M*K consecutive shards whose sizes
    differ by at most one (``np.array_split``: the first n mod MK are one larger); worker m gets the shards
    perm[mK .. mK+K-1] of a random permutation of the shards."""
    order = rng.permutation(labels.shape[0])
    order = order[np.argsort(labels[order], kind="stable")]
    pieces = np.array_split(order, M * K)
    perm = rng.permutation(M * K)
    return [np.sort(np.concatenate([pieces[s] for s in perm[m * K: (m + 1) * K]])) for m in range(M)]


def power_law_sizes(n: int, M: int, a: float) -> np.ndarray:
    """Sizes by rank r = 1..M: 1 + q_r rounded by largest remainders, q_r = (n - M) r^(-a) / sum_j j^(-a) (ties
    to the better rank): every size is at least 1, they sum to n, and |size_r - 1 - q_r| < 1."""
    w = np.arange(1, M + 1, dtype=np.float64) ** (-a)
    q = (n - M) * w / w.sum()
    base = np.floor(q).astype(np.int64)
    left = (n - M) - int(base.sum())
    base[np.argsort(-(q - base), kind="stable")[:left]] += 1
    return 1 + base


def _power_law(n: int, M: int, a: float, rng: np.random.Generator) -> list[np.ndarray]:
    """A random permutation of the samples cut into consecutive groups of the power-law sizes, the ranks given to
    the workers in a random order."""
    order = rng.permutation(n)
    sizes = power_law_sizes(n, M, a)[rng.permutation(M)]
    return [np.sort(g) for g in np.split(order, np.cumsum(sizes)[:-1])]


def report(split: Split) -> dict[str, Any]:
    """What a results document says about the split: the groups' sizes and, for class labels, the label counts
    per group (``label_counts[m][c]``: samples of ``classes[c]`` in group m) and how many distinct labels each
    group holds. Up to MAX_LISTED groups the lists are given, above it quantiles."""
    sizes = np.diff(split.ptr)
    G = split.groups
    q = ("min", "q25", "median", "q75", "max")
    out: dict[str, Any] = {"name": split.name, "groups": G,
                           "size_min": int(sizes.min()), "size_max": int(sizes.max()),
                           "size_mean": float(sizes.mean())}
    if G <= MAX_LISTED:
        out["sizes"] = sizes.tolist()
    else:
        out["size_quantiles"] = dict(zip(q, np.quantile(sizes, [0, 0.25, 0.5, 0.75, 1]).tolist(), strict=True))
    labels = split.labels
    if labels is None or labels.ndim != 1 or labels.size == 0:
        return out
    classes, code = np.unique(labels, return_inverse=True)
    if classes.size > MAX_CLASSES:
        out["label_note"] = f"{classes.size} distinct label values (more than {MAX_CLASSES}): not counted"
        return out
    owner = np.repeat(np.arange(G), sizes)
    counts = np.zeros((G, classes.size), dtype=np.int64)
    np.add.at(counts, (owner, code[split.idx]), 1)
    held = (counts > 0).sum(axis=1)
    out.update(classes=[c.item() for c in classes],
               labels_min=int(held.min()), labels_max=int(held.max()), labels_mean=float(held.mean()))
    if G <= MAX_LISTED:
        out["label_counts"] = counts.tolist()
    else:
        out["labels_quantiles"] = dict(zip(q, np.quantile(held, [0, 0.25, 0.5, 0.75, 1]).tolist(), strict=True))
    return out
