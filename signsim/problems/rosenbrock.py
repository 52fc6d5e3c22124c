"""Rosenbrock: f(x) = sum_{i<d} [100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2], f* = 0 at x* = 1 (docs/theory.md §5).

Oracles (``--oracle``): ``full`` is the exact gradient (plus the run's additive noise); ``term`` draws one
term j uniformly and returns (d - 1) grad f_j, an unbiased estimate (a minibatch of tau averages tau terms).
scipy.optimize.rosen / rosen_der are the independent references in the tests.
"""

import numpy as np
from numba import njit

from signsim import draws
from signsim.codes import Problem
from signsim.errors import InputError
from signsim.problems.base import ProblemInstance, ProblemSpec

CODE = int(Problem.ROSENBROCK)  # assigned in signsim.codes
#: the starting point x0 (every coordinate) when --x0 is not given
X0 = 0.0
FULL, TERM = 0, 1


@njit(cache=True)
def loss(x, pf, pi, A, b):
    s = 0.0
    for i in range(x.shape[0] - 1):
        xi = np.float64(x[i])  # float64 arithmetic also on a float32 x (--dtype)
        s += 100.0 * (np.float64(x[i + 1]) - xi * xi) ** 2 + (1.0 - xi) ** 2
    return s


@njit(cache=True)
def grad(x, pf, pi, A, b, out):
    d = x.shape[0]
    out[:] = 0.0
    for i in range(d - 1):
        xi = np.float64(x[i])
        r = np.float64(x[i + 1]) - xi * xi
        out[i] += -400.0 * xi * r - 2.0 * (1.0 - xi)
        out[i + 1] += 200.0 * r


@njit(cache=True, inline="always")
def oracle(x, worker, gen, tau, pf, pi, A, b, ptr, idx, out):
    if pi[0] == FULL:
        grad(x, pf, pi, A, b, out)
        return
    d = x.shape[0]
    out[:] = 0.0
    scale = (d - 1.0) / tau
    for _ in range(tau):
        j = draws.index(gen, d - 1)
        xj = np.float64(x[j])
        r = np.float64(x[j + 1]) - xj * xj
        out[j] += scale * (-400.0 * xj * r - 2.0 * (1.0 - xj))
        out[j + 1] += scale * 200.0 * r


def loss_ref(x):
    return float(np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2))


def grad_ref(x):
    r = x[1:] - x[:-1] ** 2
    g = np.zeros_like(x)
    g[:-1] += -400.0 * x[:-1] * r - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * r
    return g


def build(cfg) -> ProblemInstance:
    d = cfg.dim
    if d < 2:
        raise InputError(f"--dim {d}: rosenbrock needs at least 2 coordinates")
    kind = {"full": FULL, "term": TERM}.get(cfg.oracle)
    if kind is None:
        raise InputError(f"--oracle: unknown oracle '{cfg.oracle}' for rosenbrock; choose from full, term")

    def oracle_ref(x, worker, gen, tau):
        if kind == FULL:
            return grad_ref(x)
        g = np.zeros_like(x)
        for j in gen.integers(0, d - 1, tau):
            r = x[j + 1] - x[j] ** 2
            g[j] += (d - 1.0) / tau * (-400.0 * x[j] * r - 2.0 * (1.0 - x[j]))
            g[j + 1] += (d - 1.0) / tau * 200.0 * r
        return g

    return ProblemInstance(
        name="rosenbrock", code=CODE, dim=d, x0=np.full(d, cfg.x0 if cfg.x0 is not None else X0),
        loss_ref=loss_ref, grad_ref=grad_ref, oracle_ref=oracle_ref,
        pi=np.array([kind], dtype=np.int64), x_star=np.ones(d), f_star=0.0, exact_oracle=kind == FULL,
    )


SPEC = ProblemSpec(
    name="rosenbrock", code=CODE,
    summary="sum 100(x_{i+1}-x_i^2)^2 + (1-x_i)^2, d = --dim (10); oracle full or one term, plus --noise",
    options=frozenset({"dim", "oracle", "x0", "noise"}),
    defaults={"dim": 10, "x0": X0, "oracle": "full", "noise": "gaussian:1"},
    build=build,
)
