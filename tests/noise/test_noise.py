"""Noise models: moments, CDFs against samples (Kolmogorov-Smirnov), kernel draws equal to NumPy draws."""

import numpy as np
import pytest
from numba import njit
from scipy import stats

from signsim import noise
from signsim.engine import dispatch

SPECS = ["gaussian:0.7", "laplace:0.7", "uniform:0.7", "student-t:5:0.7", "student-t:3:0.7", "bimodal:0.7",
         "skewed:0.7"]
#: infinite variance: the second parameter is a scale (docs/theory.md §10.1)
HEAVY = ["student-t:1.5:0.7", "cauchy:0.7", "stable:1.5:0.7", "stable:1.1:2", "stable:2:0.7"]
N = 200_000


@njit
def _kernel_samples(problems, code, p, gen, n):
    out = np.empty(n)
    for i in range(n):
        out[i] = dispatch.noise_draw(problems, code, gen, p)
    return out


def kernel_samples(code, p, gen, n):
    """n draws of the noise model ``code`` by the loop's draw (every model's, as the family's one loop draws)."""
    return _kernel_samples(dispatch.Problems("analytic"), code, p, gen, n)


def test_every_registered_model_is_tested():
    assert {spec.split(":")[0] for spec in SPECS + HEAVY} | {"none"} == set(noise.registry())


def test_each_module_is_the_one_the_engine_dispatches_to_and_its_code_names_it():
    """``noise.MODULES`` names the modules ``engine/dispatch.py`` imports, each model's code is its module's CODE
    (the one ``noise_draw`` branches on), codes are distinct, and ``module_of`` finds the module by its code."""
    models = noise.modules()
    assert list(models) == list(noise.MODULES)
    assert len({m.code for m in models.values()}) == len(models)
    for module, model in models.items():
        assert getattr(dispatch, module).CODE == model.code
        assert noise.module_of(model.code) == module
        assert noise.registry()[model.name] is model
    with pytest.raises(ValueError, match="unknown noise code 99"):
        noise.module_of(99)


@pytest.mark.parametrize("spec", SPECS + HEAVY)
def test_kernel_draws_equal_numpy_draws(spec):
    model, p = noise.parse(spec)
    a = kernel_samples(model.code, p, np.random.default_rng(5), 1000)
    b = model.sample(np.random.default_rng(5), 1000, p)
    np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("spec", SPECS)
def test_mean_zero_and_std_sigma(spec):
    model, p = noise.parse(spec)
    sigma = p[0]
    x = model.sample(np.random.default_rng(11), N, p)
    # mean: 5 standard errors
    assert abs(x.mean()) < 5 * sigma / np.sqrt(N)
    if spec.startswith("student-t:3"):
        return  # infinite fourth moment: the sample variance has no usable standard error
    # variance: 5 standard errors of the sample variance, sqrt((mu4 - sigma^4) / n), mu4 from the sample
    mu4 = np.mean(x**4)
    assert abs(x.var() - sigma**2) < 5 * np.sqrt((mu4 - sigma**4) / N)


def cdf_at(model, p, x):
    """The model's CDF at the samples ``x``. scipy's alpha-stable CDF integrates numerically at every point (8 s
    for 20,000 points), so for it: exactly at 2,001 of the samples' quantiles, linearly between (a CDF is monotone,
    so the error is at most the 1/2000 of probability between two of them, a tenth of the Kolmogorov-Smirnov test's
    critical distance at 20,000 samples and level 1e-3, 1.95/sqrt(20,000) = 0.014; measured: 1.4e-5). The test
    still tells stable:1.5:0.7 from stable:1.3:0.7 (p = 8e-7) and from stable:1.5:0.75 (p = 2e-5)."""
    if model.name != "stable":
        return model.cdf(x, p)
    grid = np.unique(np.quantile(x, np.linspace(0.0, 1.0, 2001)))
    return np.interp(x, grid, model.cdf(grid, p))


@pytest.mark.parametrize("spec", SPECS + HEAVY)
def test_cdf_matches_samples(spec):
    model, p = noise.parse(spec)
    x = model.sample(np.random.default_rng(13), 20_000, p)
    result = stats.kstest(x, lambda z: cdf_at(model, p, z))
    assert result.pvalue > 1e-3


def test_cdf_of_known_points():
    _, p = noise.parse("gaussian:2")
    assert noise.registry()["gaussian"].cdf(np.array([2.0]), p)[0] == pytest.approx(stats.norm.cdf(1.0))
    sk, p = noise.parse("skewed:1")
    assert sk.cdf(np.array([-1.0]), p)[0] == pytest.approx(0.0)
    assert sk.cdf(np.array([0.0]), p)[0] == pytest.approx(1 - np.exp(-1))


def test_skewed_noise_violates_spb_for_small_positive_gradients():
    """rho = exp(g/sigma - 1) < 1/2 for 0 < g < sigma (1 - ln 2) (module docstring)."""
    model, p = noise.parse("skewed:1")
    rho = model.success_probability(np.array([0.1, -0.1, 0.5]), p)
    assert rho[0] == pytest.approx(np.exp(0.1 - 1))
    assert rho[0] < 0.5 and rho[1] > 0.5 and rho[2] > 0.5


@pytest.mark.parametrize("spec", ["gaussian:2", "laplace:x", "student-t:1:1", "student-t:0.5:1", "student-t:1",
                                  "nosuch:1", "gaussian:-1", "gaussian:nan", "bimodal", "cauchy:-1", "stable:1:1",
                                  "stable:2.5:1", "stable:1.5"])
def test_bad_specs_are_rejected(spec):
    from signsim.errors import InputError

    if spec == "gaussian:2":
        noise.parse(spec)
        return
    with pytest.raises(InputError, match="--noise"):
        noise.parse(spec)


@pytest.mark.parametrize("spec,alpha", [("student-t:1.5:0.7", 1.5), ("cauchy:0.7", 1.0), ("stable:1.5:0.7", 1.5)])
def test_heavy_tails_have_the_stated_tail_index(spec, alpha):
    """P(|xi| > t) ~ C t^-alpha: the Hill estimate of the tail index over the top 1% of 200,000 draws lies within
    5 of its standard errors (alpha / sqrt(k)) of alpha; the variance parameter is infinite."""
    model, p = noise.parse(spec)
    assert np.isinf(p[0])
    x = np.sort(np.abs(model.sample(np.random.default_rng(17), N, p)))[::-1]
    k = N // 100
    hill = 1.0 / np.mean(np.log(x[:k] / x[k]))
    assert abs(hill - alpha) < 5 * alpha / np.sqrt(k) + 0.1 * alpha  # second-order bias of Hill at 1%


@pytest.mark.parametrize("spec,tau", [("cauchy:0.7", 4), ("stable:1.5:0.7", 3), ("gaussian:0.7", 5)])
def test_mean_of_tau_draws_has_the_closed_form_law(spec, tau):
    """The mean of tau draws follows mean_params' distribution (Kolmogorov-Smirnov, level 1e-3)."""
    model, p = noise.parse(spec)
    x = model.sample(np.random.default_rng(19), (20_000, tau), p).mean(axis=1)
    mp = model.mean_params(p, tau)
    assert stats.kstest(x, lambda z: cdf_at(model, mp, z)).pvalue > 1e-3
