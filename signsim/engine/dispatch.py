"""Integer-code dispatch from the compiled loop to each problem's and each noise model's kernels.

Numba caches a kernel across processes only when it selects behaviour by plain integers, so this file is
the one place that lists every kernel: a new problem or noise model adds one branch here (and a new
problem module joins a family in ``signsim.engine.specialize``, which compiles these dispatchers once per
family). No dispatch falls
through silently: the ones outside parallel loops raise for a code they do not know; the ones that run inside
parallel loops (oracles, per-sample gradients, noise draws) cannot raise without making the loop serial, so they
write NaN (and callers check their codes before the loop with ``check_problem`` and ``check_noise``).
"""

import numba
import numpy as np
from numba import njit

from signsim.noise import bimodal, cauchy, gaussian, laplace, none, skewed, stable, student_t, uniform
from signsim.noise.base import N_NOISE_PARAMS
from signsim.problems import (
    external,
    glm,
    least_squares,
    logistic,
    mlp,
    quadratic,
    rosenbrock,
    sign_trap,
    vote_trap,
)

# Cached kernels may call parallel ones (the data problems' full-data passes): a process that loads them from
# the cache must have Numba's threading layer running first, or LLVM cannot resolve its scheduler's symbols
# ("Symbol not found: allocate_sched") and the process aborts. Every kernel module imports this one. Asking for
# the number of threads (public) launches the threading layer.
numba.get_num_threads()


@njit(cache=True)
def problem_loss(code, x, pf, pi, A, b):
    if code == rosenbrock.CODE:
        return rosenbrock.loss(x, pf, pi, A, b)
    if code == quadratic.CODE:
        return quadratic.loss(x, pf, pi, A, b)
    if code == sign_trap.CODE:
        return sign_trap.loss(x, pf, pi, A, b)
    if code == vote_trap.CODE:
        return vote_trap.loss(x, pf, pi, A, b)
    if code == logistic.CODE or code == least_squares.CODE:
        return glm.loss(x, pf, pi, A, b)
    if code == mlp.CODE:
        return mlp.loss(x, pf, pi, A, b)
    if code == external.CODE:
        return external.loss(x, pf, pi, A, b)
    raise ValueError("unknown problem code")


@njit(cache=True)
def problem_grad(code, x, pf, pi, A, b, out):
    if code == rosenbrock.CODE:
        rosenbrock.grad(x, pf, pi, A, b, out)
    elif code == quadratic.CODE:
        quadratic.grad(x, pf, pi, A, b, out)
    elif code == sign_trap.CODE:
        sign_trap.grad(x, pf, pi, A, b, out)
    elif code == vote_trap.CODE:
        vote_trap.grad(x, pf, pi, A, b, out)
    elif code == logistic.CODE or code == least_squares.CODE:
        glm.grad(x, pf, pi, A, b, out)
    elif code == mlp.CODE:
        mlp.grad(x, pf, pi, A, b, out)
    elif code == external.CODE:
        external.grad(x, pf, pi, A, b, out)
    else:
        raise ValueError("unknown problem code")


@njit(cache=True)
def analytic_loss_grad(code, x, pf, pi, A, b, out):
    """f(x), with grad f(x) written to ``out`` (first), for the problems without data. It names only those
    problems' kernels, so that a data problem's family does not compile its own full-data gradient and loss
    behind a branch its codes never take (the MLP's: a quarter of its first run's compile)."""
    if code == rosenbrock.CODE:
        rosenbrock.grad(x, pf, pi, A, b, out)
        return rosenbrock.loss(x, pf, pi, A, b)
    if code == quadratic.CODE:
        quadratic.grad(x, pf, pi, A, b, out)
        return quadratic.loss(x, pf, pi, A, b)
    if code == sign_trap.CODE:
        sign_trap.grad(x, pf, pi, A, b, out)
        return sign_trap.loss(x, pf, pi, A, b)
    if code == vote_trap.CODE:
        vote_trap.grad(x, pf, pi, A, b, out)
        return vote_trap.loss(x, pf, pi, A, b)
    raise ValueError("unknown problem code")


@njit(cache=True)
def problem_loss_grad(code, x, pf, pi, A, b, out):
    """f(x), with grad f(x) written to ``out``; one pass over the data where the problem allows it."""
    if code == logistic.CODE or code == least_squares.CODE:
        return glm.loss_grad(x, pf, pi, A, b, out)
    if code == mlp.CODE:
        return mlp.evaluate(x, pf, pi, A, b, out)[0]
    if code == external.CODE:
        return external.loss_grad(x, pf, pi, A, b, out)
    return analytic_loss_grad(code, x, pf, pi, A, b, out)


@njit(cache=True)
def problem_test_loss(code, x, pf, pi, A, b):
    """The loss on the held-out samples of a data problem (NaN for the others, which have none)."""
    if code == logistic.CODE or code == least_squares.CODE:
        return glm.test_loss(x, pf, pi, A, b)
    if code == mlp.CODE:
        return mlp.test_loss(x, pf, pi, A, b)
    if code == external.CODE:
        return external.test_loss(x, pf, pi, A, b)
    return np.nan


@njit(cache=True)
def problem_evaluate(code, x, pf, pi, A, b, out):
    """(f(x), training accuracy), with grad f(x) written to ``out``: what a history row needs, in one pass over
    the data for the data problems (accuracy NaN where it does not apply)."""
    if code == logistic.CODE or code == least_squares.CODE:
        return glm.evaluate(x, pf, pi, A, b, out)
    if code == mlp.CODE:
        return mlp.evaluate(x, pf, pi, A, b, out)
    if code == external.CODE:
        return external.evaluate(x, pf, pi, A, b, out)
    return analytic_loss_grad(code, x, pf, pi, A, b, out), np.nan  # (no accuracy without data)


@njit(cache=True, inline="always")
def problem_oracle(code, x, worker, gen, tau, pf, pi, A, b, ptr, idx, out):
    if code == rosenbrock.CODE:
        rosenbrock.oracle(x, worker, gen, tau, pf, pi, A, b, ptr, idx, out)
    elif code == quadratic.CODE:
        quadratic.oracle(x, worker, gen, tau, pf, pi, A, b, ptr, idx, out)
    elif code == sign_trap.CODE:
        sign_trap.oracle(x, worker, gen, tau, pf, pi, A, b, ptr, idx, out)
    elif code == vote_trap.CODE:
        vote_trap.oracle(x, worker, gen, tau, pf, pi, A, b, ptr, idx, out)
    elif code == logistic.CODE or code == least_squares.CODE:
        glm.oracle(x, worker, gen, tau, pf, pi, A, b, ptr, idx, out)
    elif code == mlp.CODE:
        mlp.oracle(x, worker, gen, tau, pf, pi, A, b, ptr, idx, out)
    elif code == external.CODE:
        external.oracle(x, worker, gen, tau, pf, pi, A, b, ptr, idx, out)
    else:  # no raise inside a parallel loop (it would run serially): poison the gradient
        for i in range(out.shape[0]):
            out[i] = np.nan


@njit(cache=True)
def problem_sample_grad(code, x, pf, pi, A, b, j, out):
    """Per-sample gradient of training row j (finite-sum problems only)."""
    if code == logistic.CODE or code == least_squares.CODE:
        glm.sample_grad(x, pf, pi, A, b, j, out)
    elif code == mlp.CODE:
        mlp.sample_grad(x, pf, pi, A, b, j, out)
    elif code == external.CODE:
        external.sample_grad(x, pf, pi, A, b, j, out)
    else:  # not a finite-sum problem code; no raise inside a parallel loop: poison the gradient
        for i in range(out.shape[0]):
            out[i] = np.nan


@njit(cache=True)
def problem_accuracy(code, x, pf, pi, A, b, test):
    """Classification accuracy on the training (test=False) or held-out rows; NaN where it does not apply."""
    if code == logistic.CODE or code == least_squares.CODE:
        return glm.accuracy(x, pf, pi, A, b, test)
    if code == mlp.CODE:
        return mlp.accuracy(x, pf, pi, A, b, test)
    if code == external.CODE:
        return external.accuracy(x, pf, pi, A, b, test)
    if code == rosenbrock.CODE or code == quadratic.CODE or code == sign_trap.CODE or code == vote_trap.CODE:
        return np.nan
    raise ValueError("unknown problem code")


@njit(cache=True, inline="always")
def noise_draw(code, gen, p):
    """One sample of the noise model ``code`` (0 = none)."""
    if code == gaussian.CODE:
        return gaussian.draw(gen, p)
    if code == laplace.CODE:
        return laplace.draw(gen, p)
    if code == uniform.CODE:
        return uniform.draw(gen, p)
    if code == student_t.CODE:
        return student_t.draw(gen, p)
    if code == bimodal.CODE:
        return bimodal.draw(gen, p)
    if code == skewed.CODE:
        return skewed.draw(gen, p)
    if code == cauchy.CODE:
        return cauchy.draw(gen, p)
    if code == stable.CODE:
        return stable.draw(gen, p)
    return np.nan  # no raise inside a parallel loop: an unknown code poisons the gradient


@njit(cache=True, inline="always")
def add_noise(code, p, gen, tau, out):
    """out_i += s_i * (mean of tau noise draws), coordinate by coordinate (tau draws for coordinate 0 first).

    ``p`` holds the model's three parameters, then optionally one scale s_i per coordinate
    (``--noise-scales``, docs/theory.md §10.2; s_i = 1 when absent). Every coordinate draws its variates
    whatever its scale, so the stream does not depend on the scales. Gaussian noise uses its exact shortcut:
    the mean of tau draws is sigma / sqrt(tau) N(0, 1), one draw. tau = FULL_BATCH (``--batch-size full``, an exact
    local gradient): one draw (``sampling.noise_draws``, docs/theory.md §5).
    """
    if code == none.CODE:
        return
    if tau < 1:
        tau = 1
    d = out.shape[0]
    scaled = p.shape[0] > N_NOISE_PARAMS
    if code == gaussian.CODE:
        s = p[0] / np.sqrt(tau)
        for i in range(d):
            z = s * gen.standard_normal()
            out[i] += p[N_NOISE_PARAMS + i] * z if scaled else z
        return
    for i in range(d):
        acc = 0.0
        for _ in range(tau):
            acc += noise_draw(code, gen, p)
        z = acc / tau
        out[i] += p[N_NOISE_PARAMS + i] * z if scaled else z


@njit(cache=True)
def check_problem(code):
    """Raise for a problem code with no kernels here (call before a parallel loop)."""
    if not (code == rosenbrock.CODE or code == quadratic.CODE or code == sign_trap.CODE or code == vote_trap.CODE
            or code == logistic.CODE or code == least_squares.CODE or code == mlp.CODE or code == external.CODE):
        raise ValueError("unknown problem code")


@njit(cache=True)
def check_noise(code):
    """Raise for a noise code with no draw here (call before a parallel loop)."""
    if not (code == none.CODE or code == gaussian.CODE or code == laplace.CODE or code == uniform.CODE
            or code == student_t.CODE or code == bimodal.CODE or code == skewed.CODE or code == cauchy.CODE
            or code == stable.CODE):
        raise ValueError("unknown noise code")
