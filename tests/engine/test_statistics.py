"""Sign success probabilities measured through the whole engine against closed forms (docs/theory.md §1).

One step of sign descent on the quadratic with kappa = 1 started at x_0 = c: every coordinate has g_i = c,
so the d coordinates are d independent trials, and vote_i = (x_0 - x_1)_i / gamma.
"""

import numpy as np
import pytest
from scipy.special import betainc
from scipy.stats import norm

from signsim.engine.driver import simulate

from ..conftest import binomial_tolerance, make_engine

D = 40_000
C = 0.3


def one_step_votes(**options):
    engine, *_ = make_engine(problem="quadratic", dim=D, kappa=1.0, x0=C, iters=1, lr=1.0, momentum=0.0,
                             **options)
    x0 = engine.x.copy()
    simulate(engine)
    return x0 - engine.x  # = gamma * broadcast with gamma = 1


@pytest.mark.parametrize(("sigma", "tau"), [(1.0, 1), (1.0, 4), (0.5, 1), (2.0, 9)])
def test_gaussian_sign_success_is_phi(sigma, tau):
    votes = one_step_votes(method="signsgd", workers=1, noise=f"gaussian:{sigma}", batch_size=tau)
    rho = norm.cdf(np.sqrt(tau) * C / sigma)
    assert abs(np.mean(votes > 0) - rho) < binomial_tolerance(rho, D)


@pytest.mark.parametrize("spec", ["laplace:1", "uniform:1", "student-t:3:1", "bimodal:1", "skewed:1"])
def test_sign_success_from_each_noise_cdf(spec):
    from signsim import noise

    model, p = noise.parse(spec)
    rho = float(model.success_probability(np.array([C]), p)[0])
    votes = one_step_votes(method="signsgd", workers=1, noise=spec)
    assert abs(np.mean(votes > 0) - rho) < binomial_tolerance(rho, D)


@pytest.mark.parametrize("workers", [1, 2, 3, 4, 5, 8, 9])
def test_majority_vote_success_is_incomplete_beta(workers):
    """E[vote_i sign g_i] = 2 I_rho(l, l) - 1 with l = floor((M+1)/2); even M equals M - 1 (fair ties)."""
    sigma = 1.0
    rho = norm.cdf(C / sigma)
    l = (workers + 1) // 2
    expected = 2 * betainc(l, l, rho) - 1
    votes = one_step_votes(method="signsgd", workers=workers, noise=f"gaussian:{sigma}", tie="random")
    p_correct = (expected + 1) / 2
    assert abs(np.mean(votes) - expected) < 2 * binomial_tolerance(p_correct, D)


def test_stochastic_sign_of_exact_gradient():
    """sign~ of an exact gradient: rho_i = 1/2 + |g_i| / (2 ||g||_2) (docs/theory.md §1)."""
    votes = one_step_votes(method="sto-sign", workers=1, noise="none")
    rho = 0.5 + C / (2 * C * np.sqrt(D))
    assert abs(np.mean(votes > 0) - rho) < binomial_tolerance(rho, D)
