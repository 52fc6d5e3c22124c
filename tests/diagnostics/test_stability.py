"""The stability experiment (docs/theory.md §6.1): coupled runs against closed forms and exact identities."""

import numpy as np
import pytest

from signsim import problems
from signsim.diagnostics.stability import coupled_runs, neighbour, sample_losses
from signsim.engine import dispatch
from signsim.errors import InputError
from signsim.interface import config
from signsim.interface.experiment_config import parse
from signsim.problems.sampling import P_NTEST, P_NTRAIN


@pytest.fixture(scope="module")
def small_data(tmp_path_factory):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.3 * rng.normal(size=30)
    path = tmp_path_factory.mktemp("data") / "ls.npz"
    np.savez(path, X=X, y=y)
    return str(path)


def resolved(data, **options):
    return config.resolve({"problem": "least-squares", "data": data, "method": "sgd", "workers": 1,
                           "test_fraction": 0.3, **options})


@pytest.mark.parametrize("options", [{"problem": "least-squares"}, {"problem": "logistic", "l2": 0.1},
                                     {"problem": "mlp", "hidden": 3, "l2": 0.01}])
def test_sample_losses_average_to_the_test_loss_kernel(options):
    cfg = config.resolve({"data": "synthetic:glm:n=40:d=3", "test_fraction": 0.3, **options})
    p = problems.build(cfg)
    n, m = int(p.pi[P_NTRAIN]), int(p.pi[P_NTEST])
    x = np.random.default_rng(0).normal(size=p.dim)
    held = np.arange(n, n + m)
    assert sample_losses(p, x, held).mean() == pytest.approx(
        dispatch.compiled("problem_test_loss", dispatch.family_of(p.code))(p.code, x, p.pf, p.pi, p.A, p.b), rel=1e-12)
    assert sample_losses(p, x, np.arange(n)).mean() == pytest.approx(p.loss_ref(x), rel=1e-12)


@pytest.mark.parametrize("B", [1, 4])
def test_an_identical_copy_gives_bit_identical_runs(small_data, B):
    cfg = resolved(small_data, batch_size=B, iters=50, eval_every=50, lr=0.05, seed=3)
    p = problems.build(cfg)
    pair = neighbour(p, 5, None)
    assert np.array_equal(pair.S_prime.A, p.A) and pair.S_prime.A is not p.A
    records, a, b = coupled_runs(cfg, pair, every=10)
    assert [r["iter"] for r in records] == [0, 10, 20, 30, 40, 50]
    assert all(r["distance"] == 0.0 and r["loss_diff_max"] == 0.0 for r in records)
    assert np.array_equal(a.x, b.x) and np.array_equal(a.history, b.history, equal_nan=True)


def test_a_replaced_sample_differs_in_that_row_only(small_data):
    p = problems.build(resolved(small_data))
    n = int(p.pi[P_NTRAIN])
    pair = neighbour(p, 2, 1)
    changed = np.flatnonzero(np.any(pair.S_prime.A != p.A, axis=1) | (pair.S_prime.b != p.b))
    assert changed.tolist() == [2]
    assert np.array_equal(pair.S_prime.A[2], p.A[n + 1]) and pair.S_prime.b[2] == p.b[n + 1]
    assert n + 1 not in pair.held_out and len(pair.held_out) == int(p.pi[P_NTEST]) - 1


def test_one_serial_step_against_the_closed_form(small_data):
    """Serial SGD on least squares from x0, one step of size gamma: w_S - w_S' = -gamma (g_i - g'_i) if the drawn
    index is the replaced position i, else 0, with g_i = (a_i^T x0 - y_i) a_i + lam x0 (the lam x0 cancel)."""
    gamma, x0 = 0.1, 0.4
    hits = misses = 0
    for seed in range(12):
        cfg = resolved(small_data, batch_size=1, iters=1, eval_every=1, lr=gamma, seed=seed, x0=x0, l2=0.2)
        p = problems.build(cfg)
        n = int(p.pi[P_NTRAIN])
        i, j = 3, 0
        pair = neighbour(p, i, j)
        records, _, _ = coupled_runs(cfg, pair, every=1)
        x = np.full(p.dim, x0)
        a, y, a2, y2 = p.A[i], p.b[i], p.A[n + j], p.b[n + j]
        closed = gamma * np.linalg.norm((a @ x - y) * a - (a2 @ x - y2) * a2)
        got = records[-1]["distance"]
        assert records[0]["distance"] == 0.0
        if got == 0.0:
            misses += 1
        else:
            hits += 1
            assert got == pytest.approx(closed, rel=1e-12)
    assert hits >= 1 and misses >= 1  # 12 seeds, n = 21: both cases occur (fixed seeds)


def test_experiment_runs_from_a_config(small_data, tmp_path, cli):
    toml = tmp_path / "s.toml"
    toml.write_text(f'problem = "least-squares"\ndata = "{small_data}"\nmethod = "sgd"\nworkers = 1\nlr = 0.05\n'
                    'test-fraction = 0.3\n[experiment]\nkind = "stability"\nbatch-sizes = [1, 4]\npasses = 2\n'
                    'pairs = 2\nrecords = 3\n')
    r = cli("diversity", "--config", str(toml), "--json", "--out", str(tmp_path / "s.json"))
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["command"] == "diversity-stability"
    assert [s["B"] for s in doc["rows"]] == [1, 4]
    assert [s["iters"] for s in doc["rows"]] == [42, 10]  # 2 passes over n = 21, at the same gradient budget
    for s in doc["rows"]:
        assert s["gap"] == pytest.approx(s["test_loss"] - s["loss"])
    assert doc["B_S"]["init"] > 0
    r = cli("plot", str(tmp_path / "s.json"), "--out", str(tmp_path / "s.png"))
    assert r.code == 0, r.err


def test_needs_a_data_problem(cli, tmp_path):
    toml = tmp_path / "q.toml"
    toml.write_text('problem = "quadratic"\n[experiment]\nkind = "stability"\n')
    r = cli("diversity", "--config", str(toml))
    assert r.code == 2 and "needs a data problem" in r.err and r.err.count("\n") == 1


@pytest.mark.parametrize(("raw", "needle"), [
    ({"kind": "stability", "replacement": "other"}, "'replacement' must be"),
    ({"kind": "stability", "pairs": 0}, "'pairs' must be a positive integer"),
    ({"kind": "stability", "batch-sizes": []}, "'batch-sizes'"),
    ({"kind": "stability", "colour": 1}, "unknown key 'colour'"),
])
def test_bad_options(raw, needle):
    with pytest.raises(InputError, match=needle):
        parse(raw, "[experiment]")
