"""What every problem provides (docs/theory.md §4, §5).

A problem is registered by a ``ProblemSpec`` (name, one-line summary, which run options apply to it, the
defaults it prefers, and ``build``). ``build`` returns a ``ProblemInstance``: the arrays the compiled kernels
read, the starting point, what is known about the optimum and the smoothness, and plain NumPy references of
f, grad f and the stochastic oracle that the tests compare the kernels with.

Kernel contract (Numba, dispatched on ``code`` in ``signsim.engine.dispatch``)::

    loss(x, pf, pi, A, b) -> float
    grad(x, pf, pi, A, b, out)                               # exact gradient of the global objective
    oracle(x, worker, gen, tau, pf, pi, A, b, ptr, idx, out) # stochastic gradient of one worker, no noise

``pf``/``pi`` are float/int parameters, ``A``/``b`` data arrays and ``ptr``/``idx`` per-worker index lists
(empty for synthetic problems). The oracle must draw from ``gen`` in the same order as ``oracle_ref``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

EMPTY_F = np.zeros(0, dtype=np.float64)
EMPTY_I = np.zeros(0, dtype=np.int64)
EMPTY_2D = np.zeros((0, 0), dtype=np.float64)


@dataclass
class ProblemInstance:
    name: str
    code: int
    dim: int
    x0: np.ndarray
    loss_ref: Callable[[np.ndarray], float]
    grad_ref: Callable[[np.ndarray], np.ndarray]
    #: oracle_ref(x, worker, gen, tau) -> stochastic gradient (no added noise), same draws as the kernel
    oracle_ref: Callable[[np.ndarray, int, np.random.Generator, int], np.ndarray]
    pf: np.ndarray = field(default_factory=lambda: EMPTY_F)
    pi: np.ndarray = field(default_factory=lambda: EMPTY_I)
    A: np.ndarray = field(default_factory=lambda: EMPTY_2D)
    b: np.ndarray = field(default_factory=lambda: EMPTY_F)
    ptr: np.ndarray = field(default_factory=lambda: EMPTY_I)
    idx: np.ndarray = field(default_factory=lambda: EMPTY_I)
    x_star: np.ndarray | None = None
    f_star: float | None = None
    #: coordinate-wise smoothness vector (docs/theory.md §3 notation), where known
    L: np.ndarray | None = None
    #: workers optimize different local objectives (partitioned data): SSDM's guarantee does not apply
    heterogeneous: bool = False
    #: the oracle is the exact gradient (stochasticity only from the additive noise): closed forms apply
    exact_oracle: bool = False
    #: each worker's oracle is the exact gradient of its own local objective and draws nothing (set where the
    #: workers' objectives differ; implied by ``exact_oracle``): a two-point estimator (MARINA) can run
    local_exact: bool = False
    #: history records train and test accuracy
    classifier: bool = False
    #: per-sample access for finite-sum (data) problems
    finite_sum: Any = None
    notes: list[str] = field(default_factory=list)
    #: said on stderr and in the results' ``warnings`` by every command that builds the problem (one-class data)
    warnings: list[str] = field(default_factory=list)
    #: gradients computed outside the compiled loop (``signsim.problems.model.Gradients``: a PyTorch model); the
    #: engine asks it for each round's gradients and each history row's evaluation (docs/theory.md §13)
    external: Any = None
    #: more facts for the results' ``problem`` field (a model file's path and hash)
    extra_facts: dict[str, Any] = field(default_factory=dict)
    #: labels -> flipped labels, for the problems with class labels (``--attack label-flip``, docs/theory.md §8.5):
    #: y -> -y for logistic's +-1, y -> C - 1 - y for the MLP's class indices; None without class labels
    flip_labels: Callable[[np.ndarray], np.ndarray] | None = None

    def facts(self) -> dict[str, Any]:
        """What the results documents report about the problem (their ``problem`` field): name, dimension,
        f*, whether x* is known, heterogeneity; data problems add the train and test sizes, the number of
        features and the workers' shard sizes."""
        info = {"name": self.name, "dim": self.dim, "f_star": self.f_star, "x_star_known": self.x_star is not None,
                "heterogeneous": self.heterogeneous}
        fs = self.finite_sum
        if fs is not None and self.external is None:  # (a model's facts come in ``extra_facts``)
            from signsim.problems.sampling import P_FEATURES, P_NTEST

            info.update(n_train=fs.n, n_test=int(self.pi[P_NTEST]), features=int(self.pi[P_FEATURES]),
                        shard_sizes=np.diff(fs.split.ptr).tolist())
        info.update(self.extra_facts)
        return info


@dataclass(frozen=True)
class ProblemSpec:
    name: str
    code: int
    summary: str
    #: RunConfig fields, beyond the common ones, that this problem reads
    options: frozenset[str]
    #: values this problem prefers for options the user left unset (e.g. vote-trap's workers = 3)
    defaults: dict[str, Any]
    build: Callable[[Any], ProblemInstance]
    #: what its Byzantine workers' labels become under ``--attack label-flip`` (docs/theory.md §8.5), in words; ""
    #: for a problem without class labels (the attack is refused)
    label_flip: str = ""
