"""Success probabilities, SPB verdicts and rho-norms (docs/theory.md §1) against independent oracles."""

import numpy as np
import pytest
from scipy.special import betainc
from scipy.stats import binomtest, norm

from signsim import noise, problems
from signsim.commands.check_spb import SpbOptions, check_spb
from signsim.diagnostics import spb
from signsim.diagnostics.estimators import estimate
from signsim.diagnostics.intervals import bonferroni, clopper_pearson, holm, one_sided_pvalues, wilson
from signsim.interface import config

from ..cli.test_cli import assert_one_line_error


def setup(**options):
    cfg = config.resolve(options)
    model, params = noise.parse(cfg.noise or "none")
    return cfg, problems.build(cfg), model, params


def test_intervals_match_scipy_binomtest():
    k = np.array([0, 1, 17, 250, 499, 500])
    for conf in (0.9, 0.99):
        lo, hi = wilson(k, 500, conf)
        clo, chi = clopper_pearson(k, 500, conf)
        for i, ki in enumerate(k):
            w = binomtest(int(ki), 500).proportion_ci(conf, method="wilson")
            e = binomtest(int(ki), 500).proportion_ci(conf, method="exact")
            assert (lo[i], hi[i]) == pytest.approx((w.low, w.high), abs=1e-10)
            assert (clo[i], chi[i]) == pytest.approx((e.low, e.high), abs=1e-10)
    ph, pv = one_sided_pvalues(np.array([260]), 500)
    assert ph[0] == pytest.approx(binomtest(260, 500, 0.5, alternative="greater").pvalue)
    assert pv[0] == pytest.approx(binomtest(260, 500, 0.5, alternative="less").pvalue)


def test_holm_against_its_step_down_definition():
    rng = np.random.default_rng(0)
    p = rng.uniform(0, 0.1, 30)
    alpha = 0.05
    # brute force: reject in ascending order while p_(k) <= alpha / (m - k + 1)
    order = np.argsort(p)
    rejected = np.zeros(p.size, bool)
    for rank, i in enumerate(order):
        if p[i] > alpha / (p.size - rank):
            break
        rejected[i] = True
    np.testing.assert_array_equal(holm(p) <= alpha, rejected)
    np.testing.assert_allclose(bonferroni(p), np.minimum(1, 30 * p))


def test_closed_form_gaussian_is_covered_by_monte_carlo_intervals():
    """Over d coordinates the Wilson intervals at confidence c must cover the closed-form rho at rate ~c."""
    d, S, conf = 600, 400, 0.9
    cfg, p, model, params = setup(problem="quadratic", dim=d, kappa=30.0, noise="gaussian:2", batch_size=3)
    x = p.x0 * np.linspace(-1, 1, d)
    exact = estimate(p, model, params, x, 3, "closed-form", S, conf, "wilson", "random", 0, 1)
    np.testing.assert_allclose(exact.rho, norm.cdf(np.sqrt(3) * np.abs(p.L * x) / 2))
    mc = estimate(p, model, params, x, 3, "monte-carlo", S, conf, "wilson", "random", 0, 1)
    covered = np.mean((mc.rho_low <= exact.rho) & (exact.rho <= mc.rho_high))
    assert covered >= conf - 5 * np.sqrt(conf * (1 - conf) / d)
    np.testing.assert_allclose(mc.sigma, 2.0, rtol=5 * np.sqrt(2 / S))  # per-sample sigma, sqrt(tau) undone


def test_exact_estimator_equals_brute_force_over_per_sample_gradients():
    cfg, p, model, params = setup(problem="logistic", l2=0.01)
    x = np.random.default_rng(1).normal(size=p.dim) * 0.1
    est = estimate(p, model, params, x, 1, "exact", 0, 0.95, "wilson", "random", 0, 1)
    G = p.finite_sum.per_sample_grads(x, np.arange(p.finite_sum.n))
    g = G.mean(axis=0)
    brute = np.mean(np.sign(G) == np.sign(g), axis=0) + 0.5 * np.mean(G == 0, axis=0)
    np.testing.assert_allclose(est.rho, brute, atol=1e-12)
    np.testing.assert_allclose(est.sigma, G.std(axis=0), rtol=1e-9)


@pytest.mark.parametrize("M", [1, 2, 3, 4, 7, 8, 15])
def test_rho_M_against_simulated_majority_votes(M):
    rng = np.random.default_rng(M)
    d, trials = 50, 20000
    rho = rng.uniform(0.5, 0.9, d)
    g = rng.normal(size=d)
    right = rng.random((trials, M, d)) < rho  # each worker's sign is right w.p. rho_i
    total = np.where(right, 1, -1).sum(axis=1)
    vote = np.where(total == 0, np.where(rng.random((trials, d)) < 0.5, 1, -1), np.sign(total))
    simulated = np.sum(np.mean(vote, axis=0) * np.abs(g))  # E<vote, sign g> weighted = rho_M-norm
    se = np.sqrt(np.sum(np.var(vote, axis=0) * g**2) / trials)
    assert abs(spb.rho_M_norm(g, rho, M) - simulated) < 5 * se + 1e-12
    assert spb.majority_lower_bound(g, rho, M) <= spb.rho_M_norm(g, rho, M) <= np.abs(g).sum() + 1e-12


def test_even_workers_gain_nothing_and_noise_falls_exponentially():
    rng = np.random.default_rng(3)
    g, rho = rng.normal(size=20), rng.uniform(0.55, 0.8, 20)
    for l in range(1, 10):
        assert spb.rho_M_norm(g, rho, 2 * l - 1) == pytest.approx(spb.rho_M_norm(g, rho, 2 * l))
    assert np.allclose(spb.majority_success(rho, 5), betainc(3, 3, rho))
    Ms = (1, 9, 33, 65)
    gaps = [np.abs(g).sum() - spb.rho_M_norm(g, rho, M) for M in Ms]
    assert all(a > b for a, b in zip(gaps, gaps[1:], strict=False))
    for M, gap in zip(Ms, gaps, strict=True):  # ||g||_1 - ||g||_rho_M <= exp(-(2 rho - 1)^2 l) ||g||_1
        assert gap <= np.exp(-((2 * rho.min() - 1) ** 2) * ((M + 1) // 2)) * np.abs(g).sum()


def test_stochastic_sign_identity():
    g = np.random.default_rng(4).normal(size=30)
    rho = 0.5 + np.abs(g) / (2 * np.linalg.norm(g))
    assert spb.rho_norm(g, rho) == pytest.approx(np.linalg.norm(g))


def run_check(at="init", **options):
    extra = {k: options.pop(k) for k in ("samples", "estimator", "confidence", "correction") if k in options}
    cfg, *_ = setup(**options)
    return check_spb(cfg, SpbOptions.build(at=at, **extra))


def test_skewed_noise_violates_spb_at_tau_1_and_holds_at_large_tau():
    # g_i = 0.2 < sigma (1 - ln 2) = 0.307: rho = exp(0.2 - 1) < 1/2
    small = run_check(problem="quadratic", dim=5, kappa=1.0, x0=0.2, noise="skewed:1", batch_size=1)
    assert small["method_of_estimate"] == "closed-form" and small["verdict"] == "violated"
    np.testing.assert_allclose(small["rho"], np.exp(0.2 - 1))
    large = run_check(problem="quadratic", dim=5, kappa=1.0, x0=0.2, noise="skewed:1", batch_size=200, samples=2000)
    assert large["method_of_estimate"] == "monte-carlo" and large["verdict"] == "holds"


def test_sign_trap_on_its_line_is_not_holds():
    doc = run_check(problem="sign-trap", samples=4000)
    assert doc["method_of_estimate"] == "monte-carlo"
    assert doc["verdict"] != "holds"
    np.testing.assert_allclose(doc["rho"], 0.5, atol=5 * np.sqrt(0.25 / 4000))


def test_holm_makes_a_marginal_uncorrected_pass_inconclusive():
    d, S = 50, 400
    k = np.full(d, 223.0)  # one-sided p ~ 0.013 each: every uncorrected 95% test rejects rho <= 1/2
    g = np.ones(d)
    lo, hi = wilson(k, S, 0.95)
    est = spb.Estimate("monte-carlo", g, k / S, lo, hi, np.ones(d), 1, S, k)
    assert spb.decide(est, 0.95, "none").verdict == "holds"
    assert spb.decide(est, 0.95, "holm").verdict == "inconclusive"
    assert spb.decide(est, 0.95, "bonferroni").verdict == "inconclusive"


def test_check_spb_cli_default_and_json_fields(cli):
    r = cli("check-spb", "--json")
    assert r.code == 1  # logistic on breast cancer at w = 0: two coordinates have rho < 1/2
    doc = r.json()
    for key in ("rho", "rho_low", "rho_high", "grad", "rho_norm", "l1_norm", "l2_norm", "verdict",
                "method_of_estimate"):
        assert key in doc
    assert doc["method_of_estimate"] == "exact" and doc["problem"]["name"] == "logistic"
    assert doc["verdict"] == "violated" and "rho_M_norm" not in doc
    assert doc["rho_norm"] <= doc["l1_norm"]
    human = cli("check-spb")
    assert "verdict" in human.err and "worst" in human.err and human.code == 1
    ok = cli("check-spb", "--problem", "quadratic", "--noise", "gaussian:10", "--workers", "5", "--json")
    assert ok.code == 0 and ok.json()["verdict"] == "holds" and ok.json()["rho_M_norm"] > ok.json()["rho_norm"]


def test_check_spb_points(cli, tmp_path):
    x = tmp_path / "x.npy"
    np.save(x, np.full(10, 0.5))
    at_file = cli("check-spb", "--problem", "quadratic", "--at", x, "--json").json()
    assert at_file["point"] == str(x)
    after = cli("check-spb", "--problem", "quadratic", "--at", "run:50", "--method", "signsgd", "--json").json()
    assert after["l1_norm"] < cli("check-spb", "--problem", "quadratic", "--json").json()["l1_norm"]
    opt = cli("check-spb", "--problem", "quadratic", "--at", "optimum", "--json")
    assert opt.json()["zero_coordinates"] == 10 and opt.json()["verdict"] == "holds"  # nothing to violate


@pytest.mark.parametrize(("args", "words"), [
    (("--at", "nowhere"), ("--at",)),
    (("--at", "run:x"), ("--at", "run:")),
    (("--at", "missing.npy"), ("--at", "no such file")),
    (("--problem", "rosenbrock", "--estimator", "exact"), ("--estimator exact",)),
    (("--estimator", "bayes"), ("--estimator",)),
    (("--samples", "1"), ("--samples",)),
    (("--confidence", "1.5"), ("--confidence",)),
    (("--correction", "fdr"), ("--correction",)),
    (("--problem", "logistic", "--at", "optimum"), ("--at optimum",)),
])
def test_check_spb_bad_input(cli, args, words):
    assert_one_line_error(cli("check-spb", *args), *words)


def test_wrong_length_point_file(cli, tmp_path):
    x = tmp_path / "short.npy"
    np.save(x, np.ones(3))
    assert_one_line_error(cli("check-spb", "--at", x), "--at", "length 31")


def test_run_tracks_spb(cli):
    doc = cli("run", "--problem", "quadratic", "--method", "signsgd", "--iters", "40", "--track-spb", "10",
              "--json").json()
    track = doc["tracks"]["spb"]
    assert [t["iter"] for t in track] == [0, 10, 20, 30, 40]
    assert all(t["method_of_estimate"] == "closed-form" for t in track)
    assert all(t["rho_norm"] <= t["l1_norm"] + 1e-12 for t in track)
    mc = cli("run", "--problem", "sign-trap", "--method", "ef-signsgd", "--iters", "20", "--track-spb", "10",
             "--json").json()["tracks"]["spb"]
    assert [t["method_of_estimate"] for t in mc] == ["monte-carlo"] * 3


def test_gsnr_is_g_squared_over_sigma_squared(cli):
    """Cockpit's per-coordinate GSNR g_i^2 / sigma_i^2 beside c_i = sigma_i^2 / g_i^2 (their product is 1)."""
    r = cli("check-spb", "--problem", "quadratic", "--dim", "6", "--noise", "gaussian:2", "--noise-scales", "first:3",
            "--json")
    doc = r.json()
    g, s = np.array(doc["grad"]), np.array(doc["sigma"])
    np.testing.assert_allclose(s, [2, 2, 2, 0, 0, 0])
    assert doc["sufficient"]["gsnr"][3:] == [None] * 3  # infinite (sigma_i = 0): JSON null
    gsnr = np.array(doc["sufficient"]["gsnr"][:3], dtype=float)
    np.testing.assert_allclose(gsnr, g[:3] ** 2 / 4)
    np.testing.assert_allclose(gsnr[:3] * np.array(doc["sufficient"]["c"][:3], dtype=float), 1.0)
