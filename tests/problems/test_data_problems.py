"""Data problems: gradients against finite differences, per-sample quantities against materialized ones,
the logistic loss against scikit-learn, kernels against NumPy, and an accuracy check on digits."""

import numpy as np
import pytest
from scipy.optimize import approx_fprime
from sklearn.metrics import log_loss

from signsim import problems
from signsim.engine import dispatch
from signsim.interface import config
from signsim.problems import glm, mlp

from ..conftest import run_engine
from ..engine.test_methods import replay


@pytest.fixture(scope="module")
def small_data(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 5))
    y = (X @ rng.normal(size=5) + 0.5 * rng.normal(size=40) > 0).astype(float) + 2 * (X[:, 0] > 1)
    path = tmp_path_factory.mktemp("data") / "small.npz"
    np.savez(path, X=X, y=y)
    return str(path)


def build(data, **options):
    return problems.build(config.resolve({"data": data, **options}))


PROBLEMS = [
    {"problem": "logistic", "positive_class": 1.0, "l2": 0.1},
    {"problem": "least-squares", "l2": 0.05},
    {"problem": "mlp", "hidden": 4, "activation": "tanh", "l2": 0.01},
    {"problem": "mlp", "hidden": 4, "activation": "relu"},
]


def kernels(p):
    """The dispatchers the loops call for ``p``: the copies of its family (compiling the dispatchers of
    ``engine/dispatch.py`` themselves would compile every family's kernels)."""
    family = dispatch.family_of(p.code)

    class Kernels:  # each compiled when first asked for (``dispatch.compiled``: once per process)
        def __getitem__(self, name):
            return dispatch.compiled(name, family)

    return Kernels()


def kernel_loss_grad(p, x):
    g = np.zeros(p.dim)
    kernels(p)["problem_grad"](p.code, x, p.pf, p.pi, p.A, p.b, g)
    return kernels(p)["problem_loss"](p.code, x, p.pf, p.pi, p.A, p.b), g


@pytest.mark.parametrize("options", PROBLEMS)
def test_gradient_and_loss_against_finite_differences_and_numpy(small_data, options):
    p = build(small_data, **options)
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.normal(size=p.dim) * 0.5
        f, g = kernel_loss_grad(p, x)
        assert f == pytest.approx(p.loss_ref(x), rel=1e-10)
        np.testing.assert_allclose(g, p.grad_ref(x), rtol=1e-9, atol=1e-12)
        fd = approx_fprime(x, p.loss_ref, 1e-6)
        np.testing.assert_allclose(g, fd, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("options", PROBLEMS)
def test_per_sample_gradients_and_squared_norms(small_data, options):
    p = build(small_data, **options)
    fs = p.finite_sum
    x = np.random.default_rng(2).normal(size=p.dim) * 0.5
    rows = np.arange(fs.n)
    G = fs.per_sample_grads(x, rows)
    assert G.shape == (fs.n, p.dim)
    np.testing.assert_allclose(G.mean(axis=0), kernel_loss_grad(p, x)[1], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fs.per_sample_sq_norms(x), np.sum(G * G, axis=1), rtol=1e-9, atol=1e-12)
    # one sample's gradient against central differences of that sample's loss
    j = 3
    np.testing.assert_allclose(G[j], approx_fprime(x, lambda w: _sample_loss(p, w, j), 1e-6), rtol=1e-4, atol=1e-6)


def _sample_loss(p, w, row):
    """The loss of one training sample, from the problem's NumPy loss on a one-row data set."""
    pi = p.pi.copy()
    pi[1], pi[2] = 1, 0
    A, b = p.A[row: row + 1], p.b[row: row + 1]
    if p.name == "mlp":
        return mlp.loss_ref(w, p.pf, pi, A, b)
    return glm.loss_ref(w, p.pf, pi, A, b)


def test_logistic_loss_equals_sklearn_log_loss(small_data):
    p = build(small_data, problem="logistic", positive_class=1.0, l2=0.0)
    n = p.finite_sum.n
    for seed in range(3):
        w = np.random.default_rng(seed).normal(size=p.dim)
        prob = 1 / (1 + np.exp(-(p.A[:n] @ w)))
        y01 = (p.b[:n] > 0).astype(int)
        assert kernel_loss_grad(p, w)[0] == pytest.approx(log_loss(y01, prob, labels=[0, 1]), rel=1e-10)


def test_multiclass_logistic_needs_positive_class(small_data):
    from signsim.errors import InputError

    with pytest.raises(InputError, match="--positive-class"):
        build(small_data, problem="logistic")
    with pytest.raises(InputError, match="--positive-class 7"):
        build(small_data, problem="logistic", positive_class=7.0)


@pytest.mark.parametrize("split", ["shared", "iid", "sorted", "label-skew:0.5", "split-batch"])
@pytest.mark.parametrize("options", PROBLEMS[:3])
def test_data_runs_replay_in_numpy(small_data, split, options):
    engine, xs = replay(5, method="ssdm", data=small_data, workers=4, batch_size=3, split=split, **options)
    np.testing.assert_allclose(engine.x, xs[-1], rtol=1e-10, atol=1e-12)


def test_replicate_and_standardize(small_data):
    p1 = build(small_data, problem="least-squares", test_fraction=0.25)
    p3 = build(small_data, problem="least-squares", test_fraction=0.25, replicate=3)
    assert p3.finite_sum.n == 3 * p1.finite_sum.n
    n = p1.finite_sum.n
    x = np.random.default_rng(0).normal(size=p1.dim)
    assert kernel_loss_grad(p3, x)[0] == pytest.approx(kernel_loss_grad(p1, x)[0])  # same objective
    X = p1.A[:n, :-1]
    np.testing.assert_allclose(X.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(X.std(axis=0), 1, atol=1e-12)
    np.testing.assert_array_equal(p1.A[:, -1], 1.0)  # intercept
    raw = build(small_data, problem="least-squares", standardize=False, intercept=False)
    assert raw.dim == 5


def test_ssdm_reaches_90_percent_on_digits_mlp():
    out = run_engine(problem="mlp", data="builtin:digits", method="ssdm", workers=8, iters=2000, seed=0)
    assert out.status == "ok"
    test_acc = out.history[-1, 7]
    assert test_acc >= 0.90


@pytest.mark.slow  # the digits MLP for 800 iterations of two methods (20 s on 2 cores); .ci/run runs it
def test_digits_comparison_config_runs_and_compares(cli):
    r = cli("run", "--config", "configs/paper/digits-mlp.toml", "--json")
    assert r.code == 0, r.err
    doc = r.json()
    rows = doc["comparison"]["rows"]
    assert [row["method"] for row in rows] == ["signum", "sgd"]
    # equal communication by construction: 800 x 1 bit == 25 x 32 bits
    assert rows[0]["megabytes"] == pytest.approx(rows[1]["megabytes"])
    assert all(row["test_acc_at_budget"] > 0.9 for row in rows)
    human = cli("run", "--config", "configs/paper/digits-mlp.toml", "--iters", "20")
    assert "equal communication" in human.err and human.code == 0


@pytest.fixture(scope="module")
def large_data(tmp_path_factory):
    """Large enough (n d >= glm.PARALLEL_WORK) for the full-data passes to run in row chunks on all threads."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(2000, 700))
    y = (X @ rng.normal(size=700) + rng.normal(size=2000) > 0).astype(float)
    path = tmp_path_factory.mktemp("data") / "large.npz"
    np.savez(path, X=X, y=y)
    return str(path)


@pytest.mark.parametrize("options", PROBLEMS[:3])
def test_chunked_full_data_passes_equal_numpy_on_any_thread_count(large_data, options):
    import numba

    p = build(large_data, test_fraction=0.2, **options)
    n = p.finite_sum.n
    assert glm._chunks(n, p.dim) > 1
    x = np.random.default_rng(1).normal(size=p.dim) * 0.05
    f, g = kernel_loss_grad(p, x)
    assert f == pytest.approx(p.loss_ref(x), rel=1e-10)
    np.testing.assert_allclose(g, p.grad_ref(x), rtol=1e-9, atol=1e-12)
    both = np.zeros(p.dim)
    assert kernels(p)["problem_loss_grad"](p.code, x, p.pf, p.pi, p.A, p.b, both) == f
    np.testing.assert_array_equal(both, g)
    if p.name == "logistic":
        for test, rows in ((False, slice(0, n)), (True, slice(n, None))):
            expect = np.mean(np.where(p.A[rows] @ x >= 0, 1.0, -1.0) == p.b[rows])
            assert kernels(p)["problem_accuracy"](p.code, x, p.pf, p.pi, p.A, p.b, test) == pytest.approx(expect)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = np.zeros(p.dim)
        f1 = kernels(p)["problem_loss_grad"](p.code, x, p.pf, p.pi, p.A, p.b, one)
    finally:
        numba.set_num_threads(before)
    assert f1 == f
    np.testing.assert_array_equal(one, g)


@pytest.mark.slow  # 8 s of NumPy replay on 2 cores; .ci/run runs it
def test_large_data_run_replays_in_numpy(large_data):
    """The engine's records call the chunked passes from inside its parallel loop (M d tau is large enough for
    the parallel loop over workers)."""
    engine, xs = replay(3, method="signum", data=large_data, workers=8, batch_size=16, split="iid",
                        problem="logistic", test_fraction=0.2)
    np.testing.assert_allclose(engine.x, xs[-1], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("options", PROBLEMS)
def test_one_pass_evaluation_equals_the_separate_passes(small_data, large_data, size, options):
    """A history row's loss, gradient and training accuracy come from one pass over the rows
    (``problem_evaluate``); the same operations in the same order as the separate passes, so equal exactly,
    in one chunk (small) and in row chunks on all threads (large)."""
    p = build(small_data if size == "small" else large_data, test_fraction=0.2, **options)
    assert (glm._chunks(p.finite_sum.n, p.dim) > 1) == (size == "large")
    x = np.random.default_rng(2).normal(size=p.dim) * 0.05
    f, g = kernel_loss_grad(p, x)
    out = np.zeros(p.dim)
    loss, acc = kernels(p)["problem_evaluate"](p.code, x, p.pf, p.pi, p.A, p.b, out)
    assert loss == f
    np.testing.assert_array_equal(out, g)
    separate = kernels(p)["problem_accuracy"](p.code, x, p.pf, p.pi, p.A, p.b, False)
    if np.isnan(separate):  # least squares has no accuracy
        assert np.isnan(acc) and p.name == "least-squares"
    else:
        assert acc == separate and 0.0 < acc < 1.0


def test_one_pass_evaluation_of_an_analytic_problem():
    from signsim.problems import rosenbrock

    p = problems.build(config.resolve({"problem": "rosenbrock", "dim": 4}))
    x = np.array([0.5, -1.0, 2.0, 0.0])
    out = np.zeros(4)
    loss, acc = kernels(p)["problem_evaluate"](p.code, x, p.pf, p.pi, p.A, p.b, out)
    assert loss == rosenbrock.loss_ref(x) and np.isnan(acc)
    np.testing.assert_allclose(out, rosenbrock.grad_ref(x), rtol=1e-14)
