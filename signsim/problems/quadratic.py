"""Diagonal quadratic: f(x) = 1/2 sum_i L_i x_i^2, L_i log-spaced in [1, kappa]; f* = 0 at x* = 0 (docs/theory.md §5).

L is the exact coordinate-wise smoothness vector. The oracle is the exact gradient; ``--noise`` adds the
stochastic part.
"""

import numpy as np
from numba import njit

from signsim.codes import Problem
from signsim.errors import InputError
from signsim.problems.base import ProblemInstance, ProblemSpec

CODE = int(Problem.QUADRATIC)  # assigned in signsim.codes
#: the starting point x0 (every coordinate) when --x0 is not given
X0 = 1.0


@njit(cache=True)
def loss(x, pf, pi, A, b):
    s = 0.0
    for i in range(x.shape[0]):
        s += pf[i] * x[i] * x[i]
    return 0.5 * s


@njit(cache=True)
def grad(x, pf, pi, A, b, out):
    for i in range(x.shape[0]):
        out[i] = pf[i] * x[i]


@njit(cache=True, inline="always")
def oracle(x, worker, gen, tau, pf, pi, A, b, ptr, idx, out):
    grad(x, pf, pi, A, b, out)


def build(cfg) -> ProblemInstance:
    d, kappa = cfg.dim, cfg.kappa
    if d < 1:
        raise InputError(f"--dim {d}: must be at least 1")
    if not (kappa >= 1 and np.isfinite(kappa)):
        raise InputError(f"--kappa {kappa}: the condition number must be a finite number >= 1")
    L = np.logspace(0.0, np.log10(kappa), d) if d > 1 else np.ones(1)
    return ProblemInstance(
        name="quadratic", code=CODE, dim=d, x0=np.full(d, cfg.x0 if cfg.x0 is not None else X0),
        loss_ref=lambda x: float(0.5 * np.sum(L * x * x)), grad_ref=lambda x: L * x,
        oracle_ref=lambda x, worker, gen, tau: L * x,
        pf=L, x_star=np.zeros(d), f_star=0.0, L=L.copy(), exact_oracle=True,
    )


SPEC = ProblemSpec(
    name="quadratic", code=CODE,
    summary="1/2 sum L_i x_i^2, L_i log-spaced in [1, --kappa]; exact gradient plus --noise",
    options=frozenset({"dim", "kappa", "x0", "noise"}),
    defaults={"dim": 10, "x0": X0, "kappa": 100.0, "noise": "gaussian:1"},
    build=build,
)
