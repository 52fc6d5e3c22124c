"""Noise without a finite variance (docs/theory.md §10.1): one rule, ``noise.base.no_variance``, decides it from the
noise model, and every sigma-based number follows it at every batch size and estimator: check-spb's sigma,
sigma_minibatch, c, GSNR, the sufficient conditions and the l^{1,2} quantity are null with ``sigma_note``;
diversity's tr Sigma, B_simple and B_S are null (the two-batch estimator would subtract infinity from infinity);
bound's sigma bounds do not apply. Estimates outside their range (a negative two-batch trace) carry a warning.
Noise with a finite variance keeps its numbers."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from signsim import noise
from signsim.commands.check_spb import SpbOptions, check_spb
from signsim.commands.diversity import DiversityOptions, diversity
from signsim.diagnostics.diversity import Diversity
from signsim.interface.config import resolve
from signsim.noise.base import no_variance, sigma_vector

HEAVY = ["student-t:1.5:1", "student-t:2:0.5", "cauchy:1", "stable:1.5:1", "stable:1.9:0.3"]
FINITE = ["gaussian:1", "student-t:2.5:1", "stable:2:1", "laplace:1", "uniform:1", "skewed:1", "bimodal:1"]
SIGMA_FIELDS = ("unimodal_bound", "c", "gsnr", "tau_condition", "variance_bound", "cantelli")

nus = st.floats(min_value=1.01, max_value=2.0, allow_nan=False)
alphas = st.floats(min_value=1.01, max_value=1.99, allow_nan=False)


def heavy_specs():
    return st.one_of(nus.map(lambda v: f"student-t:{v!r}:1"), alphas.map(lambda a: f"stable:{a!r}:0.7"),
                     st.just("cauchy:0.5"))


@pytest.mark.parametrize("spec", HEAVY)
def test_the_rule_names_each_heavy_tailed_model(spec):
    model, p = noise.parse(spec)
    why = no_variance(model, p)
    assert why is not None and "no finite variance" in why and model.name in why
    assert np.all(np.isinf(sigma_vector(model, p, 4)))


@pytest.mark.parametrize("spec", FINITE + ["none"])
def test_the_rule_passes_finite_variance(spec):
    model, p = noise.parse(spec)
    assert no_variance(model, p) is None
    assert np.all(np.isfinite(sigma_vector(model, p, 4)))


@given(nu=st.floats(min_value=2.0001, max_value=50, allow_nan=False))
def test_student_t_has_a_variance_exactly_above_two(nu):
    model, p = noise.parse(f"student-t:{nu!r}:1")
    assert no_variance(model, p) is None
    # the variance of sigma sqrt((nu-2)/nu) T_nu is sigma^2
    assert sigma_vector(model, p, 1)[0] == pytest.approx(1.0)


def test_no_noise_at_all_has_a_variance():
    """A zero scale, or per-coordinate scales that are all 0, leave no noise: sigma = 0, not infinite."""
    model, p = noise.parse("cauchy:0")
    assert no_variance(model, p) is None and np.all(sigma_vector(model, p, 3) == 0)
    model, p = noise.parse("stable:1.5:1")
    zero = noise.with_scales(p, np.zeros(3))
    assert no_variance(model, zero) is None and np.all(sigma_vector(model, zero, 3) == 0)
    some = noise.with_scales(p, np.array([0.0, 1.0, 0.0]))
    assert no_variance(model, some) is not None
    np.testing.assert_array_equal(sigma_vector(model, some, 3), [0, np.inf, 0])


def _spb(spec: str, tau: int, estimator: str = "auto", samples: int = 200, **extra):
    cfg = resolve({"problem": "quadratic", "dim": 4, "kappa": 10, "x0": 0.3, "noise": spec, "batch_size": tau,
                   **extra})
    return check_spb(cfg, SpbOptions.build(estimator=estimator, samples=samples))


def _assert_no_sigma(doc):
    assert "no finite variance" in doc["sigma_note"]
    assert doc["sigma"] is None and doc["sigma_minibatch"] is None
    assert doc["l12_norm"] is None and doc["l12_is_bound"] is False and doc["l12_note"] == doc["sigma_note"]
    for k in SIGMA_FIELDS:
        assert doc["sufficient"][k] is None, k
    assert doc["rho_norm"] is not None and doc["verdict"] in ("holds", "inconclusive")  # sign numbers stay


@pytest.mark.parametrize("spec", HEAVY)
@pytest.mark.parametrize("tau", [1, 4])
@pytest.mark.parametrize("estimator", ["auto", "monte-carlo"])
def test_check_spb_has_no_sigma_at_any_tau_and_estimator(spec, tau, estimator):
    _assert_no_sigma(_spb(spec, tau, estimator))


@settings(max_examples=12)
@given(spec=heavy_specs(), tau=st.integers(1, 6))
def test_check_spb_has_no_sigma_for_any_heavy_tail(spec, tau):
    _assert_no_sigma(_spb(spec, tau, "monte-carlo", samples=50))


def test_the_issue_command_json_and_table(cli):
    """The command of issue 24: it used to report finite sigma (moving with --samples) and l12_is_bound true."""
    args = ["check-spb", "--problem", "quadratic", "--dim", "10", "--kappa", "10", "--x0", "0.3", "--noise",
            "student-t:1.5:1", "--batch-size", "4", "--samples", "400"]
    r = cli(*args, "--json")
    assert r.code == 0, r.err
    _assert_no_sigma(r.json())
    r = cli(*args)
    assert r.code == 0, r.err
    text = " ".join(r.err.split())
    assert "no finite variance" in text and "l^{1,2} lower bound" not in text
    assert "(not a bound here)" in text and " inf " not in text


def test_finite_variance_keeps_its_sigma():
    """Gaussian sigma 2 at tau 4: closed form sigma_i = 2, minibatch 1; Student-t nu = 3 by Monte Carlo near 1."""
    doc = _spb("gaussian:2", 4)
    assert doc["sigma_note"] is None and doc["l12_is_bound"] is True
    np.testing.assert_allclose(doc["sigma"], 2.0)
    np.testing.assert_allclose(doc["sigma_minibatch"], 1.0)
    g = np.asarray(doc["grad"])
    np.testing.assert_allclose(doc["sufficient"]["c"], 4.0 / g**2)
    np.testing.assert_allclose(doc["l12_norm"], np.sum(g**2 / (np.abs(g) + math.sqrt(3) * 1.0)))
    doc = _spb("student-t:3:1", 4, samples=4000)
    assert doc["method_of_estimate"] == "monte-carlo" and doc["sigma_note"] is None
    # the sample std of a mean of 4 draws of std 1, times 2: within 25% at S = 4000 (heavy fourth moment)
    np.testing.assert_allclose(doc["sigma"], 1.0, rtol=0.25)


def _div(spec: str, estimator: str = "auto", problem: str = "rosenbrock", **extra):
    cfg = resolve({"problem": problem, "noise": spec, **extra})
    return diversity(cfg, DiversityOptions.build(estimator=estimator, pairs=200))


def _assert_no_trace(doc):
    assert "no finite variance" in doc["sigma_note"]
    for k in ("trace_sigma", "B_simple", "B_S", "inv_B_S", "delta_S", "largest_batch"):
        assert doc[k] is None, k
    assert doc["speedup"] == [] and doc["stationary"] is False


@pytest.mark.parametrize("spec", HEAVY)
def test_two_batch_diversity_refuses_infinity_minus_infinity(spec):
    doc = _div(spec, oracle="term")
    assert doc["method_of_estimate"] == "two-batch"
    _assert_no_trace(doc)
    assert doc["grad_sq"] is None and doc["two_batch"]["mean_sq_small"] is None


@pytest.mark.parametrize("spec", HEAVY)
def test_population_diversity_has_no_trace(spec):
    doc = _div(spec)
    assert doc["method_of_estimate"] == "population"
    _assert_no_trace(doc)
    assert doc["grad_sq"] == pytest.approx(36.0)  # ||grad f(0)||^2 of Rosenbrock: exact, no noise in it


@settings(max_examples=8)
@given(spec=heavy_specs())
def test_diversity_has_no_trace_for_any_heavy_tail(spec):
    _assert_no_trace(_div(spec, "two-batch", problem="quadratic", dim=3))


def test_the_issue_diversity_command_json_and_table(cli):
    """signsim diversity --problem rosenbrock --oracle term --noise cauchy:1 reported trace_sigma -1.63e6."""
    args = ["diversity", "--problem", "rosenbrock", "--oracle", "term", "--noise", "cauchy:1", "--pairs", "200"]
    r = cli(*args, "--json")
    assert r.code == 0, r.err
    _assert_no_trace(r.json())
    r = cli(*args)
    assert r.code == 0, r.err
    text = " ".join(r.err.split())
    assert "no finite variance" in text and "predicted speedup B B_S" not in text


def test_data_problem_with_heavy_noise_has_no_trace_or_sigma(cli):
    """A data oracle plus Cauchy noise: the two-batch estimator and Monte Carlo sigma both used to give numbers."""
    r = cli("diversity", "--problem", "logistic", "--noise", "cauchy:1", "--pairs", "50", "--json")
    assert r.code == 0, r.err
    _assert_no_trace(r.json())
    r = cli("check-spb", "--problem", "logistic", "--noise", "stable:1.5:1", "--samples", "50", "--json")
    assert r.code in (0, 1), r.err
    doc = r.json()
    assert "no finite variance" in doc["sigma_note"] and doc["sigma"] is None


def test_bound_on_data_with_heavy_noise_and_an_override(cli):
    """The sigma estimated on a data problem follows the same rule; a sigma the user gives is used."""
    r = cli("bound", "--problem", "logistic", "--noise", "cauchy:1", "--json")
    assert r.code == 0, r.err
    doc = r.json()
    b = {x["key"]: x for x in doc["bounds"]}
    assert b["bernstein"]["at_K"] is None and "no finite variance" in b["bernstein"]["note"]
    c = {x["name"]: x for x in doc["constants"]}
    assert c["sigma1"]["value"] is None and "no finite variance" in c["sigma1"]["source"]
    r = cli("bound", "--problem", "logistic", "--noise", "cauchy:1", "--constant", "sigma1=2", "--json")
    b = {x["key"]: x for x in r.json()["bounds"]}
    assert b["bernstein"]["at_K"] is not None and b["ssdm"]["at_K"] is None


def test_out_of_range_estimates_warn():
    assert Diversity(None, None, 4.0, 1.0).out_of_range() == []
    w = Diversity(None, None, 4.0, -1.0).out_of_range()
    assert len(w) == 1 and "tr(Sigma) is negative" in w[0]
    w = Diversity(None, None, -4.0, 1.0).out_of_range()
    assert len(w) == 1 and "||G||^2 is negative" in w[0]


def test_a_negative_two_batch_trace_is_printed_with_a_warning(cli):
    """Finite variance, small noise, two pairs: the trace estimate comes out negative by chance (seed 3); the
    JSON carries the warning, stderr prints it, the table shows it."""
    args = ["diversity", "--problem", "quadratic", "--dim", "10", "--noise", "gaussian:0.1", "--estimator",
            "two-batch", "--pairs", "2", "--seed", "3"]
    r = cli(*args, "--json")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["trace_sigma"] < 0
    assert len(doc["warnings"]) == 1 and "negative" in doc["warnings"][0]
    assert "warning: the estimate of tr(Sigma) is negative" in r.err
    r = cli(*args)
    assert "warning: the estimate of tr(Sigma) is negative" in " ".join(r.err.split())


def test_a_negative_squared_norm_reports_no_ratio():
    from signsim.diagnostics.diversity_report import summary

    doc = summary(Diversity(None, None, -2.0, 5.0), 1.0)
    assert doc["B_S"] is None and doc["B_simple"] is None and doc["speedup"] == []
    assert doc["grad_sq"] == -2.0 and any("||G||^2 is negative" in w for w in doc["warnings"])


def test_bound_with_a_split_batch_split(cli):
    """The split-batch minibatch sigma of bound's constants (it called noise_variance without the dimension)."""
    r = cli("bound", "--problem", "logistic", "--split", "split-batch", "--json")
    assert r.code == 0, r.err
    c = {x["name"]: x for x in r.json()["constants"]}
    assert c["sigma_total"]["value"] > 0 and "split-batch" in c["sigma_total"]["source"]
