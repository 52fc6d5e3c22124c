"""Binomial vote counts against simulating every worker: same distribution of the summed messages."""

import numpy as np
import pytest
from scipy import stats

from signsim import noise
from signsim.codes import Attack, SignZero
from signsim.engine import binomial

CASES = [("gaussian:1", 1), ("gaussian:1", 4), ("skewed:1", 1), ("bimodal:1", 1), ("laplace:0.5", 1),
         ("uniform:2", 1), ("cauchy:0.3", 3), ("none", 1)]
G = np.array([0.8, -0.3, 0.05, 0.0, -2.0])


def simulate_sums(model, p, tau, g, M, byz, attack, sign_zero, rng, reps):
    """Every worker drawn: sign(g + mean of tau noise draws), sign(0) policy, attack, then the sum."""
    out = np.empty((reps, g.size))
    for r in range(reps):
        xi = model.sample(rng, (M, g.size, tau), p).mean(axis=2)
        s = np.sign(g + xi)
        zeros = s == 0
        if sign_zero == SignZero.RANDOM:
            s[zeros] = np.where(rng.random(zeros.sum()) < 0.5, -1.0, 1.0)
        elif sign_zero == SignZero.PLUS:
            s[zeros] = 1.0
        if attack == Attack.INVERT:
            s[:byz] = -s[:byz]
        else:
            s[:byz] = np.abs(s[:byz]) * np.where(rng.random((byz, g.size)) < 0.5, -1.0, 1.0)
        out[r] = s.sum(axis=0)
    return out


def binomial_sums(model, p, tau, g, M, byz, attack, sign_zero, seed, reps):
    gen = np.random.default_rng(seed)
    det = binomial.is_deterministic(model, p)
    out = np.empty((reps, g.size))
    buf = np.empty(g.size)
    for r in range(reps):
        binomial.vote_sum(g, model.code, p, tau, det, M, byz, int(attack), int(sign_zero), gen, buf)
        out[r] = buf
    return out


@pytest.mark.parametrize("spec,tau", CASES)
@pytest.mark.parametrize("M,byz,attack", [(7, 0, Attack.INVERT), (8, 3, Attack.INVERT), (9, 2, Attack.RANDOM)])
def test_vote_sums_have_the_per_worker_distribution(spec, tau, M, byz, attack):
    model, p = noise.parse(spec)
    reps = 3000
    sign_zero = SignZero.RANDOM
    a = simulate_sums(model, p, tau, G, M, byz, attack, sign_zero, np.random.default_rng(1), reps)
    b = binomial_sums(model, p, tau, G, M, byz, attack, sign_zero, 2, reps)
    for i in range(G.size):
        # chi-square two-sample test on the counts of each possible sum; level 1e-4 per coordinate
        values = np.union1d(a[:, i], b[:, i])
        table = np.array([[np.sum(a[:, i] == v) for v in values], [np.sum(b[:, i] == v) for v in values]])
        if len(values) == 1:
            continue
        assert stats.chi2_contingency(table)[1] > 1e-4, (spec, i)


@pytest.mark.parametrize("sign_zero", [SignZero.RANDOM, SignZero.PLUS, SignZero.ZERO])
def test_zero_gradient_without_noise_follows_the_sign_zero_policy(sign_zero):
    model, p = noise.parse("none")
    g = np.array([0.0, 1.0, -1.0])
    out = binomial_sums(model, p, 1, g, 5, 0, Attack.INVERT, sign_zero, 0, 2000)
    assert np.all(out[:, 1] == 5) and np.all(out[:, 2] == -5)
    if sign_zero == SignZero.ZERO:
        assert np.all(out[:, 0] == 0)
    elif sign_zero == SignZero.PLUS:
        assert np.all(out[:, 0] == 5)
    else:  # sum of 5 fair coins: mean 0, variance 5
        assert abs(out[:, 0].mean()) < 5 * np.sqrt(5 / 2000)
        assert abs(out[:, 0].var() - 5) < 5 * np.sqrt(2 * 25 / 2000)


def test_a_million_workers_mean_matches_closed_form():
    model, p = noise.parse("gaussian:1")
    M = 10**6
    out = binomial_sums(model, p, 1, G, M, 0, Attack.INVERT, SignZero.RANDOM, 3, 400)
    rho = stats.norm.cdf(np.abs(G))  # P(correct sign); the zero coordinate has rho = 1/2
    expected = M * np.sign(G) * (2 * rho - 1)
    sd = np.sqrt(M * 4 * rho * (1 - rho))
    assert np.all(np.abs(out.mean(axis=0) - expected) < 5 * sd / np.sqrt(400))


def test_every_registered_noise_model_is_either_supported_or_refused():
    for name in noise.registry():
        if name in binomial.CLOSED_FORM_TAU:
            continue
        assert name in ("student-t", "stable")
