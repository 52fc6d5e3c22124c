"""Vote trap (docs/theory.md §4; reconstructed there and verified by simulation): majority vote on partitioned data.

d = 1, data partitioned over 3 workers by construction (worker m holds f_{m mod 3}, so M must be a
multiple of 3): f_0 = f_1 = 1/2 (x - 1)^2, f_2 = (lambda/2)(x + 1)^2, exact local gradients. The global
objective is f = (f_0 + f_1 + f_2) / 3 with x* = (2 - lambda)/(2 + lambda). With lambda = 6,
x_0 = x* = -0.5 and gamma_k = 0.5/sqrt(k+1), the local signs on (-1, 1) are (-, -, +), the vote is -1 and x
moves up, settling near x = 1 where f'(1) = 2 lambda / 3 != 0. SGD (mean of exact gradients) converges.
"""

import numpy as np
from numba import njit

from signsim.codes import Problem
from signsim.errors import InputError
from signsim.problems.base import ProblemInstance, ProblemSpec

CODE = int(Problem.VOTE_TRAP)  # assigned in signsim.codes


@njit(cache=True)
def loss(x, pf, pi, A, b):
    lam = pf[0]
    return ((x[0] - 1.0) ** 2 + 0.5 * lam * (x[0] + 1.0) ** 2) / 3.0


@njit(cache=True)
def grad(x, pf, pi, A, b, out):
    lam = pf[0]
    out[0] = (2.0 * (x[0] - 1.0) + lam * (x[0] + 1.0)) / 3.0


@njit(cache=True, inline="always")
def oracle(x, worker, gen, tau, pf, pi, A, b, ptr, idx, out):
    if worker % 3 == 2:
        out[0] = pf[0] * (x[0] + 1.0)
    else:
        out[0] = x[0] - 1.0


def build(cfg) -> ProblemInstance:
    lam = cfg.trap_lambda
    if not (lam > 0 and np.isfinite(lam)):
        raise InputError(f"--trap-lambda {lam}: must be a finite number > 0")
    if cfg.workers % 3:
        raise InputError(f"--workers {cfg.workers}: vote-trap is partitioned over 3 workers; use a multiple of 3")
    x_star = (2.0 - lam) / (2.0 + lam)

    def f(x):
        return float(((x[0] - 1.0) ** 2 + 0.5 * lam * (x[0] + 1.0) ** 2) / 3.0)

    def oracle_ref(x, worker, gen, tau):
        return np.array([lam * (x[0] + 1.0) if worker % 3 == 2 else x[0] - 1.0])

    return ProblemInstance(
        name="vote-trap", code=CODE, dim=1, x0=np.array([cfg.x0 if cfg.x0 is not None else x_star]),
        loss_ref=f, grad_ref=lambda x: np.array([(2.0 * (x[0] - 1.0) + lam * (x[0] + 1.0)) / 3.0]),
        oracle_ref=oracle_ref, pf=np.array([lam]), x_star=np.array([x_star]), f_star=f(np.array([x_star])),
        L=np.array([(2.0 + lam) / 3.0]), heterogeneous=True, local_exact=True,
    )


SPEC = ProblemSpec(
    name="vote-trap", code=CODE,
    summary="d = 1, 3 partitioned workers: majority vote settles near x = 1, not x* (--trap-lambda)",
    options=frozenset({"trap_lambda", "x0", "noise"}),
    defaults={"noise": "none", "trap_lambda": 6.0, "workers": 3, "lr": 0.5, "lr_schedule": "sqrt"},
    build=build,
)
