"""Generated sparse data (docs/theory.md §6.2) and the lower-bound construction (§6.3): the generator's sparsity and
conflict degree exactly, diversity against brute force and against the bound, the lower bound's closed form
against enumeration of every minibatch."""

import itertools

import numpy as np
import pytest

from signsim import problems
from signsim.commands.lower_bound import predicted_iterations, q_factor
from signsim.data import load, sparse
from signsim.diagnostics.diversity_estimators import exact
from signsim.errors import InputError
from signsim.interface import config


def conflict_degrees(X):
    support = (X != 0).astype(int)
    shared = support @ support.T > 0
    np.fill_diagonal(shared, False)
    return shared.sum(axis=1)


@pytest.mark.parametrize(("n", "s", "c", "d", "values"), [
    (24, 3, 0, None, "gaussian"), (24, 3, 3, None, "ones"), (24, 2, 5, 40, "gaussian"), (30, 1, 29, None, "ones"),
    (12, 4, 2, None, "gaussian"),
])
def test_sparsity_and_conflict_degree_are_exact(n, s, c, d, values):
    spec = f"synthetic:sparse:n={n}:s={s}:conflict={c}:values={values}:seed=7" + (f":d={d}" if d else "")
    X, y, w, group = sparse.generate(sparse.parse(spec))
    assert X.shape == (n, d or s * n // (c + 1))
    assert np.all((X != 0).sum(axis=1) == s)
    assert np.all(conflict_degrees(X) == c)
    assert np.all(np.bincount(group) == c + 1)
    np.testing.assert_array_equal(y, X @ w)  # noise 0
    if values == "ones":
        assert set(np.unique(X)) <= {0.0, 1.0}
    same = load(spec)
    np.testing.assert_array_equal(same.X, X)
    other = load(spec.replace("seed=7", "seed=8"))
    assert not (np.array_equal(other.X, X) and np.array_equal(other.y, y))


@pytest.mark.parametrize(("spec", "needle"), [
    ("synthetic:sparse:n=10:conflict=2", "conflict + 1 = 3 must divide n = 10"),
    ("synthetic:sparse:n=8:s=2:conflict=1:d=7", "d=7 is below s n / (conflict + 1) = 8"),
    ("synthetic:sparse:n=8:conflict=8", "conflict=8 must be below n=8"),
    ("synthetic:sparse:values=two", "values=two; choose from gaussian, ones"),
    ("synthetic:sparse:n=4:n=5", "'n' is given twice"),
    ("synthetic:sparse:k=1", "'k=1' is not KEY=VALUE"),
    ("synthetic:sparse:n=100000:s=10000", "at most"),
])
def test_bad_specs(spec, needle):
    with pytest.raises(InputError) as e:
        load(spec)
    assert needle in str(e.value) and "\n" not in str(e.value) and spec in str(e.value)


def build(spec, problem="least-squares", **options):
    return problems.build(config.resolve({"problem": problem, "data": spec, "standardize": False, "intercept": False,
                                          "test_fraction": 0.0, **options}))


def brute_force_B_S(X, y, x, problem):
    """n sum_j ||g_j||^2 / ||sum_j g_j||^2 from materialized per-sample gradients (NumPy only)."""
    m = X @ x
    if problem == "logistic":
        t = np.where(y == y.max(), 1.0, -1.0)
        c = -t / (1.0 + np.exp(t * m))
    else:
        c = m - y
    G = c[:, None] * X
    return len(y) * np.sum(G * G) / np.sum(G.sum(axis=0) ** 2)


@pytest.mark.parametrize("problem", ["least-squares", "logistic"])
@pytest.mark.parametrize(("c", "values"), [(0, "gaussian"), (3, "gaussian"), (5, "ones"), (11, "gaussian")])
def test_diversity_against_brute_force_and_the_bound(problem, c, values):
    labels = "logistic" if problem == "logistic" else "linear"
    spec = f"synthetic:sparse:n=24:s=3:conflict={c}:values={values}:labels={labels}:noise=0.5:seed=1"
    p = build(spec, problem)
    X, y, _, _ = sparse.generate(sparse.parse(spec))
    rng = np.random.default_rng(0)
    for x in [np.zeros(p.dim)] + [rng.normal(size=p.dim) for _ in range(3)]:
        B_S = exact(p, x)[0].B_S
        assert B_S == pytest.approx(brute_force_B_S(X, y, x, problem), rel=1e-10)
        assert B_S >= 24 / (c + 1) * (1 - 1e-12)


@pytest.mark.parametrize("c", [0, 1, 3, 11])
def test_identical_groups_meet_the_bound(c):
    p = build(f"synthetic:sparse:n=24:s=2:conflict={c}:values=ones:seed=2")
    x = np.random.default_rng(1).normal(size=p.dim)
    assert exact(p, x)[0].B_S == pytest.approx(24 / (c + 1), rel=1e-12)


def test_dense_preparation_breaks_sparsity():
    """Standardizing centres the features: every sample then conflicts with every other (why the configs turn it
    off)."""
    p = problems.build(config.resolve({"problem": "least-squares", "data": "synthetic:sparse:n=12:s=2:conflict=2",
                                       "test_fraction": 0.0}))
    assert np.all(conflict_degrees(p.A[:12]) == 11)


@pytest.mark.parametrize(("n", "c", "s", "B", "gamma"), [
    (4, 1, 1, 1, 1.0), (4, 1, 1, 2, 0.7), (6, 1, 1, 3, 1.3), (6, 2, 2, 2, 0.4), (4, 0, 1, 3, 0.9),
])
def test_lower_bound_closed_form_against_every_minibatch(n, c, s, B, gamma):
    """E f(x_1) over all n^B minibatches (with replacement) of one SGD step from x_0 = 0 equals q f(x_0)."""
    X, y, _, _ = sparse.generate(sparse.parse(f"synthetic:sparse:n={n}:s={s}:conflict={c}:values=ones:seed=3"))
    K = n // (c + 1)

    def f(x):
        return 0.5 * np.mean((X @ x - y) ** 2)

    x0 = np.zeros(X.shape[1])
    total = 0.0
    for batch in itertools.product(range(n), repeat=B):
        rows = list(batch)
        g = ((X[rows] @ x0 - y[rows])[:, None] * X[rows]).mean(axis=0)
        total += f(x0 - gamma * g)
    assert total / n**B == pytest.approx(q_factor(gamma, B, K, s) * f(x0), rel=1e-12)


def test_lower_bound_optimal_step_and_prediction():
    K, s = 16, 2
    for B in (1, 4, 16, 64):
        g_opt = B * K / (s * (K - 1 + B))
        grid = np.linspace(0.5 * g_opt, 1.5 * g_opt, 201)
        assert min(grid, key=lambda g: q_factor(g, B, K, s)) == pytest.approx(g_opt, rel=1e-2)
        assert q_factor(g_opt, B, K, s) == pytest.approx((K - 1) / (K - 1 + B))
    assert predicted_iterations(1.0 / s * 2, 1, K, s, 1e-3) is None  # q = 1: never
    # K = 2, s = 1, B = 1, gamma = 1/2: q = 1 - 1/2 + 1/4 * 2/4 = 5/8, and 0.625^3 = 0.244 <= 1/4 < 0.625^2
    assert predicted_iterations(0.5, 1, 2, 1, 0.25) == 3
    # issue 50: a step of 1e300 (lr-factors = [1e300]) raised OverflowError; its q is inf, never reached
    assert q_factor(1e300, 1, K, s) == float("inf") and predicted_iterations(1e300, 1, K, s, 1e-3) is None


def test_engine_one_step_matches_the_closed_form_in_mean():
    """The engine's f(x_1) / f(x_0) over 300 seeds against q, within 4 standard errors."""
    import signsim

    spec = "synthetic:sparse:n=8:s=1:conflict=3:values=ones:seed=4"
    opts = dict(problem="least-squares", data=spec, standardize=False, intercept=False, test_fraction=0.0,
                method="sgd", workers=1, batch_size=2, lr=0.8, iters=1, eval_every=1, x0=0.0)
    ratios = []
    for seed in range(300):
        h = signsim.run(seed=seed, **opts).history["loss"]
        ratios.append(h[1] / h[0])
    ratios = np.array(ratios)
    se = ratios.std(ddof=1) / np.sqrt(len(ratios))
    assert abs(ratios.mean() - q_factor(0.8, 2, 2, 1)) < 4 * se


def test_experiments_from_configs(tmp_path, cli):
    toml = tmp_path / "c.toml"
    toml.write_text('problem = "least-squares"\n[experiment]\nkind = "conflicts"\nconflicts = [0, 3]\nsamples = 16\n'
                    's = 2\nseeds = 1\n')
    r = cli("diversity", "--config", str(toml), "--json", "--out", str(tmp_path / "c.json"))
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["bound_holds"] and [row["conflict"] for row in doc["rows"]] == [0, 3, 0, 3]
    ones = [row for row in doc["rows"] if row["values"] == "ones"]
    assert [row["B_S"] for row in ones] == pytest.approx([16, 4])
    assert cli("plot", str(tmp_path / "c.json"), "--out", str(tmp_path / "c.png")).code == 0
    toml.write_text(toml.read_text().replace("least-squares", "quadratic"))
    r = cli("diversity", "--config", str(toml))
    assert r.code == 2 and "needs problem" in r.err and r.err.count("\n") == 1

    lb = tmp_path / "lb.toml"
    lb.write_text('problem = "least-squares"\ndata = "synthetic:sparse:n=64:s=1:conflict=7:values=ones"\n'
                  'standardize = false\nintercept = false\ntest-fraction = 0.0\nx0 = 0.0\nmethod = "sgd"\n'
                  'workers = 1\nlr = 1.0\n[experiment]\nkind = "lower-bound"\nbatch-sizes = [1, 8, 64]\nseeds = 2\n'
                  'lr-factors = [1.0]\ntarget-ratio = 0.01\n')
    r = cli("diversity", "--config", str(lb), "--json", "--out", str(tmp_path / "lb.json"))
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["B_S"] == pytest.approx(8) and doc["groups"] == 8
    assert [row["B"] for row in doc["rows"]] == [1, 8, 64]
    assert all(row["best_iters"] is not None for row in doc["rows"])
    assert cli("plot", str(tmp_path / "lb.json"), "--out", str(tmp_path / "lb.png")).code == 0
    lb.write_text(lb.read_text().replace("values=ones", "values=gaussian"))
    r = cli("diversity", "--config", str(lb))
    assert r.code == 2 and "values=ones" in r.err and r.err.count("\n") == 1
