"""The generated GLM data source: moments of the features, the planted model, determinism, bad specs."""

import numpy as np
import pytest

from signsim.data import load, synthetic
from signsim.errors import InputError


@pytest.mark.parametrize("features", synthetic.FEATURES)
def test_features_have_mean_zero_and_unit_variance(features):
    n, d = 20000, 5
    X, _, _ = synthetic.generate(synthetic.parse(f"synthetic:glm:n={n}:d={d}:features={features}:seed=1"))
    se = 1 / np.sqrt(n)  # standard error of a mean of unit-variance entries
    assert np.all(np.abs(X.mean(axis=0)) < 5 * se)
    # Var of X^2 is 2 (gaussian), 0 (rademacher), 0.8 (uniform): 5 standard errors of the variance estimate
    assert np.all(np.abs(X.var(axis=0) - 1) < 5 * np.sqrt(2 / n) + 1e-12)
    if features == "rademacher":
        assert set(np.unique(X)) == {-1.0, 1.0}
    if features == "uniform":
        assert np.abs(X).max() <= np.sqrt(3)


def test_logistic_labels_follow_the_planted_model():
    X, y, w = synthetic.generate(synthetic.parse("synthetic:glm:n=40000:d=4:seed=2"))
    p = 1 / (1 + np.exp(-(X @ w)))
    assert set(np.unique(y)) <= {0.0, 1.0}
    # E[y - p] = 0, with standard error sqrt(E p(1-p) / n)
    assert abs(np.mean(y - p)) < 5 * np.sqrt(np.mean(p * (1 - p)) / len(y))
    assert abs(np.var(X @ w) - 1) < 0.1 + 2 * np.sum(w**2)  # <w, a> has variance ||w||^2, E||w||^2 = 1


def test_linear_labels_residuals_have_the_stated_noise():
    X, y, w = synthetic.generate(synthetic.parse("synthetic:glm:n=20000:d=3:labels=linear:noise=0.5:seed=3"))
    r = y - X @ w
    assert abs(r.std() - 0.5) < 5 * 0.5 / np.sqrt(2 * len(r))


def test_same_spec_same_data_and_seed_changes_it():
    a = load("synthetic:glm:n=50:d=3:seed=4")
    b = load("synthetic:glm:n=50:d=3:seed=4")
    c = load("synthetic:glm:n=50:d=3:seed=5")
    assert np.array_equal(a.X, b.X) and np.array_equal(a.y, b.y)
    assert not np.array_equal(a.X, c.X)
    assert load("synthetic:glm").X.shape == (1000, 50)


@pytest.mark.parametrize("spec", ["synthetic:glm:n=0", "synthetic:glm:d=x", "synthetic:glm:features=cauchy",
                                  "synthetic:glm:labels=poisson", "synthetic:glm:n=3:n=4", "synthetic:glm:size=3",
                                  "synthetic:glm:noise=-1", "synthetic:glm:n=100000000:d=1000", "synthetic:other",
                                  "synthetic:glm:"])
def test_bad_specs_name_the_data_option(spec):
    with pytest.raises(InputError, match="--data synthetic:"):
        load(spec)
