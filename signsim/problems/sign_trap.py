"""Sign trap (Karimireddy et al. 2019; docs/theory.md §4): signSGD stays on a line and never reaches the optimum.

d = 2, f(x) = 1/2 [<a_1, x>^2 + <a_2, x>^2], a_1 = (1+eps, -1+eps), a_2 = (-1+eps, 1+eps), eps in (0, 1).
Oracle: g_hat = 2 <a_i, x> a_i with i uniform in {1, 2} (unbiased). On x_1 + x_2 = 2 every sign g_hat is
+-(1, -1), so signSGD started at (1, 1) never leaves the line; error feedback converges to x* = 0.
Where <a_i, x> = 0 exactly the oracle is the zero vector; only ``--sign-zero zero`` keeps signSGD on the
line there (with ``--tie zero`` for the vote of a single worker): a random or +1 sign(0) steps off it.
Coordinate-wise smoothness: L_i = sum_j |H_ij| with H = a_1 a_1^T + a_2 a_2^T (diag(L) - H is diagonally
dominant, hence positive semidefinite), which gives L = (4, 4) for every eps.
"""

import numpy as np
from numba import njit

from signsim import draws
from signsim.codes import Problem
from signsim.errors import InputError
from signsim.problems.base import ProblemInstance, ProblemSpec

CODE = int(Problem.SIGN_TRAP)  # assigned in signsim.codes
#: the starting point x0 (every coordinate) when --x0 is not given
X0 = 1.0


@njit(cache=True)
def _dots(x, eps):
    d1 = (1.0 + eps) * x[0] + (-1.0 + eps) * x[1]
    d2 = (-1.0 + eps) * x[0] + (1.0 + eps) * x[1]
    return d1, d2


@njit(cache=True)
def loss(x, pf, pi, A, b):
    d1, d2 = _dots(x, pf[0])
    return 0.5 * (d1 * d1 + d2 * d2)


@njit(cache=True)
def grad(x, pf, pi, A, b, out):
    eps = pf[0]
    d1, d2 = _dots(x, eps)
    out[0] = d1 * (1.0 + eps) + d2 * (-1.0 + eps)
    out[1] = d1 * (-1.0 + eps) + d2 * (1.0 + eps)


@njit(cache=True, inline="always")
def oracle(x, worker, gen, tau, pf, pi, A, b, ptr, idx, out):
    eps = pf[0]
    d1, d2 = _dots(x, eps)
    out[0] = 0.0
    out[1] = 0.0
    for _ in range(tau):
        if draws.index(gen, 2) == 0:
            out[0] += 2.0 * d1 * (1.0 + eps) / tau
            out[1] += 2.0 * d1 * (-1.0 + eps) / tau
        else:
            out[0] += 2.0 * d2 * (-1.0 + eps) / tau
            out[1] += 2.0 * d2 * (1.0 + eps) / tau


def build(cfg) -> ProblemInstance:
    eps = cfg.trap_eps
    if not 0 < eps < 1:
        raise InputError(f"--trap-eps {eps}: must lie in (0, 1)")
    a = np.array([[1 + eps, -1 + eps], [-1 + eps, 1 + eps]])

    def oracle_ref(x, worker, gen, tau):
        g = np.zeros(2)
        for i in gen.integers(0, 2, tau):
            g += 2.0 * (a[i] @ x) * a[i] / tau
        return g

    H = a.T @ a
    return ProblemInstance(
        name="sign-trap", code=CODE, dim=2,
        x0=np.full(2, cfg.x0 if cfg.x0 is not None else X0),
        loss_ref=lambda x: float(0.5 * np.sum((a @ x) ** 2)), grad_ref=lambda x: H @ x, oracle_ref=oracle_ref,
        pf=np.array([eps]), x_star=np.zeros(2), f_star=0.0, L=np.abs(H).sum(axis=1),
    )


SPEC = ProblemSpec(
    name="sign-trap", code=CODE,
    summary="d = 2 counterexample: signSGD stuck on x1 + x2 = 2, error feedback converges (--trap-eps)",
    options=frozenset({"trap_eps", "x0", "noise"}),
    defaults={"x0": X0, "noise": "none", "trap_eps": 0.5, "sign_zero": "zero", "tie": "zero"},
    build=build,
)
