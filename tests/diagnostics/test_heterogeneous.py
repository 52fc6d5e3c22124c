"""Diagnostics for workers that differ, split sampling and zero messages (issue #14), against brute-force
oracles written here from scratch: gradients from the formulas, laws by enumeration, votes by simulation.
None of them calls the estimators' kernels; the statistical ones use fixed seeds and tolerances of five
standard errors of their sample size."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import betainc

from signsim import noise, problems
from signsim.commands.check_spb import SpbOptions, check_spb
from signsim.commands.diversity import DiversityOptions, diversity
from signsim.diagnostics import votes
from signsim.diagnostics.estimators import estimate
from signsim.diagnostics.votes import Law
from signsim.interface import config

# --------------------------------------------------------------------------------------------------------------
# independent references


def logistic_grads(A, y, w, lam):
    """Per-sample gradients of log(1 + exp(-y a^T w)) + lam/2 ||w||^2, one row per sample."""
    m = A @ w
    return (-y / (1.0 + np.exp(y * m)))[:, None] * A + lam * w[None, :]


def least_squares_grads(A, y, w):
    return (A @ w - y)[:, None] * A


def data_of(p):
    n = p.finite_sum.n
    return p.A[:n], p.b[:n], [np.asarray(p.finite_sum.split.group(k)) for k in range(p.finite_sum.split.groups)]


def message_mean(v, policy, gi):
    """E[sign g_i * message] of one raw value v under a sign(0) policy."""
    s = np.sign(gi)
    if v != 0:
        return s * np.sign(v)
    return {"random": 0.0, "plus": s * 1.0, "zero": 0.0}[policy]


@pytest.fixture(scope="module")
def unequal(tmp_path_factory):
    """30 rows, 3 features, classes of 9 and 21 rows."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(30, 3))
    y = np.r_[np.zeros(9), np.ones(21)]
    path = tmp_path_factory.mktemp("het") / "unequal.npz"
    np.savez(path, X=X, y=y)
    return str(path)


def setup(**options):
    cfg = config.resolve(options)
    model, params = noise.parse(cfg.noise or "none")
    return cfg, problems.build(cfg), model, params


# --------------------------------------------------------------------------------------------------------------
# the law of the vote


def enumerate_vote(law: Law, i: int, tie: str):
    """P(vote = +1), P(vote = -1) on coordinate i by summing over all 3^M message outcomes."""
    M = law.plus.shape[0]
    up = down = 0.0
    for outcome in itertools.product((1, 0, -1), repeat=M):
        pr = 1.0
        for m, o in enumerate(outcome):
            pr *= {1: law.plus, 0: law.zero, -1: law.minus}[o][m, i]
        s = sum(outcome)
        if s > 0:
            up += pr
        elif s < 0:
            down += pr
        elif tie == "random":
            up += pr / 2
            down += pr / 2
    return up, down


@pytest.mark.parametrize("M", [1, 2, 3, 4, 5, 6])
@pytest.mark.parametrize("tie", ["random", "zero"])
def test_vote_law_against_enumeration_of_all_outcomes(M, tie):
    rng = np.random.default_rng(M)
    d = 4
    raw = rng.dirichlet(np.ones(3), size=(M, d))
    law = Law(raw[..., 0], raw[..., 1], raw[..., 2])
    v = votes.vote_law(law, tie)
    for i in range(d):
        up, down = enumerate_vote(law, i, tie)
        assert v.plus[i] == pytest.approx(up, abs=1e-12) and v.minus[i] == pytest.approx(down, abs=1e-12)
    np.testing.assert_allclose(votes.sum_law_kernel(law.plus, law.zero, law.minus), votes.sum_law_ref(law),
                               atol=1e-14)


@pytest.mark.parametrize("M", [1, 2, 3, 7, 8, 15, 33])
def test_identical_workers_reduce_to_the_incomplete_beta_formula(M):
    rho = np.linspace(0.05, 0.95, 19)
    copies = Law(np.tile(rho, (M, 1)), np.zeros((M, rho.size)), np.tile(1 - rho, (M, 1)))
    v = votes.vote_law(copies, "random")
    l = (M + 1) // 2
    np.testing.assert_allclose(v.plus, betainc(l, l, rho), atol=1e-12)
    g = np.linspace(-1, 2, 19)
    from signsim.diagnostics import spb

    rho_g = np.where(g > 0, rho, 1 - rho)  # the law above is of P(+1); success is relative to sign g
    assert votes.vote_inner_product(g, v) == pytest.approx(spb.rho_M_norm(g, rho_g, M), abs=1e-12)


def test_byzantine_messages_against_enumeration():
    """Quadratic with Gaussian noise: 2 inverting workers among 5; the vote's success by enumeration."""
    from scipy.stats import norm

    doc = check_spb(*_cfg_opts(problem="quadratic", dim=4, kappa=4.0, noise="gaussian:1.5", workers=5,
                               byzantine=2, attack="invert"))
    g = np.array(doc["grad"])
    rho = norm.cdf(np.abs(g) / 1.5)
    expected = 0.0
    for i in range(g.size):
        p_right = [1 - rho[i]] * 2 + [rho[i]] * 3
        up = sum(np.prod([p if o else 1 - p for p, o in zip(p_right, outcome, strict=True)])
                 for outcome in itertools.product((True, False), repeat=5) if sum(outcome) >= 3)
        expected += (2 * up - 1) * abs(g[i])
    assert doc["workers_differ"] and doc["rho_M_norm"] == pytest.approx(expected, rel=1e-10)
    assert doc["rho_norm"] == pytest.approx(np.sum((2 * rho - 1) * np.abs(g)))  # the oracle, before attacks


def _cfg_opts(at="init", estimator=None, samples=None, **options):
    cfg = config.resolve(options)
    extra = {k: v for k, v in (("estimator", estimator), ("samples", samples)) if v is not None}
    return cfg, SpbOptions.build(at=at, workers_given="workers" in options, **extra)


# --------------------------------------------------------------------------------------------------------------
# vote trap


@pytest.mark.parametrize("x", [-0.9, -0.5, 0.0, 0.5, 0.99, 1.5])
@pytest.mark.parametrize("M", [3, 6])
def test_vote_trap_inner_product_with_the_vote(x, M):
    lam = 6.0
    doc = check_spb(*_cfg_opts(problem="vote-trap", x0=x, workers=M))
    local = [lam * (x + 1) if m % 3 == 2 else x - 1 for m in range(M)]
    g = (2 * (x - 1) + lam * (x + 1)) / 3
    vote = np.sign(np.sum(np.sign(local)))
    assert doc["method_of_estimate"] == "closed-form" and doc["sampling"]["scheme"] == "local"
    assert doc["rho_M_norm"] == pytest.approx(vote * np.sign(g) * abs(g), abs=1e-12)
    if x == 0.5 and M == 3:
        assert doc["rho_M_norm"] == pytest.approx(-8 / 3)


@pytest.mark.parametrize(("policy", "expected"), [("zero", 4.0), ("plus", 4.0), ("random", 2.0)])
def test_vote_trap_zero_messages_by_enumeration(policy, expected):
    """At x = 1 two local gradients are exactly 0 (g = 4): zero sends (0, 0, +) and the vote is +1; plus sends
    (+, +, +); random sends fair signs, so the sum is > 0 with probability 3/4: E<g, vote> = 4 (3/4 - 1/4)."""
    doc = check_spb(*_cfg_opts(problem="vote-trap", x0=1.0, workers=3, sign_zero=policy))
    assert doc["rho_M_norm"] == pytest.approx(expected, abs=1e-12)


# --------------------------------------------------------------------------------------------------------------
# split-batch


def test_split_batch_exact_rho_and_sigma_by_enumeration(unequal):
    cfg, p, model, params = setup(problem="logistic", data=unequal, split="split-batch", test_fraction=0.0,
                                  standardize=False, l2=0.1)
    A, y, groups = data_of(p)
    assert sorted(len(gr) for gr in groups) == [9, 21]
    w = np.array([0.3, -0.7, 0.2, 0.1])[: p.dim]
    G = logistic_grads(A, y, w, 0.1)
    g = G.mean(axis=0)
    est = estimate(p, model, params, w, 1, "exact", 0, 0.95, "wilson", "random", 0, cfg.workers)
    assert est.laws.sampling.scheme == "split-batch"
    # the oracle: a group with probability 1/2, then one of its rows uniformly
    rho = sum(0.5 * np.mean(np.sign(G[gr]) == np.sign(g), axis=0) for gr in groups)
    mean = sum(0.5 * G[gr].mean(axis=0) for gr in groups)
    second = sum(0.5 * (G[gr] ** 2).mean(axis=0) for gr in groups)
    np.testing.assert_allclose(est.rho, rho, atol=1e-12)
    np.testing.assert_allclose(est.sigma, np.sqrt(second - mean**2), rtol=1e-9)
    uniform = np.mean(np.sign(G) == np.sign(g), axis=0)
    assert np.max(np.abs(uniform - rho)) > 0.01  # what uniform sampling over all rows would have said
    # tau = 2: enumerate every pair within a group
    pair_means = [(G[gr][:, None, :] + G[gr][None, :, :]).reshape(-1, p.dim) / 2 for gr in groups]
    rho2 = sum(0.5 * np.mean(np.sign(pm) == np.sign(g), axis=0) for pm in pair_means)
    var2 = sum(0.5 * np.mean(pm**2, axis=0) for pm in pair_means) - mean**2
    S = 20000
    mc = estimate(p, model, params, w, 2, "monte-carlo", S, 0.95, "wilson", "random", 3, cfg.workers)
    np.testing.assert_allclose(mc.sigma, np.sqrt(second - mean**2), rtol=1e-9)  # single-sample, not tau Var
    np.testing.assert_allclose(mc.sigma_minibatch, np.sqrt(var2), rtol=1e-9)
    assert np.all(np.abs(mc.rho - rho2) <= 5 * np.sqrt(rho2 * (1 - rho2) / S) + 1e-12)


def test_split_batch_on_breast_cancer_matches_the_issue():
    doc = check_spb(*_cfg_opts(problem="logistic", split="split-batch"))
    assert doc["sampling"]["scheme"] == "split-batch" and doc["method_of_estimate"] == "exact"
    assert doc["rho"][-1] == pytest.approx(0.5)  # the intercept: each half all on one side
    assert doc["rho_norm"] == pytest.approx(4.007, abs=5e-4)


# --------------------------------------------------------------------------------------------------------------
# shards: per-worker rho, the Poisson-binomial vote against simulated votes


@pytest.mark.parametrize(("M", "tie"), [(3, "random"), (4, "random"), (4, "zero")])
def test_sorted_split_per_worker_rho_and_simulated_votes(unequal, M, tie):
    cfg, opts = _cfg_opts(problem="logistic", data=unequal, split="sorted", workers=M, tie=tie, test_fraction=0.0,
                          standardize=False, l2=0.05, x0=0.2)
    doc = check_spb(cfg, opts)
    p = problems.build(cfg)
    A, y, groups = data_of(p)
    w = np.full(p.dim, 0.2)
    G = logistic_grads(A, y, w, 0.05)
    g = G.mean(axis=0)
    np.testing.assert_allclose(doc["grad"], g, atol=1e-12)
    per_worker = np.array([np.mean(np.sign(G[gr]) == np.sign(g), axis=0) for gr in groups])
    np.testing.assert_allclose(doc["rho_workers"], per_worker, atol=1e-12)
    np.testing.assert_allclose(doc["rho"], per_worker.mean(axis=0), atol=1e-12)
    rng = np.random.default_rng(11)
    T = 40000
    signs = np.stack([np.sign(G[gr][rng.integers(0, len(gr), T)]) for gr in groups])  # M x T x d
    total = signs.sum(axis=0)
    coin = np.where(rng.random(total.shape) < 0.5, 1.0, -1.0)
    vote = np.where(total != 0, np.sign(total), coin if tie == "random" else 0.0)
    inner = (vote * np.sign(g)) @ np.abs(g)
    se = inner.std(ddof=1) / np.sqrt(T)
    assert abs(doc["rho_M_norm"] - inner.mean()) < 5 * se
    # and it is not the identical-worker formula of the pooled rho
    from signsim.diagnostics import spb

    assert abs(doc["rho_M_norm"] - spb.rho_M_norm(g, np.array(doc["rho"]), M)) > 10 * se


# --------------------------------------------------------------------------------------------------------------
# zeros


@pytest.fixture(scope="module")
def sparse(tmp_path_factory):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 5)) * (rng.random((40, 5)) < 0.4)  # 60% exact zeros
    X[:, 0] = rng.normal(size=40)
    y = rng.normal(size=40)
    path = tmp_path_factory.mktemp("sparse") / "sparse.npz"
    np.savez(path, X=X, y=y)
    return str(path)


@pytest.mark.parametrize("policy", ["random", "plus", "zero"])
def test_zero_messages_by_enumeration(sparse, policy):
    options = dict(problem="least-squares", data=sparse, test_fraction=0.0, standardize=False, intercept=False,
                   sign_zero=policy, x0=0.3)
    doc = check_spb(*_cfg_opts(**options))
    p = problems.build(config.resolve(options))
    A, y, _ = data_of(p)
    w = np.full(p.dim, 0.3)
    G = least_squares_grads(A, y, w)
    g = G.mean(axis=0)
    assert np.mean(G == 0) > 0.4
    margin = np.array([[message_mean(G[j, i], policy, g[i]) for i in range(p.dim)] for j in range(len(G))]).mean(0)
    assert doc["rho_norm"] == pytest.approx(margin @ np.abs(g), abs=1e-12)
    assert doc["rho_norm_low"] == doc["rho_norm_high"] == doc["rho_norm"]  # exact: no interval
    np.testing.assert_allclose(doc["p_zero"], np.mean(G == 0, axis=0), atol=1e-12)
    np.testing.assert_allclose(doc["p_agree"], np.mean(np.sign(G) == np.sign(g), axis=0), atol=1e-12)
    np.testing.assert_allclose(doc["p_disagree"], np.mean(np.sign(G) == -np.sign(g), axis=0), atol=1e-12)
    expected = np.where(margin > 0, "holds", "violated")
    assert doc["status"] == expected.tolist()
    # Monte Carlo on the same oracle, zeros and all. The estimator counts a zero draw in expectation (no coin),
    # so one draw contributes X = E[<g, message> | row], whose variance over the rows is known by enumeration
    S = 20000
    mc = check_spb(*_cfg_opts(estimator="monte-carlo", samples=S, **options))
    cond = np.array([[message_mean(G[j, i], policy, g[i]) for i in range(p.dim)] for j in range(len(G))]) @ np.abs(g)
    se = np.sqrt(cond.var() / S)
    assert se > 0 and abs(mc["rho_norm"] - doc["rho_norm"]) < 5 * se
    if policy == "zero":  # a zero message counts neither way; 'random' gives the same expectation
        assert doc["rho_norm"] == pytest.approx(check_spb(*_cfg_opts(**{**options, "sign_zero": "random"}))
                                                ["rho_norm"], abs=1e-12)


def test_mlp_zero_policy_counts_agreement_not_failures():
    doc = check_spb(*_cfg_opts(problem="mlp", batch_size=1, sign_zero="zero"))
    assert doc["rho_norm"] == pytest.approx(3.554, abs=1e-3)
    assert doc["n_violated"] == 604


# --------------------------------------------------------------------------------------------------------------
# heterogeneity


@pytest.mark.parametrize("split", ["iid", "sorted", "label-skew:0.3"])
def test_zeta_squared_against_per_shard_gradients(unequal, split):
    options = dict(problem="logistic", data=unequal, split=split, workers=4, test_fraction=0.0, standardize=False,
                   l2=0.02, x0=-0.1)
    cfg = config.resolve(options)
    doc = diversity(cfg, DiversityOptions.build())
    p = problems.build(cfg)
    A, y, groups = data_of(p)
    G = logistic_grads(A, y, np.full(p.dim, -0.1), 0.02)
    g = G.mean(axis=0)
    bias = np.array([np.linalg.norm(G[gr].mean(axis=0) - g) for gr in groups])
    h = doc["heterogeneity"]
    np.testing.assert_allclose(h["bias"], bias, rtol=1e-9)
    assert h["zeta_sq"] == pytest.approx(np.mean(bias**2), rel=1e-9) and not h["unbiased"]


def test_split_batch_oracle_bias_and_shared_is_unbiased(unequal):
    base = dict(problem="logistic", data=unequal, test_fraction=0.0, standardize=False, x0=0.4)
    sb = diversity(config.resolve({**base, "split": "split-batch"}), DiversityOptions.build())["heterogeneity"]
    p = problems.build(config.resolve({**base, "split": "split-batch"}))
    A, y, groups = data_of(p)
    G = logistic_grads(A, y, np.full(p.dim, 0.4), 0.0)
    expected = np.linalg.norm(0.5 * G[groups[0]].mean(0) + 0.5 * G[groups[1]].mean(0) - G.mean(0))
    assert sb["oracle_bias"] == pytest.approx(expected, rel=1e-9) and expected > 0.01
    shared = diversity(config.resolve(base), DiversityOptions.build())["heterogeneity"]
    assert shared["unbiased"] and shared["zeta_sq"] == 0.0


@pytest.mark.parametrize(("split", "warns"), [("shared", False), ("iid", True), ("split-batch", True)])
def test_ssdm_warns_whenever_a_worker_is_biased(cli, split, warns):
    doc = cli("run", "--method", "ssdm", "--problem", "logistic", "--split", split, "--workers", "4", "--iters", "3",
              "--json").json()
    warning = [w for w in doc["warnings"] if w.startswith("ssdm")]
    assert bool(warning) == warns
    if warns:
        assert f"{doc['heterogeneity']['max_bias']:.4g}" in warning[0] and "1905.12938v6" in warning[0]


# --------------------------------------------------------------------------------------------------------------
# labels and tracks


@pytest.mark.parametrize(("noise_spec", "is_bound"), [("gaussian:1", True), ("laplace:1", True),
                                                      ("skewed:1", False), ("bimodal:1", False)])
def test_l12_is_labelled_a_bound_only_under_its_assumptions(noise_spec, is_bound):
    doc = check_spb(*_cfg_opts(problem="quadratic", dim=5, kappa=2.0, x0=0.2, noise=noise_spec))
    assert doc["l12_is_bound"] == is_bound
    if is_bound:
        assert doc["l12_norm"] <= doc["rho_norm"] + 1e-12


def test_skewed_noise_l12_exceeds_the_rho_norm_and_is_not_called_a_bound(cli):
    r = cli("check-spb", "--problem", "quadratic", "--dim", "5", "--kappa", "1", "--x0", "0.2", "--noise", "skewed:1")
    assert "not a bound" in r.err and "l^{1,2} lower bound" not in r.err


def test_track_spb_follows_the_workers(cli):
    track = cli("run", "--problem", "vote-trap", "--method", "signsgd", "--iters", "4", "--track-spb", "2", "--x0",
                "0.5", "--json").json()["tracks"]["spb"]
    assert track[0]["rho_M_norm"] == pytest.approx(-8 / 3) and track[0]["sampling"] == "local"
    assert track[0]["workers_rho_norm"] == pytest.approx([-8 / 3, -8 / 3, 8 / 3])  # signs (-, -, +), g = 8/3
    assert track[0]["workers_rho_min"] == [0.0, 0.0, 1.0]
    assert all(math.isfinite(t["rho_norm"]) for t in track)


@pytest.mark.parametrize("options", [
    dict(problem="logistic", split="split-batch", noise="gaussian:0.3", batch_size=3),
    dict(problem="logistic", split="sorted", workers=3, noise="laplace:0.2", batch_size=2),
    dict(problem="vote-trap", noise="uniform:1", workers=3),
    dict(problem="rosenbrock", dim=4, oracle="term", noise="none", batch_size=2),
])
def test_monte_carlo_kernel_equals_its_numpy_reference(options):
    from signsim.diagnostics.estimators import monte_carlo_worker_counts_ref, sampling
    from signsim.diagnostics.kernels import monte_carlo_worker_counts
    from signsim.seeding import diagnostic_streams

    cfg, p, model, params = setup(**options)
    x = np.ascontiguousarray(p.x0 + 0.05, dtype=np.float64)
    W = sampling(p, cfg.workers).distinct
    from numba.typed import List

    got = monte_carlo_worker_counts(p, x, model.code, params, cfg.batch_size, W, List(diagnostic_streams(5, 4)), 37)
    ref = monte_carlo_worker_counts_ref(p, model, params, x, cfg.batch_size, W, diagnostic_streams(5, 4), 37)
    for a, b in zip(got, ref, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@given(st.integers(1, 40), st.integers(1, 6), st.integers(0, 2**32 - 1), st.booleans())
def test_vote_kernel_equals_its_numpy_reference(M, d, seed, with_zeros):
    rng = np.random.default_rng(seed)
    raw = rng.dirichlet(np.ones(3), size=(M, d))
    if not with_zeros:
        raw[..., 1] = 0.0
        raw /= raw.sum(axis=-1, keepdims=True)
    law = Law(raw[..., 0].copy(), raw[..., 1].copy(), raw[..., 2].copy())
    dist = votes.sum_law_kernel(law.plus, law.zero, law.minus)
    np.testing.assert_allclose(dist, votes.sum_law_ref(law), atol=1e-13)
    np.testing.assert_allclose(dist.sum(axis=1), 1.0, atol=1e-12)
    # E[sum] = sum_m (p+ - p-): the law's first moment
    np.testing.assert_allclose(dist @ np.arange(-M, M + 1), (law.plus - law.minus).sum(axis=0), atol=1e-10)


def test_bound_majority_table_identical_and_differing_workers():
    from signsim.commands.bound import BoundOptions, bound
    from signsim.diagnostics import spb

    cfg = config.resolve(dict(problem="quadratic", dim=6, kappa=5.0, noise="gaussian:2", method="signsgd"))
    doc = bound(cfg, BoundOptions())
    mt = doc["majority_table"]
    assert not mt["workers_differ"] and len(mt["rows"]) == 64
    from scipy.stats import norm

    p = problems.build(cfg)
    g = p.L * p.x0
    rho = norm.cdf(np.abs(g) / 2)
    for r in mt["rows"]:
        assert r["ratio"] == pytest.approx(spb.rho_M_norm(g, rho, r["M"]) / np.abs(g).sum(), rel=1e-10)
    trap = bound(config.resolve(dict(problem="vote-trap", x0=0.5, method="signsgd")), BoundOptions())
    rows = trap["majority_table"]["rows"]
    assert trap["majority_table"]["workers_differ"] and len(rows) == 1 and rows[0]["ratio"] == pytest.approx(-1.0)


def test_the_heterogeneity_at_x0_can_be_skipped(monkeypatch):
    """--no-heterogeneity: nothing is measured (the measurement is never called), the run is the same, and SSDM gets
    the general warning instead of the measured one."""
    import signsim
    from signsim.diagnostics import heterogeneity

    common = dict(problem="logistic", split="iid", workers=4, iters=5, seed=2)
    measured = signsim.run(**common, method="ssdm").to_dict()

    def refuse(*a, **k):
        raise AssertionError("measured although --no-heterogeneity")

    monkeypatch.setattr(heterogeneity, "measure", refuse)
    skipped = signsim.run(**common, method="ssdm", heterogeneity=False).to_dict()
    assert "heterogeneity" in measured and "heterogeneity" not in skipped
    assert skipped["x_final"] == measured["x_final"] and skipped["config"]["heterogeneity"] is False
    assert any("withdrawn in the correction" in w for w in skipped["warnings"])
