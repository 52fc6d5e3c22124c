"""The theorems' bounds (docs/theory.md §3): formulas by hand, and real runs staying under them."""

import math

import numpy as np
import pytest

from signsim.commands.bound import BoundOptions, bound
from signsim.commands.run import run
from signsim.diagnostics import bounds as B
from signsim.diagnostics.constants import glm_L, rosenbrock_L
from signsim.interface import config

from ..cli.test_cli import assert_one_line_error


def test_formulas_against_hand_computed_values():
    # F = 10, L1 = 4, gamma = 0.1, K = 100: 10/(0.1*100) + 4*0.1/2 = 1 + 0.2
    assert B.signsgd_constant(10, 4, 0.1, 100) == pytest.approx(1.2)
    # (10/0.1 + 0.1*4)/10 + (0.1*4/2) ln(100)/10 = 10.04 + 0.02*4.60517
    assert B.signsgd_sqrt(10, 4, 0.1, 100) == pytest.approx(10.04 + 0.02 * math.log(100))
    # (1/sqrt(N)) [sqrt(4)(10 + 1/2) + 2*3]^2 with N = 100^2: 27^2 / 100
    assert B.bernstein(10, 4, 3, 100) == pytest.approx(7.29)
    # majority of M = 9, alpha = 0.25: sigma-term 2*3/3/(1 - 0.5) = 4: (21 + 4)^2 / 100
    assert B.bernstein(10, 4, 3, 100, M=9, alpha=0.25, majority=True) == pytest.approx(6.25)
    # SSDM with F = 10, L = 2, gamma0 = 0.5, d = 4, sigma = 1, K = 16:
    # 16^-1/4 [20 + 2*2*0.5*2 + 2] + 2/4 + 2*0.5*4/(2*8) = 0.5*26 + 0.5 + 0.25
    assert B.ssdm(10, 2, 0.5, 4, 1, 16) == pytest.approx(13.75)


def test_smoothness_constants_are_valid():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(50, 6))
    for c in (0.25, 1.0):
        L = glm_L(A, 0.1, c)
        H = c * A.T @ A / 50 + 0.1 * np.eye(6)
        assert np.linalg.eigvalsh(np.diag(L) - H).min() >= -1e-10
    # rosenbrock: Gershgorin over the box dominates the Hessian at random points of the box
    from scipy.optimize import rosen_hess

    R, d = 2.0, 6
    L = rosenbrock_L(d, R)
    for _ in range(20):
        x = rng.uniform(-R, R, d)
        assert np.linalg.eigvalsh(np.diag(L) - rosen_hess(x)).min() >= -1e-9


def observed(cfg_options, key, how):
    cfg = config.resolve({**cfg_options, "track_spb": 1})
    doc = run(cfg)
    track = [t for t in doc["tracks"]["spb"] if t["iter"] < cfg.iters]
    vals = np.array([t[key] for t in track])
    return (vals.mean() if how == "mean" else vals.min()), cfg, doc


#: 6 seeds x 300 iterations with the SPB tracked every iteration: 5 s a case on 2 cores; the fast suite keeps one
#: case of each theorem's form (one worker, constant step; majority vote, sqrt step), the slow step (.ci/run) all
@pytest.mark.parametrize(("schedule", "workers"), [("constant", 1), pytest.param("sqrt", 1, marks=pytest.mark.slow),
                                                   pytest.param("constant", 3, marks=pytest.mark.slow),
                                                   pytest.param("constant", 9, marks=pytest.mark.slow),
                                                   ("sqrt", 9)])
def test_runs_stay_under_their_bounds(schedule, workers):
    """The theorems bound expectations: the mean over seeds of each run's observation must stay under the
    bound, up to 3 standard errors of that mean (a single run fluctuates around its expectation)."""
    key = "rho_norm" if workers == 1 else "rho_M_norm"
    how = "mean" if schedule == "constant" else "min"
    values = []
    for seed in range(6):
        opts = dict(problem="quadratic", dim=10, kappa=10.0, noise="gaussian:1", method="signsgd", workers=workers,
                    lr=0.02, lr_schedule=schedule, iters=300, seed=seed, eval_every=1)
        v, cfg, _ = observed(opts, key, how)
        values.append(v)
    doc = bound(cfg, BoundOptions())
    name = ("signsgd" if workers == 1 else "majority") + ("-constant" if schedule == "constant" else "-sqrt")
    entry = next(r for r in doc["bounds"] if r["key"] == name)
    assert entry["matches_run"]
    values = np.array(values)
    assert values.mean() <= entry["at_K"] + 3 * values.std(ddof=1) / np.sqrt(len(values))


def test_ssdm_run_stays_under_the_derived_bound():
    K = 400
    opts = dict(problem="quadratic", dim=10, kappa=10.0, noise="gaussian:1", method="ssdm", workers=4,
                momentum=1 - 1 / math.sqrt(K), lr=0.5 * K ** -0.75, iters=K, eval_every=1)
    cfg = config.resolve(opts)
    doc = run(cfg)
    avg = np.mean([h["grad_norm"] for h in doc["history"] if h["iter"] < K])
    b = bound(cfg, BoundOptions())
    entry = next(r for r in b["bounds"] if r["key"] == "ssdm")
    assert entry["matches_run"] and entry["derived"]
    assert avg <= entry["at_K"]


def test_majority_table_plateau_and_lower_bound():
    doc = bound(config.resolve(dict(problem="quadratic", noise="gaussian:20")), BoundOptions())
    rows = {r["M"]: r for r in doc["majority_table"]["rows"]}
    assert len(rows) == 64
    for l in range(1, 33):
        assert rows[2 * l - 1]["ratio"] == pytest.approx(rows[2 * l]["ratio"], rel=1e-12)
    for r in rows.values():
        assert r["lower_bound"] <= r["ratio"] <= 1 + 1e-12
    assert rows[63]["ratio"] > rows[1]["ratio"]


def test_overrides_are_applied_and_missing_constants_are_named(cli):
    doc = cli("bound", "--problem", "quadratic", "--constant", "L1=5", "--constant", "F=2", "--json").json()
    c = {k["name"]: k for k in doc["constants"]}
    assert c["L1"]["value"] == 5 and c["L1"]["source"] == "--constant override" and c["F"]["value"] == 2
    entry = next(r for r in doc["bounds"] if r["key"] == "signsgd-constant")
    assert entry["at_K"] == pytest.approx(B.signsgd_constant(2, 5, 0.01, 2000))
    assert_one_line_error(cli("bound", "--problem", "mlp"), "missing constant L1", "--constant L1=")
    assert_one_line_error(cli("bound", "--constant", "Q=1"), "--constant Q=1")
    assert_one_line_error(cli("bound", "--constant", "L1=x"), "--constant L1=x")
    ok = cli("bound", "--problem", "mlp", "--constant", "L1=100", "--json")
    assert ok.code == 0


def test_overlay_table_figure_and_bad_files(cli, tmp_path):
    res = tmp_path / "r.json"
    fig = tmp_path / "b.png"
    r = cli("run", "--problem", "quadratic", "--method", "signsgd", "--workers", "1", "--iters", "100",
            "--track-spb", "1", "--eval-every", "1", "--out", res, "--quiet")
    assert r.code == 0
    o = cli("bound", "--overlay", res, "--plot", fig, "--json")
    assert o.code == 0
    doc = o.json()
    entry = next(b for b in doc["bounds"] if b["key"] == "signsgd-constant")
    assert entry["observed"] is not None and entry["observed_over"].startswith("over 100 tracked")
    assert fig.read_bytes()[:4] == b"\x89PNG"
    assert_one_line_error(cli("bound", "--overlay", tmp_path / "none.json"), "--overlay", "no such file")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert_one_line_error(cli("bound", "--overlay", bad), "--overlay", "not a JSON")
    spb = tmp_path / "spb.json"
    cli("check-spb", "--out", spb, "--quiet")
    assert_one_line_error(cli("bound", "--overlay", spb), "--overlay", "check-spb")


def test_a_missing_constant_is_found_before_any_kernel_compiles(tmp_path):
    """The MLP's L1 must be given: said in one line before any work, whatever the kernel cache holds (with an empty
    cache the compile notice came first, and the one-line error was two lines on a machine whose cache was cold)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "SIGNSIM_WARM": "0"}
    for extra, says in (((), "missing constant L1"), (("--constant", "L1=x"), "--constant L1=x")):
        r = subprocess.run([sys.executable, "-m", "signsim", "bound", "--problem", "mlp", *extra], env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 2 and r.stderr.strip().splitlines() == [r.stderr.strip()] and says in r.stderr, r.stderr
    assert not list((tmp_path / "cache").rglob("*.nbi"))  # nothing compiled
