"""check-spb and bound for a federated round (docs/theory.md §12): the vote of S workers sampled of M (exact over
the sampling), H local steps (closed form on separable quadratics with Gaussian noise, Monte Carlo elsewhere), the
bounds a round keeps or withdraws, and bad input. Every oracle here is written out in this file: brute force over
the C(M, S) subsets and the 3^S message outcomes, plain NumPy simulations with binomial tolerances, hand-computed
values."""

import itertools
import math

import numpy as np
import pytest
from scipy.special import betainc
from scipy.stats import norm

import signsim
from signsim import noise, problems
from signsim.diagnostics.local_steps import closed_form_round, geometric
from signsim.diagnostics.sampled_vote import sampled_sum_law, sampled_vote_law
from signsim.diagnostics.votes import Law
from signsim.interface import config

from ..conftest import binomial_tolerance

# --------------------------------------------------------------------------------------------------------------
# oracles


def brute_force_sampled_vote(plus, zero, minus, S, tie):
    """P(vote = +1), P(vote = -1), P(tie) per coordinate: the average over all C(M, S) subsets of the vote's law,
    each from the 3^S outcomes of the subset's messages (no code shared with the dynamic programme)."""
    M, d = plus.shape
    up, down, tied = np.zeros(d), np.zeros(d), np.zeros(d)
    subsets = list(itertools.combinations(range(M), S))
    for T in subsets:
        for outcome in itertools.product((1, 0, -1), repeat=S):
            p = np.ones(d)
            for m, o in zip(T, outcome, strict=True):
                p = p * (plus[m] if o == 1 else zero[m] if o == 0 else minus[m])
            total = sum(outcome)
            if total > 0:
                up += p
            elif total < 0:
                down += p
            else:
                tied += p
    n = len(subsets)
    up, down, tied = up / n, down / n, tied / n
    if tie == "random":
        return up + tied / 2, down + tied / 2, tied
    return up, down, tied


def simulate_sampled_vote(plus, zero, minus, S, tie, n, seed):
    """Monte Carlo: n rounds of (sample S of M without replacement, draw each message, vote), plain NumPy."""
    rng = np.random.default_rng(seed)
    M, d = plus.shape
    chosen = np.argsort(rng.random((n, M)), axis=1)[:, :S]  # a uniform S-subset per round
    r = rng.random((n, S, d))
    p = plus[chosen]  # n x S x d
    z = zero[chosen]
    msg = np.where(r < p, 1, np.where(r < p + z, 0, -1))
    total = msg.sum(axis=1)
    coin = rng.random((n, d)) < 0.5
    vote = np.sign(total)
    if tie == "random":
        vote = np.where(total == 0, np.where(coin, 1, -1), vote)
    return (vote == 1).mean(axis=0), (vote == -1).mean(axis=0)


def heterogeneous_laws(seed, M, d, zeros=True):
    rng = np.random.default_rng(seed)
    raw = rng.dirichlet(np.ones(3), size=(M, d))
    if not zeros:
        raw[..., 1] = 0.0
        raw /= raw.sum(axis=-1, keepdims=True)
    raw[0, 0] = (0.0, 1.0, 0.0)  # a worker that always sends 0 on coordinate 0
    raw[1, 1] = (1.0, 0.0, 0.0)  # and one that always sends +1 on coordinate 1
    return raw[..., 0].copy(), raw[..., 1].copy(), raw[..., 2].copy()


# --------------------------------------------------------------------------------------------------------------
# the sampled vote


@pytest.mark.parametrize("M,S", [(6, 3), (6, 2), (6, 4), (5, 5), (4, 1), (7, 6)])
@pytest.mark.parametrize("tie", ["random", "zero"])
def test_sampled_vote_equals_brute_force_over_subsets(M, S, tie):
    plus, zero, minus = heterogeneous_laws(M * 10 + S, M, 4)
    v = sampled_vote_law(Law(plus, zero, minus), S, tie)
    up, down, tied = brute_force_sampled_vote(plus, zero, minus, S, tie)
    np.testing.assert_allclose(v.plus, up, atol=1e-13)
    np.testing.assert_allclose(v.minus, down, atol=1e-13)
    np.testing.assert_allclose(v.tie, tied, atol=1e-13)


def test_sampled_sum_law_is_a_law_with_the_right_mean():
    M, S = 9, 4
    plus, zero, minus = heterogeneous_laws(3, M, 5)
    dist = sampled_sum_law(Law(plus, zero, minus), S)
    np.testing.assert_allclose(dist.sum(axis=1), 1.0, atol=1e-13)
    assert (dist >= -1e-15).all()
    # E[sum over a uniform S-subset] = (S/M) sum_m (p+_m - p-_m)
    np.testing.assert_allclose(dist @ np.arange(-S, S + 1), S / M * (plus - minus).sum(axis=0), atol=1e-12)


@pytest.mark.parametrize("tie", ["random", "zero"])
def test_sampled_vote_matches_a_simulation_of_sampling_and_voting(tie):
    M, S, n = 10, 5, 200_000
    plus, zero, minus = heterogeneous_laws(11, M, 3)
    v = sampled_vote_law(Law(plus, zero, minus), S, tie)
    up, down = simulate_sampled_vote(plus, zero, minus, S, tie, n, seed=2)
    for p, q in ((v.plus, up), (v.minus, down)):
        for i in range(3):
            assert abs(p[i] - q[i]) <= binomial_tolerance(p[i], n), (i, p[i], q[i])


@pytest.mark.parametrize("S", [1, 2, 3, 4, 7, 8])
def test_identical_workers_sampled_are_the_vote_of_S(S):
    """Homogeneous workers: any S of M vote as S workers; without zero messages and with a fair tie-break,
    P(vote agrees) = I_rho(l, l), l = floor((S + 1)/2) (docs/theory.md §1.2)."""
    M, d = 9, 4
    rho = np.array([0.3, 0.5, 0.55, 0.9])
    law = Law(np.tile(rho, (M, 1)), np.zeros((M, d)), np.tile(1 - rho, (M, 1)))
    v = sampled_vote_law(law, S, "random")
    l = (S + 1) // 2
    np.testing.assert_allclose(v.plus, betainc(l, l, rho), atol=1e-13)


def test_sampling_every_worker_is_the_full_vote():
    plus, zero, minus = heterogeneous_laws(5, 6, 4)
    full = brute_force_sampled_vote(plus, zero, minus, 6, "zero")
    v = sampled_vote_law(Law(plus, zero, minus), 6, "zero")
    np.testing.assert_allclose(v.plus, full[0], atol=1e-13)


# --------------------------------------------------------------------------------------------------------------
# H local steps: the closed form


@pytest.mark.parametrize("a", [0.999999, 0.99, 0.5, 0.0, -0.5, -1.0, -1.5, 2.0, -3.0, 1.0])
@pytest.mark.parametrize("H", [1, 2, 5, 12])
def test_geometric_sums(a, H):
    powers = np.array([a**k for k in range(H)], dtype=np.float64)
    A1, A2 = powers.sum(), (powers**2).sum()
    ratio, s1, root = geometric(np.array([a]), H)
    assert s1[0] == pytest.approx(A1, rel=1e-9, abs=1e-12)
    assert root[0] == pytest.approx(math.sqrt(A2), rel=1e-9)
    assert ratio[0] == pytest.approx(A1 / math.sqrt(A2), rel=1e-9, abs=1e-12)


def test_geometric_ratio_stays_finite_where_the_sums_overflow():
    ratio, A1, root = geometric(np.array([-3.0, 3.0]), 10**6)
    assert np.isfinite(ratio).all() and not np.isfinite(root).any()
    # |a| > 1: A1 / sqrt(A2) -> e^(H-1) sqrt(a^2 - 1)/(|a| - e) ... for a = 3: sqrt(8)/2; a = -3 (H even): -sqrt(8)/4
    assert ratio[1] == pytest.approx(math.sqrt(8) / 2)
    assert ratio[0] == pytest.approx(-math.sqrt(8) / 4)


def simulate_rounds(c, h0, t, x, s, gamma, H, n, seed):
    """n rounds of H local steps on the oracle c (y - t) + N(0, s^2), plain NumPy: u = sum of the H gradients."""
    rng = np.random.default_rng(seed)
    y = np.tile(x, (n, 1)).astype(float)
    u = np.zeros_like(y)
    for _ in range(H):
        grad = c * (y - t) + s * rng.standard_normal(y.shape)
        u += grad
        y -= gamma * grad
    return u


@pytest.mark.parametrize("gamma,H", [(0.01, 5), (0.015, 3), (0.03, 4), (0.025, 2)])
def test_quadratic_round_closed_form_matches_a_simulation(gamma, H):
    """kappa = 100, d = 5: gamma L spans (0, 1) and, for larger gamma, (1, 2) and (2, 3) (a < -1: the round can
    point the wrong way); the success probability, E u and std u against a NumPy simulation of the local steps."""
    cfg = config.resolve(dict(problem="quadratic", dim=5, noise="gaussian:2", batch_size=2, workers=1))
    p = problems.build(cfg)
    model, params = noise.parse(cfg.noise)
    x = np.array([1.0, -0.7, 0.4, 0.9, -0.2])
    law, mean, std = closed_form_round(p, model, params, x, 2, H, gamma, 1, [0])
    n = 100_000
    L = p.pf
    u = simulate_rounds(L, None, 0.0, x, 2 / math.sqrt(2), gamma, H, n, seed=7)
    freq = (u > 0).mean(axis=0)
    for i in range(5):
        assert abs(law.plus[0, i] - freq[i]) <= binomial_tolerance(law.plus[0, i], n), (i, law.plus[0, i], freq[i])
    np.testing.assert_allclose(mean[0], u.mean(axis=0), atol=6 * std[0].max() / math.sqrt(n))
    np.testing.assert_allclose(std[0], u.std(axis=0), rtol=0.02)
    assert law.zero.sum() == 0
    np.testing.assert_allclose(law.plus + law.minus, 1.0)


def test_quadratic_round_can_point_the_wrong_way():
    """gamma L = 2.5 (a = -1.5), H = 2: u = h (1 + a) = -0.5 h, so without noise the round's sign is wrong."""
    cfg = config.resolve(dict(problem="quadratic", dim=1, noise="none", workers=1))
    p = problems.build(cfg)
    model, params = noise.parse("none")
    law, mean, _ = closed_form_round(p, model, params, np.array([2.0]), 1, 2, 2.5, 1, [0])
    assert mean[0, 0] == pytest.approx(-1.0) and law.minus[0, 0] == 1.0 and law.plus[0, 0] == 0.0


def test_vote_trap_round_in_closed_form_by_hand():
    """x = 0.5, lambda = 6, gamma = 0.5, H = 2: workers 0, 1 (f' = y - 1): u = -0.5 - 0.25 = -0.75; worker 2
    (f' = 6(y + 1)): y1 = 0.5 - 4.5 = -4, u = 9 - 18 = -9. All three send -1 although g = 8/3 > 0."""
    cfg = config.resolve(dict(problem="vote-trap", x0=0.5))
    p = problems.build(cfg)
    model, params = noise.parse("none")
    law, mean, _ = closed_form_round(p, model, params, np.array([0.5]), 1, 2, 0.5, 3, [0, 1, 2])
    np.testing.assert_allclose(mean[:, 0], [-0.75, -0.75, -9.0])
    np.testing.assert_array_equal(law.minus[:, 0], [1.0, 1.0, 1.0])
    doc = signsim.check_spb(problem="vote-trap", x0=0.5, local_steps=2, clients_per_round=2).to_dict()
    assert doc["method_of_estimate"] == "closed-form" and doc["round"]["method"] == "closed-form"
    assert doc["rho_M_norm"] == pytest.approx(-8 / 3) and doc["round"]["u_mean"][0] == pytest.approx(-10.5 / 3)


# --------------------------------------------------------------------------------------------------------------
# check-spb on a round


def test_vote_trap_sampled_vote_by_hand():
    """x = 0.5, M = 6 (local signs -, -, +, -, -, +), S = 3: the vote is + exactly when both '+' workers are
    sampled, probability C(4, 1)/C(6, 3) = 0.2, so E<g, vote> = (0.2 - 0.8) 8/3 = -1.6 (all six: -8/3)."""
    doc = signsim.check_spb(problem="vote-trap", x0=0.5, workers=6, clients_per_round=3).to_dict()
    assert doc["rho_M_norm"] == pytest.approx(-1.6)
    assert doc["vote_agree"][0] == pytest.approx(0.2)
    assert doc["round"]["clients_per_round"] == 3 and "sampled 3 of the 6" in doc["round"]["vote"]
    everyone = signsim.check_spb(problem="vote-trap", x0=0.5, workers=6).to_dict()
    assert everyone["rho_M_norm"] == pytest.approx(-8 / 3)
    half = signsim.check_spb(problem="vote-trap", x0=0.5, workers=6, participation=0.5).to_dict()
    assert half["rho_M_norm"] == pytest.approx(-1.6)


def test_sampled_vote_of_identical_workers_in_check_spb():
    """Quadratic, Gaussian noise: identical workers, so the vote of S sampled is the vote of S; closed form
    I_rho(l, l) per coordinate (no zeros, fair ties)."""
    doc = signsim.check_spb(problem="quadratic", dim=4, workers=16, clients_per_round=5).to_dict()
    rho = np.array(doc["rho"])
    np.testing.assert_allclose(doc["vote_agree"], betainc(3, 3, rho), atol=1e-12)
    assert doc["workers"] == 16 and doc["rho_M_lower_bound"] == pytest.approx(
        (1 - math.exp(-((2 * rho.min() - 1) ** 2) * 3)) * np.abs(doc["grad"]).sum())


def test_local_steps_in_check_spb_closed_form():
    doc = signsim.check_spb(problem="quadratic", dim=3, local_steps=4, local_lr=0.3, noise="gaussian:0.5",
                            x0=0.8).to_dict()
    L = np.logspace(0, 2, 3)
    a = 1 - 0.3 * L
    A1 = sum(a**k for k in range(4))
    A2 = sum(a ** (2 * k) for k in range(4))
    want = norm.cdf(np.sign(L * 0.8) * L * 0.8 * A1 / (0.5 * np.sqrt(A2)))
    np.testing.assert_allclose(doc["rho"], want, atol=1e-12)
    assert doc["sigma"] is None and doc["l12_norm"] is None and "local steps" in doc["sigma_note"]
    assert doc["round"]["local_step_size"] == 0.3


def test_local_steps_monte_carlo_agrees_with_the_closed_form():
    """The Monte Carlo of the local steps (the run's oracle, compiled) against the closed form on the quadratic."""
    opts = dict(problem="quadratic", dim=4, local_steps=3, local_lr=0.02, noise="gaussian:3", samples=4000)
    exact = signsim.check_spb(**opts).to_dict()
    mc = signsim.check_spb(**opts, estimator="monte-carlo").to_dict()
    assert mc["method_of_estimate"] == "monte-carlo" and mc["round"]["rounds"] == 4000
    assert "Monte Carlo over 4000 rounds" in mc["round"]["note"]
    for p, q in zip(exact["rho"], mc["rho"], strict=True):
        assert abs(p - q) <= binomial_tolerance(p, 4000)
    np.testing.assert_allclose(mc["round"]["u_std"], exact["round"]["u_std"], rtol=0.08)


def test_local_steps_elsewhere_say_monte_carlo_with_an_interval():
    doc = signsim.check_spb(problem="rosenbrock", dim=3, local_steps=3, samples=500).to_dict()
    assert doc["method_of_estimate"] == "monte-carlo"
    assert doc["round"]["note"] == "no closed form for H local steps on rosenbrock: Monte Carlo over 500 rounds " \
                                   "per worker oracle"
    nz = np.array(doc["grad"]) != 0
    lo, hi, rho = (np.array(doc[k], dtype=float)[nz] for k in ("rho_low", "rho_high", "rho"))
    assert nz.any() and (lo <= rho).all() and (rho <= hi).all() and (hi - lo > 0).any()
    lap = signsim.check_spb(problem="quadratic", dim=3, local_steps=2, noise="laplace:1", samples=200).to_dict()
    assert lap["round"]["note"].startswith("no closed form for H local steps with laplace noise")


def test_local_steps_change_the_estimate():
    """Fails on the code that ignored --local-steps: with gamma L > 2 on the last coordinates the round's sign
    flips."""
    one = signsim.check_spb(problem="quadratic", dim=4, noise="none", local_lr=0.025).to_dict()
    two = signsim.check_spb(problem="quadratic", dim=4, noise="none", local_lr=0.025, local_steps=2).to_dict()
    assert one["verdict"] == "holds" and two["verdict"] == "violated"


def test_local_round_kernel_equals_its_numpy_reference():
    from numba.typed import List

    from signsim.diagnostics.local_kernels import local_round_counts, local_round_counts_ref
    from signsim.seeding import diagnostic_streams

    for options in (dict(problem="rosenbrock", dim=3, noise="gaussian:0.5", batch_size=2),
                    dict(problem="vote-trap", noise="uniform:1", workers=3)):
        cfg = config.resolve(options)
        p = problems.build(cfg)
        model, params = noise.parse(cfg.noise)
        x = np.ascontiguousarray(p.x0 + 0.05, dtype=np.float64)
        W = 3 if p.name == "vote-trap" else 1
        got = local_round_counts(p, x, model.code, params, cfg.batch_size, W, List(diagnostic_streams(5, 4)), 37, 3,
                                 0.01)
        ref = local_round_counts_ref(p, model, params, x, cfg.batch_size, W, diagnostic_streams(5, 4), 37, 3, 0.01)
        for a, b in zip(got, ref, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_one_local_step_and_every_worker_are_todays_outputs():
    opts = dict(problem="quadratic", dim=5, workers=4)
    default = signsim.check_spb(**opts).to_dict()
    explicit = signsim.check_spb(**opts, local_steps=1, clients_per_round=4, participation=None).to_dict()
    for doc in (default, explicit):
        doc.pop("config")
    assert default == explicit
    assert default["round"]["local_steps"] == 1 and default["round"]["note"] is None
    b1 = signsim.bound(problem="rosenbrock", dim=3).to_dict()
    b2 = signsim.bound(problem="rosenbrock", dim=3, local_steps=1).to_dict()
    b1.pop("config")
    b2.pop("config")
    assert b1 == b2 and b1["round"]["note"] is None


# --------------------------------------------------------------------------------------------------------------
# bound


def test_bound_withdraws_every_bound_for_local_steps():
    doc = signsim.bound(problem="quadratic", dim=3, local_steps=3).to_dict()
    assert doc["bounds"] and all(b["at_K"] is None and b["note"].startswith("no bound known") for b in doc["bounds"])
    assert all(v["bound"] is None for b in doc["bounds"] for v in b["values"])
    assert "H = 3 local steps" in doc["round"]["note"]
    assert doc["majority_table"]["local_steps"] == 3 and "closed form" in doc["majority_table"]["round_note"]


def test_bound_with_sampled_workers_uses_S():
    doc = signsim.bound(problem="quadratic", dim=3, workers=16, clients_per_round=4, byzantine=2).to_dict()
    by = {b["key"]: b for b in doc["bounds"]}
    c = {k["name"]: k["value"] for k in doc["constants"]}
    K = c["K"]
    want = (math.sqrt(c["L1"]) * (c["F"] + 0.5) + 2 * c["sigma1"] / math.sqrt(4)) ** 2 / K
    assert by["bernstein-majority"]["at_K"] == pytest.approx(want)
    assert "S = 4 sampled of M = 16" in by["bernstein-majority"]["label"]
    assert "S = 4 sampled of M = 16" in by["majority-constant"]["label"]
    assert by["ssdm"]["at_K"] is None and by["ssdm"]["note"].startswith("no bound known")
    assert by["bernstein-byzantine"]["at_K"] is None
    assert doc["majority_table"]["clients_per_round"] == 4 and doc["majority_table"]["sampled_ratio"] is not None


def test_bound_server_and_local_step_sizes_make_gamma():
    doc = signsim.bound(problem="quadratic", dim=3, lr=0.1, local_lr=0.02, server_lr=2.0).to_dict()
    gamma = next(k for k in doc["constants"] if k["name"] == "gamma")
    assert gamma["value"] == pytest.approx(0.04) and "--server-lr" in gamma["source"]


# --------------------------------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize("args,names", [
    (["check-spb", "--problem", "quadratic", "--workers", "4", "--clients-per-round", "5"], "--clients-per-round 5"),
    (["bound", "--problem", "quadratic", "--workers", "4", "--clients-per-round", "9"], "--clients-per-round 9"),
    (["check-spb", "--problem", "quadratic", "--participation", "0.5", "--clients-per-round", "2"],
     "--participation 0.5 and --clients-per-round 2"),
    (["check-spb", "--problem", "rosenbrock", "--local-steps", "2", "--estimator", "closed-form"],
     "--estimator closed-form"),
    (["check-spb", "--problem", "logistic", "--local-steps", "2", "--estimator", "exact"], "--estimator exact"),
    (["check-spb", "--problem", "quadratic", "--local-steps", "0"], "--local-steps 0"),
    (["bound", "--problem", "quadratic", "--participation", "1.5"], "--participation 1.5"),
    (["check-spb", "--problem", "quadratic", "--participation", "0"], "--participation 0"),
    (["check-spb", "--problem", "quadratic", "--local-lr", "-1"], "--local-lr -1"),
])
def test_bad_round_input_exits_2_with_one_line(cli, args, names):
    r = cli(*args)
    assert r.code == 2, r.err
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and names in lines[0] and "Traceback" not in r.err


@pytest.mark.parametrize("M,S,d", [(1, 1, 3), (6, 3, 5), (7, 7, 2), (12, 5, 4), (30, 11, 3), (9, 1, 2)])
def test_sampled_vote_kernel_equals_its_numpy_reference(M, S, d):
    from signsim.diagnostics.sampled_vote import sampled_sum_law_ref

    law = Law(*heterogeneous_laws(M + S, max(M, 2), d)) if M > 1 else Law(*(a[:1] for a in heterogeneous_laws(1, 2, d)))
    np.testing.assert_allclose(sampled_sum_law(law, S), sampled_sum_law_ref(law, S), atol=1e-14)


def test_bound_majority_table_sampled_identical_workers_is_the_row_of_S():
    doc = signsim.bound(problem="quadratic", dim=3, workers=16, participation=0.33).to_dict()
    mt = doc["majority_table"]
    assert mt["clients_per_round"] == 5 and doc["round"]["participation"] == 0.33
    assert mt["sampled_ratio"] == pytest.approx(next(r["ratio"] for r in mt["rows"] if r["M"] == 5), abs=1e-13)
