"""Problems: kernels against NumPy references, scipy's Rosenbrock, finite differences and known optima."""

import numpy as np
import pytest
from scipy.optimize import approx_fprime, rosen, rosen_der

from signsim import problems
from signsim.engine import dispatch
from signsim.interface import config

RNG = np.random.default_rng(1234)


def build(**options):
    return problems.build(config.resolve(options))


def kernel_loss_grad(p, x):
    """f and grad f by the dispatchers the loops call: the copies of the problem's family (compiling the
    dispatchers of ``engine/dispatch.py`` themselves would compile every family's kernels)."""
    family = dispatch.family_of(p.code)
    g = np.zeros(p.dim)
    dispatch.compiled("problem_grad", family)(p.code, x, p.pf, p.pi, p.A, p.b, g)
    return dispatch.compiled("problem_loss", family)(p.code, x, p.pf, p.pi, p.A, p.b), g


@pytest.mark.parametrize("d", [2, 3, 10, 50])
def test_rosenbrock_matches_scipy(d):
    p = build(problem="rosenbrock", dim=d)
    for _ in range(5):
        x = RNG.normal(size=d) * 2
        f, g = kernel_loss_grad(p, x)
        assert f == pytest.approx(rosen(x), rel=1e-12)
        np.testing.assert_allclose(g, rosen_der(x), rtol=1e-12, atol=1e-12)
        assert p.loss_ref(x) == pytest.approx(rosen(x), rel=1e-12)
        np.testing.assert_allclose(p.grad_ref(x), rosen_der(x), rtol=1e-12, atol=1e-12)
    assert rosen(p.x_star) == 0 and p.f_star == 0


@pytest.mark.parametrize("options", [
    {"problem": "quadratic", "dim": 7, "kappa": 50.0},
    {"problem": "sign-trap", "trap_eps": 0.3},
    {"problem": "vote-trap", "trap_lambda": 6.0},
])
def test_gradient_against_finite_differences(options):
    p = build(**options)
    for _ in range(5):
        x = RNG.normal(size=p.dim)
        f, g = kernel_loss_grad(p, x)
        assert f == pytest.approx(p.loss_ref(x), rel=1e-12)
        fd = approx_fprime(x, p.loss_ref, 1e-7)
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-5)


def test_optima_and_smoothness_are_right():
    q = build(problem="quadratic", dim=5, kappa=1000.0)
    np.testing.assert_allclose(q.L, np.logspace(0, 3, 5))
    v = build(problem="vote-trap", trap_lambda=6.0)
    assert v.x_star[0] == pytest.approx(-0.5)
    _, g = kernel_loss_grad(v, v.x_star)
    assert abs(g[0]) < 1e-14
    # vote-trap: the global objective is the mean of the 3 workers' local objectives
    for x in RNG.normal(size=(5, 1)):
        local = [v.oracle_ref(x, m, None, 1)[0] for m in range(3)]
        assert np.mean(local) == pytest.approx(v.grad_ref(x)[0])
    s = build(problem="sign-trap", trap_eps=0.5)
    H = np.array([[2.5, -1.5], [-1.5, 2.5]])  # a1 a1^T + a2 a2^T for eps = 1/2
    np.testing.assert_allclose(s.grad_ref(np.array([1.0, 2.0])), H @ [1.0, 2.0])
    # coordinate-wise smoothness: diag(L) - H must be positive semidefinite
    assert np.linalg.eigvalsh(np.diag(s.L) - H).min() >= -1e-12


@pytest.mark.parametrize("options", [
    {"problem": "rosenbrock", "dim": 6, "oracle": "term"},
    {"problem": "sign-trap"},
])
def test_sampled_oracles_are_unbiased(options):
    """Mean of S oracle draws within 5 standard errors (estimated from the draws) of the exact gradient."""
    p = build(**options)
    x = RNG.normal(size=p.dim) * 0.5
    gen = np.random.default_rng(7)
    S = 20000
    draws = np.array([p.oracle_ref(x, 0, gen, 1) for _ in range(S)])
    se = draws.std(axis=0, ddof=1) / np.sqrt(S)
    assert np.all(np.abs(draws.mean(axis=0) - p.grad_ref(x)) <= 5 * se + 1e-12)


@pytest.mark.parametrize("options", [
    {"problem": "rosenbrock", "dim": 6, "oracle": "term"},
    {"problem": "sign-trap"},
    {"problem": "vote-trap"},
    {"problem": "quadratic", "dim": 4},
])
def test_oracle_kernel_matches_reference_draw_for_draw(options):
    p = build(**options)
    x = RNG.normal(size=p.dim)
    for tau in (1, 4):
        for worker in range(3):
            g1, g2 = np.random.default_rng(99), np.random.default_rng(99)
            out = np.zeros(p.dim)
            oracle = dispatch.compiled("problem_oracle", dispatch.family_of(p.code))
            oracle(p.code, x, worker, g1, tau, p.pf, p.pi, p.A, p.b, p.ptr, p.idx, out)
            np.testing.assert_allclose(out, p.oracle_ref(x, worker, g2, tau), rtol=1e-13, atol=1e-13)


def test_sign_trap_signs_on_the_line():
    """On x1 + x2 = 2 every oracle sign is +-(1, -1) (docs/theory.md §4)."""
    p = build(problem="sign-trap")
    gen = np.random.default_rng(3)
    for t in np.linspace(-5, 5, 41):
        x = np.array([1 + t, 1 - t])
        for _ in range(4):
            s = np.sign(p.oracle_ref(x, 0, gen, 1))
            assert s[0] == -s[1]
