"""Gradient diversity and the noise scale (docs/theory.md §6) against materialized per-sample gradients."""

from pathlib import Path

import numpy as np
import pytest

from signsim import noise, problems
from signsim.commands.diversity import DiversityOptions, diversity
from signsim.diagnostics import diversity_estimators as est
from signsim.diagnostics.diversity import predicted_speedup
from signsim.interface import config

from ..cli.test_cli import assert_one_line_error
from ..conftest import run_subprocess


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = (X @ rng.normal(size=4) > 0).astype(float) + (X[:, 1] > 0.5)
    path = tmp_path_factory.mktemp("div") / "d.npz"
    np.savez(path, X=X, y=y)
    return str(path)


def build(**options):
    return problems.build(config.resolve(options))


PROBLEMS = [
    {"problem": "logistic", "positive_class": 1.0, "l2": 0.05},
    {"problem": "least-squares", "l2": 0.01},
    {"problem": "mlp", "hidden": 3, "activation": "tanh", "l2": 0.01},
]


def brute(G):
    n = G.shape[0]
    A = np.sum(G * G)
    C = np.sum(G.sum(axis=0) ** 2)
    mean = G.mean(axis=0)
    trace = np.sum((G - mean) ** 2) / n  # covariance normalized by 1/n
    return A / C, n * A / C, trace / (mean @ mean)


@pytest.mark.parametrize("options", PROBLEMS)
def test_exact_diversity_against_materialized_gradients(data_file, options):
    p = build(data=data_file, **options)
    x = np.random.default_rng(1).normal(size=p.dim) * 0.3
    d, _ = est.exact(p, x)
    G = p.finite_sum.per_sample_grads(x, np.arange(p.finite_sum.n))
    delta, B_S, B_simple = brute(G)
    assert d.delta_S == pytest.approx(delta, rel=1e-9)
    assert d.B_S == pytest.approx(B_S, rel=1e-9)
    assert d.B_simple == pytest.approx(B_simple, rel=1e-9)  # computed from the covariance, independently
    assert d.B_simple == pytest.approx(d.B_S - 1)
    assert d.delta_S >= 1 / p.finite_sum.n


def test_identical_gradients_give_delta_one_over_n(tmp_path):
    path = tmp_path / "same.npz"
    np.savez(path, X=np.tile([[1.0, 2.0, -1.0]], (25, 1)), y=np.full(25, 3.0))
    p = build(problem="least-squares", data=str(path), standardize=False, intercept=False, test_fraction=0.0)
    d, _ = est.exact(p, np.array([0.3, -0.2, 0.5]))
    assert d.delta_S == pytest.approx(1 / 25) and d.B_S == pytest.approx(1.0)


def test_orthogonal_gradients_give_B_S_n(tmp_path):
    n = 12
    path = tmp_path / "eye.npz"
    np.savez(path, X=np.eye(n), y=np.arange(1.0, n + 1))
    p = build(problem="least-squares", data=str(path), standardize=False, intercept=False, test_fraction=0.0)
    d, _ = est.exact(p, np.zeros(n))  # grad f_j = -y_j e_j: mutually orthogonal
    assert d.B_S == pytest.approx(n)


@pytest.mark.parametrize("r", [2, 3, 8])
def test_replication_divides_delta_and_keeps_B_S(data_file, r):
    base = build(problem="logistic", data=data_file, positive_class=1.0)
    rep = build(problem="logistic", data=data_file, positive_class=1.0, replicate=r)
    x = np.random.default_rng(2).normal(size=base.dim) * 0.2
    d1, d2 = est.exact(base, x)[0], est.exact(rep, x)[0]
    assert d2.delta_S == pytest.approx(d1.delta_S / r, rel=1e-9)
    assert d2.B_S == pytest.approx(d1.B_S, rel=1e-9)


def test_two_batch_estimates_are_unbiased(data_file):
    p = build(problem="logistic", data=data_file, positive_class=1.0, l2=0.01)
    model, params = noise.parse("none")
    x = np.random.default_rng(3).normal(size=p.dim) * 0.2
    G = p.finite_sum.per_sample_grads(x, np.arange(p.finite_sum.n))
    mean = G.mean(axis=0)
    true_sq, true_trace = mean @ mean, np.sum((G - mean) ** 2) / G.shape[0]
    reps = [est.two_batch_estimate(p, model.code, params, x, 2, 8, 200, 1, 0, salt=s)[0] for s in range(60)]
    sq = np.array([d.grad_sq for d in reps])
    tr = np.array([d.trace for d in reps])
    assert abs(sq.mean() - true_sq) < 5 * sq.std(ddof=1) / np.sqrt(len(sq))
    assert abs(tr.mean() - true_trace) < 5 * tr.std(ddof=1) / np.sqrt(len(tr))


@pytest.mark.parametrize("B", [1, 2, 5, 20])
def test_with_replacement_identity_by_simulation(data_file, B):
    """E||sum_l grad f_{s_l}||^2 = (B/n) A (1 + (B - 1)/B_S) for B samples drawn with replacement."""
    p = build(problem="least-squares", data=data_file, l2=0.0)
    x = np.random.default_rng(4).normal(size=p.dim)
    G = p.finite_sum.per_sample_grads(x, np.arange(p.finite_sum.n))
    n = G.shape[0]
    d, _ = est.exact(p, x)
    rng = np.random.default_rng(5)
    draws = rng.integers(0, n, (40000, B))
    vals = np.sum(G[draws].sum(axis=1) ** 2, axis=1)
    expected = B / n * d.A * (1 + (B - 1) / d.B_S)
    assert abs(vals.mean() - expected) < 5 * vals.std(ddof=1) / np.sqrt(len(vals))


def test_predicted_speedup_limits():
    assert predicted_speedup(1, 50.0) == pytest.approx(1.0)
    assert predicted_speedup(1e9, 50.0) == pytest.approx(50.0, rel=1e-6)
    np.testing.assert_allclose(predicted_speedup([4, 8], np.inf), [4, 8])


@pytest.mark.slow  # four diversity commands end to end, the exact estimator on all 455 examples
def test_diversity_cli_fields_and_workers(cli):
    doc = cli("diversity", "--json").json()
    for key in ("n", "delta_S", "B_S", "B_simple"):
        assert key in doc
    assert doc["method_of_estimate"] == "exact" and doc["n"] == 455
    assert doc["speedup"][-1]["B"] <= doc["n"] < 2 * doc["speedup"][-1]["B"]
    split = cli("diversity", "--split", "sorted", "--workers", "3", "--json").json()
    assert len(split["workers"]) == 3 and sum(w["n"] for w in split["workers"]) == 455
    assert split["between_workers"]["groups"] == 3
    syn = cli("diversity", "--problem", "quadratic", "--noise", "gaussian:2", "--json").json()
    assert syn["method_of_estimate"] == "population" and syn["n"] is None
    g = np.logspace(0, 2, 10)  # x0 = 1: grad = L
    assert syn["B_simple"] == pytest.approx(10 * 4 / np.sum(g**2))
    tb = cli("diversity", "--problem", "rosenbrock", "--oracle", "term", "--noise", "none", "--json").json()
    assert tb["method_of_estimate"] == "two-batch" and tb["two_batch"]["big"] > tb["two_batch"]["small"]


def test_stationary_point_reports_infinite_B_S(cli, tmp_path, data_file):
    p = build(problem="least-squares", data=data_file, l2=0.0)
    n = p.finite_sum.n
    A = p.A[:n]
    w = np.linalg.lstsq(A, p.b[:n], rcond=None)[0]
    at = tmp_path / "w.npy"
    np.save(at, w)
    doc = cli("diversity", "--problem", "least-squares", "--data", data_file, "--at", at, "--json").json()
    assert doc["inv_B_S"] == pytest.approx(0.0, abs=1e-10)
    assert doc["B_S"] is None or doc["B_S"] > 1e10  # inf is written as null


def test_run_tracks_diversity(cli):
    doc = cli("run", "--problem", "logistic", "--method", "signsgd", "--iters", "20", "--track-diversity", "10",
              "--json").json()
    track = doc["tracks"]["diversity"]
    assert [t["iter"] for t in track] == [0, 10, 20] and track[0]["method_of_estimate"] == "exact"
    first = cli("diversity", "--json").json()
    assert track[0]["B_S"] == pytest.approx(first["B_S"])


def test_replication_experiment_config(cli, tmp_path):
    cfg = tmp_path / "rep.toml"
    cfg.write_text('problem = "logistic"\nmethod = "sgd"\nworkers = 1\nlr = 0.05\n\n[experiment]\n'
                   'replicate = [1, 2]\nbatch-sizes = [1, 4]\ntarget-loss = 0.3\nmax-iters = 2000\nseeds = 2\n')
    doc = cli("diversity", "--config", cfg, "--json").json()
    assert [(r["replicate"], r["B"]) for r in doc["rows"]] == [(1, 1), (1, 4), (2, 1), (2, 4)]
    assert all(r["runs_reaching_target"] == 2 for r in doc["rows"])
    assert doc["rows"][0]["measured_speedup"] == 1.0 and doc["rows"][1]["predicted_speedup"] > 1


@pytest.mark.parametrize(("text", "words"), [
    ("[experiment]\nreplicate = [0]\n", ("replicate",)),
    ("[experiment]\nbatch-sizes = [2, 4]\n", ("batch-sizes", "include 1")),
    ("[experiment]\ncolour = 1\n", ("colour",)),
])
def test_bad_experiment_exits_2(cli, tmp_path, text, words):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(text)
    assert_one_line_error(cli("diversity", "--config", cfg), *words)


def test_diversity_bad_input(cli):
    assert_one_line_error(cli("diversity", "--delta", "-1"), "--delta")
    assert_one_line_error(cli("diversity", "--estimator", "population"), "--estimator population")
    assert_one_line_error(cli("diversity", "--problem", "quadratic", "--estimator", "two-batch", "--workers", "1",
                              "--big-batch", "1"), "--big-batch")


def test_diversity_options_build():
    assert DiversityOptions.build(delta=2.0).delta == 2.0
    with pytest.raises(Exception, match="--pairs"):
        diversity(config.resolve({"problem": "quadratic"}), DiversityOptions.build(pairs=1))


def test_the_largest_batch_under_a_huge_delta_is_the_population(cli):
    """delta B_S + 1 past the largest float (delta up to 1e308 is allowed) caps at n, or is infinite without a
    finite population; it raised OverflowError (found by test_hardening's generated options)."""
    import math

    from signsim.diagnostics.diversity import largest_batch

    assert largest_batch(4.07, 1e308, 455) == 455
    assert largest_batch(4.07, 1e308, None) == math.inf
    assert largest_batch(4.07, 0.5, 455) == math.floor(0.5 * 4.07 + 1)
    assert largest_batch(math.inf, 0.5, 455) == 455
    r = cli("diversity", "--delta", "1e308", "--json")
    assert r.code == 0, r.err
    assert r.json()["largest_batch"] == r.json()["n"]


@pytest.mark.slow
def test_at_chooses_the_point_of_a_heuristics_experiment_and_is_refused_where_there_is_none(cli):
    """--at with an [experiment] config was silently ignored: the experiment computed at its own point."""
    paper = Path(__file__).resolve().parents[2] / "configs" / "paper"
    r = cli("diversity", "--config", paper / "diversity-heuristics.toml", "--at", "run:5", "--json")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["experiment"]["at"] == "run:5" and doc["point"].startswith("after 5 iterations"), doc["point"]
    r = cli("diversity", "--config", paper / "stability-logistic.toml", "--at", "run:5")
    assert r.code == 2 and r.err.strip() == "signsim: error: --at run:5: the stability experiment has no point to " \
        "compute at", r.err


@pytest.mark.slow  # compiles the two-batch kernel from an empty kernel cache (about 12 s)
def test_a_first_compile_prints_no_numba_note(tmp_path):
    """Numba's inliner printed two pedantic NumbaIRAssumptionWarnings (seven lines each, "please report") on stderr
    when the two-batch kernel first compiled (signsim.engine.dispatch silences that message)."""
    r = run_subprocess("diversity", "--estimator", "two-batch", "--quiet",
                       env={"NUMBA_CACHE_DIR": str(tmp_path), "SIGNSIM_WARM": "0"})
    assert r.code == 0, r.err
    assert "Warning" not in r.err and "pedantic" not in r.err, r.err
