"""Kernels of a problem whose gradients are computed outside the compiled loop (docs/theory.md §13): a user's PyTorch
model (``signsim.torch``, the problem ``model``).

The caller computes each participant's stochastic gradient (or, with local steps, its pseudo-gradient) into the
loop's per-slot gradient buffer before each round, so the oracle here leaves ``out`` as it is; and before each round
at which the loop records history it evaluates the model at x and writes what a history row needs into the problem's
arrays (``ModelState`` layout below): ``pf`` = [f(x), training accuracy, test accuracy, test loss], ``b`` = grad f(x).
The kernels only read them back, so the loop's history, bits, stages and stopping rules work unchanged.
"""

import numpy as np
from numba import njit

from signsim.codes import Problem

CODE = int(Problem.EXTERNAL)  # assigned in signsim.codes
#: ``pf``'s layout: the evaluation at the last recorded x
F_LOSS, F_TRAIN_ACC, F_TEST_ACC, F_TEST_LOSS = range(4)
N_PF = 4


@njit(cache=True)
def loss(x, pf, pi, A, b):
    return pf[F_LOSS]


@njit(cache=True)
def test_loss(x, pf, pi, A, b):
    return pf[F_TEST_LOSS]


@njit(cache=True)
def grad(x, pf, pi, A, b, out):
    for i in range(out.shape[0]):
        out[i] = b[i]


@njit(cache=True)
def loss_grad(x, pf, pi, A, b, out):
    grad(x, pf, pi, A, b, out)
    return pf[F_LOSS]


@njit(cache=True)
def evaluate(x, pf, pi, A, b, out):
    grad(x, pf, pi, A, b, out)
    return pf[F_LOSS], pf[F_TRAIN_ACC]


@njit(cache=True, inline="always")
def oracle(x, worker, gen, tau, pf, pi, A, b, ptr, idx, out):
    """The caller wrote the gradient into ``out`` (the slot's row of the loop's gradient buffer) before the round."""
    return


@njit(cache=True)
def sample_grad(x, pf, pi, A, b, j, out):
    for i in range(out.shape[0]):  # per-sample gradients come from the caller (``FiniteSum``), never from here
        out[i] = np.nan


@njit(cache=True)
def accuracy(x, pf, pi, A, b, test):
    return pf[F_TEST_ACC] if test else pf[F_TRAIN_ACC]
