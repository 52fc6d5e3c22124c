"""The test loss (docs/theory.md §5): the data problems' kernels, a run's history, results.csv and the plot
axis against a plain NumPy computation on the held-out rows (no signsim code in the oracle)."""

import json

import numpy as np
import pytest
from scipy.special import log_softmax

import signsim
from signsim import problems
from signsim.engine import dispatch
from signsim.interface import config
from signsim.problems import glm, mlp
from signsim.problems.sampling import P_NTEST, P_NTRAIN


@pytest.fixture(scope="module")
def small_data(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 5))
    y = (X @ rng.normal(size=5) + 0.5 * rng.normal(size=50) > 0).astype(float) + 2 * (X[:, 0] > 1)
    path = tmp_path_factory.mktemp("data") / "small.npz"
    np.savez(path, X=X, y=y)
    return str(path)


PROBLEMS = [
    {"problem": "logistic", "positive_class": 1.0, "l2": 0.1},
    {"problem": "least-squares", "l2": 0.05},
    {"problem": "least-squares"},
    {"problem": "mlp", "hidden": 4, "activation": "tanh", "l2": 0.01},
    {"problem": "mlp", "hidden": 3, "activation": "relu"},
]


def numpy_test_loss(options, A, b, n, x):
    """The loss on rows n.. of A, from the formulas of docs/theory.md §5 (plain NumPy)."""
    lam = options.get("l2", 0.0)
    X, y = A[n:], b[n:]
    if options["problem"] == "logistic":
        data = np.mean(np.logaddexp(0.0, -y * (X @ x)))
    elif options["problem"] == "least-squares":
        data = np.mean(0.5 * (X @ x - y) ** 2)
    else:
        H, p = options["hidden"], X.shape[1]
        C = (x.size - H * p - H) // (H + 1)
        W1, b1 = x[: H * p].reshape(H, p), x[H * p: H * p + H]
        W2, b2 = x[H * p + H: H * p + H + C * H].reshape(C, H), x[H * p + H + C * H:]
        z = X @ W1.T + b1
        h = np.tanh(z) if options["activation"] == "tanh" else np.maximum(z, 0.0)
        data = -np.mean(log_softmax(h @ W2.T + b2, axis=1)[np.arange(len(y)), y.astype(int)])
    return data + 0.5 * lam * x @ x


@pytest.mark.parametrize("options", PROBLEMS)
def test_kernel_against_numpy(small_data, options):
    p = problems.build(config.resolve({"data": small_data, "test_fraction": 0.3, **options}))
    n, m = int(p.pi[P_NTRAIN]), int(p.pi[P_NTEST])
    assert m == 15 and p.A.shape[0] == n + m
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.normal(size=p.dim)
        kernels = {n: dispatch.compiled(n, dispatch.family_of(p.code)) for n in ("problem_test_loss", "problem_loss")}
        got = kernels["problem_test_loss"](p.code, x, p.pf, p.pi, p.A, p.b)
        assert got == pytest.approx(numpy_test_loss(options, p.A, p.b, n, x), rel=1e-12)
        # and not the training loss
        assert got != pytest.approx(kernels["problem_loss"](p.code, x, p.pf, p.pi, p.A, p.b), rel=1e-6)


def test_chunked_kernels_on_a_large_held_out_set():
    """n_test * d above glm.PARALLEL_WORK: the chunked (threaded) pass, against NumPy."""
    rng = np.random.default_rng(2)
    n, m, d = 7, 33_000, 40
    A = rng.normal(size=(n + m, d))
    pi = np.array([0, n, m, d, 0, glm.LOGISTIC])  # sampling.P_*: mode, n, n_test, features, no flipped labels
    assert glm._chunks(m, d) > 1
    b = np.where(rng.random(n + m) < 0.5, -1.0, 1.0)
    x = rng.normal(size=d) * 0.3
    pf = np.array([0.2])
    want = numpy_test_loss({"problem": "logistic", "l2": 0.2}, A, b, n, x)
    assert glm.test_loss(x, pf, pi, A, b) == pytest.approx(want, rel=1e-12)
    H, C = 4, 3
    dim = H * d + H + C * H + C
    assert glm._chunks(m, dim) > 1
    pi = np.array([0, n, m, d, 0, H, C, mlp.TANH])
    x = rng.normal(size=dim) * 0.3
    labels = rng.integers(0, C, n + m).astype(float)
    want = numpy_test_loss({"problem": "mlp", "hidden": H, "activation": "tanh", "l2": 0.2}, A, labels, n, x)
    assert mlp.test_loss(x, pf, pi, A, labels) == pytest.approx(want, rel=1e-12)


def test_no_held_out_rows_is_nan():
    A = np.ones((4, 2))
    assert np.isnan(glm.test_loss(np.zeros(2), np.zeros(1), np.array([0, 4, 0, 2, 0, glm.LOGISTIC]), A, np.ones(4)))


@pytest.mark.parametrize("options", PROBLEMS[:4:3] + PROBLEMS[1:2])
def test_history_and_results_record_it(small_data, options):
    r = signsim.run(data=small_data, iters=30, eval_every=10, workers=2, test_fraction=0.3, **options)
    rows = r["history"]
    assert [row["iter"] for row in rows] == [0, 10, 20, 30]
    assert all("test_loss" in row for row in rows)
    built = problems.build(config.resolve({"data": small_data, "test_fraction": 0.3, **options}))
    n = int(built.pi[P_NTRAIN])
    x = np.asarray(r["x_final"])
    assert r["final"]["test_loss"] == pytest.approx(numpy_test_loss(options, built.A, built.b, n, x), rel=1e-12)
    x0 = built.x0
    assert rows[0]["test_loss"] == pytest.approx(numpy_test_loss(options, built.A, built.b, n, x0), rel=1e-12)
    assert np.array_equal(r.history["test_loss"], [row["test_loss"] for row in rows])
    assert ("test_acc" in rows[0]) == (options["problem"] != "least-squares")


def test_analytic_problems_have_no_test_loss():
    r = signsim.run(problem="quadratic", dim=3, iters=5)
    assert "test_loss" not in r["history"][0] and "test_acc" not in r["history"][0]


def test_sweep_csv_and_plot(small_data, tmp_path, cli):
    sweep = tmp_path / "s.toml"
    sweep.write_text(f'problem = "least-squares"\ndata = "{small_data}"\niters = 20\neval_every = 10\n'
                     '[grid]\nbatch-size = [1, 4]\n')
    out = tmp_path / "out"
    r = cli("sweep", str(sweep), "--out", str(out))
    assert r.code == 0, r.err
    import csv

    with open(out / "results.csv") as f:
        rows = list(csv.DictReader(f))
    header = list(rows[0])
    assert header.index("test_loss") == header.index("bits_down") + 1  # accuracies absent: after the bits
    docs = [json.loads(p.read_text()) for p in sorted((out / "runs").glob("*.json"))]
    by_id = {d["sweep"]["run_id"]: d for d in docs}
    for row in rows:
        want = [h for h in by_id[row["run_id"]]["history"] if h["iter"] == int(row["iter"])][0]["test_loss"]
        assert float(row["test_loss"]) == want
    fig = tmp_path / "f.png"
    r = cli("plot", str(out), "--y", "test-loss", "--x", "iter", "--out", str(fig))
    assert r.code == 0, r.err
    assert fig.stat().st_size > 0
