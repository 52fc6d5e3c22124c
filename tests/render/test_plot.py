"""Figures: every kind builds from small real results with the expected axes and lines; files of each
format; bad inputs exit 2; every paper config runs (capped by SIGNSIM_MAX_ITERS)."""

import json
import os
from pathlib import Path

import pytest

from signsim.commands.plot import build

from ..cli.test_cli import assert_one_line_error

PAPER = sorted(Path("configs/paper").glob("*.toml"))
# Every paper config runs end to end in the slow step (.ci/run); the fast suite keeps three cheap ones of the
# analytic family (each config compiles the stage compositions of its own variants: compressors.toml alone took
# 6 minutes of an empty-cache suite)
FAST_PAPER = {"rosenbrock-majority", "vote-trap", "sign-trap"}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    from signsim.cli import main

    root = tmp_path_factory.mktemp("plots")

    def make(name, *args):
        path = root / name
        try:
            main([*map(str, args), "--out", str(path), "--quiet"])
        except SystemExit as e:
            assert e.code in (0, 1), e.code
        return path

    return {
        "run": make("run.json", "run", "--problem", "quadratic", "--iters", "400", "--lr", "0.05", "--track-spb", "40"),
        "run2": make("run2.json", "run", "--problem", "quadratic", "--iters", "60", "--method", "sgd"),
        "mlp": make("mlp.json", "run", "--problem", "mlp", "--iters", "30"),
        "spb": make("spb.json", "check-spb"),
        "div": make("div.json", "diversity"),
        "sweep": make("sweep", "sweep", "configs/sweeps/ci-smoke.toml", "--jobs", "1"),
        "bound": make("bound.json", "bound", "--overlay", root / "run.json"),
    }


def lines(ax):
    return [line for line in ax.get_lines() if not line.get_label().startswith("_")]


def test_run_overview_with_tracks(results):
    fig = build([results["run"], results["run2"]], None, None, None)
    axes = fig.get_axes()
    assert len(axes) == 4  # loss vs iter, loss vs MB, SPB fraction, rho-norm ratio
    assert axes[0].get_xlabel() == "iteration $k$" and axes[0].get_ylabel() == "loss $f(x_{k})$"
    assert axes[1].get_xlabel().startswith("communicated (MB")
    assert len(lines(axes[0])) == 2 and "ssdm (mean), M = 8" in lines(axes[0])[0].get_label()


def test_classifier_runs_plot_accuracy(results):
    fig = build([results["mlp"]], None, None, None)
    assert fig.get_axes()[0].get_ylabel() == "test accuracy"
    one = build([results["mlp"]], "megabytes", "train-accuracy", None)
    assert one.get_axes()[0].get_ylabel() == "training accuracy"


def test_single_panel_axes_and_log_scale(results):
    fig = build([results["run"]], "bits", "loss", None)  # the loss falls by orders of magnitude: log scale
    ax = fig.get_axes()[0]
    assert ax.get_xlabel() == "bits communicated (up + down)" and ax.get_yscale() == "log"
    assert build([results["mlp"]], "iter", "accuracy", None).get_axes()[0].get_yscale() == "linear"
    fig = build([results["run"]], "iter", "rho-min", None)
    assert fig.get_axes()[0].get_ylabel() == r"$\min_{i}$ $\rho_{i}$"


def test_sweep_groups(results):
    fig = build([results["sweep"]], None, None, "method")
    ax = fig.get_axes()[0]
    # runs that differ in a swept option (workers) are never averaged into one line: each gets its own
    assert sorted(line.get_label() for line in lines(ax)) == [f"method = {m}, workers = {w}" for m in
                                                               ("signsgd", "signum", "ssdm") for w in (1, 9)]
    assert len(ax.collections) == 6  # one band per line
    by_workers = build([results["sweep"]], "megabytes", "loss", "workers")
    assert len(lines(by_workers.get_axes()[0])) == 6


def _final_means(sweep_dir, option, group, y="loss"):
    """Independent of the figure code: each run's last row of results.csv, averaged by (group, option)."""
    import csv

    last = {}
    with (sweep_dir / "results.csv").open(newline="") as f:
        for r in csv.DictReader(f):
            if r["run_id"] not in last or int(r["iter"]) >= int(last[r["run_id"]]["iter"]):
                last[r["run_id"]] = r
    out = {}
    for r in last.values():
        out.setdefault((r[group], r[option]), []).append(float(r[y]))
    return {k: sum(v) / len(v) for k, v in out.items()}, {k: len(v) for k, v in out.items()}


def test_sweep_final_values_against_a_swept_option(results):
    expected, counts = _final_means(results["sweep"], "workers", "method")
    assert set(counts.values()) == {2}  # the two repeats of each point are averaged
    fig = build([results["sweep"]], "workers", "loss", "method")
    ax = fig.get_axes()[0]
    assert ax.get_xlabel() == "workers" and ax.get_ylabel() == "final loss $f(x_{k})$"
    drawn = {c.get_label().removeprefix("method = "): c.lines[0] for c in ax.containers}  # errorbar()
    assert sorted(drawn) == ["signsgd", "signum", "ssdm"]
    for method, line in drawn.items():
        assert list(line.get_xdata()) == [1.0, 9.0]  # numeric values on a numeric axis
        want = [expected[(method, "1")], expected[(method, "9")]]
        assert line.get_ydata() == pytest.approx(want, rel=1e-12)
    assert "mean over 2 runs per point" in fig._suptitle.get_text()
    # values that are not numbers: one tick each, in the order the sweep ran them
    ax = build([results["sweep"]], "method", "loss", "workers").get_axes()[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["signsgd", "signum", "ssdm"]
    expected, _ = _final_means(results["sweep"], "method", "workers")
    nine = next(c.lines[0] for c in ax.containers if c.get_label() == "workers = 9")
    assert nine.get_ydata() == pytest.approx([expected[("9", m)] for m in ("signsgd", "signum", "ssdm")])


def test_sweep_final_bad_inputs(cli, results):
    assert_one_line_error(cli("plot", results["sweep"], "--x", "lr"), "--x lr", "method, workers")
    assert_one_line_error(cli("plot", results["sweep"], "--x", "workers", "--group-by", "workers"), "--group-by")
    assert_one_line_error(cli("plot", results["sweep"], "--x", "workers", "--facet", "method"), "--facet")
    assert_one_line_error(cli("plot", results["sweep"], "--x", "workers", "--y", "accuracy"), "--y accuracy")
    assert_one_line_error(cli("plot", results["run"], "--x", "method"), "--x method")


def test_rho_speedup_and_bound_figures(results):
    ax = build([results["spb"]], None, None, None).get_axes()[0]
    assert ax.get_ylabel() == r"success probability $\rho_{i}$"
    assert any(line.get_label().startswith("1/2") for line in lines(ax))
    doc = json.loads(results["spb"].read_text())
    assert len(lines(ax)[0].get_xdata()) == doc["dim"] - doc["zero_coordinates"]
    ax = build([results["div"]], None, None, None).get_axes()[0]
    assert ax.get_xlabel() == "batch size $B$" and len(lines(ax)) == 2
    a1, a2 = build([results["bound"]], None, None, None).get_axes()
    assert a1.get_xlabel() == "iterations $K$" and a2.get_xlabel() == "workers $M$"
    assert len(lines(a2)) == 2


@pytest.mark.parametrize(("suffix", "magic"), [(".png", b"\x89PNG"), (".pdf", b"%PDF"), (".svg", b"<?xml")])
def test_out_formats(cli, results, tmp_path, suffix, magic):
    out = tmp_path / f"fig{suffix}"
    r = cli("plot", results["run"], "--out", out)
    assert r.code == 0, r.err
    assert out.stat().st_size > 1000 and out.read_bytes()[: len(magic)] == magic


def test_bad_plot_inputs(cli, results, tmp_path):
    assert_one_line_error(cli("plot", tmp_path / "missing.json"), "missing.json")
    assert_one_line_error(cli("plot", results["run"], results["spb"]), "cannot plot")
    assert_one_line_error(cli("plot", results["run"], "--y", "happiness"), "--y")
    assert_one_line_error(cli("plot", results["run"], "--out", tmp_path / "f.jpg"), "--out")
    assert_one_line_error(cli("plot", results["sweep"], "--group-by", "colour"), "--group-by")
    assert_one_line_error(cli("plot", results["run2"], "--y", "spb-fraction"), "--y spb-fraction")
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    assert_one_line_error(cli("plot", other), "other.json", "not signsim results")
    assert_one_line_error(cli("plot", tmp_path), "not a sweep")


@pytest.mark.parametrize("config", [pytest.param(p, id=p.stem, marks=() if p.stem in FAST_PAPER else pytest.mark.slow)
                                    for p in PAPER])
def test_paper_configs_run(cli, config, monkeypatch, tmp_path):
    monkeypatch.setenv("SIGNSIM_MAX_ITERS", "20")
    text = config.read_text()
    if text.lstrip("#").find("\nmodel = ") >= 0 and os.environ.get("SIGNSIM_REQUIRE_TORCH") != "1":
        pytest.importorskip("torch")  # your own PyTorch model's experiments (CI installs torch: never skipped there)
    if "[robustness]" in text:  # a benchmark of 1,056 runs: each resolves (the small one runs in test_robustness.py)
        r = cli("sweep", config, "--out", tmp_path / "sweep", "--dry-run", "--quiet")
        assert r.code == 0, r.err
        return
    if "[[zip]]" in text or "[grid]" in text:  # a sweep file
        out = tmp_path / "sweep"
        r = cli("sweep", config, "--out", out, "--quiet", "--jobs", "1")
        assert r.code == 0, r.err
        assert (out / "results.csv").stat().st_size > 0
        fig = tmp_path / "fig.png"
        assert cli("plot", out, "--group-by", "method", "--out", fig).code == 0 and fig.stat().st_size > 0
        return
    command = "diversity" if "[experiment]" in text else "run"
    out = tmp_path / "out.json"
    r = cli(command, "--config", config, "--out", out, "--quiet")
    assert r.code == 0, r.err
    doc = json.loads(out.read_text())
    runs = doc.get("runs") or doc.get("rows")
    assert runs
    if command == "run":
        assert all(d["final"]["iters_done"] <= 20 for d in doc["runs"])
        fig = tmp_path / "fig.png"
        assert cli("plot", out, "--out", fig).code == 0 and fig.stat().st_size > 0


SLOW_SWEEPS = [p.stem for p in PAPER if p.stem not in FAST_PAPER and ("[grid]" in p.read_text()
                                                                      or "[[zip]]" in p.read_text())]


@pytest.mark.parametrize("name", SLOW_SWEEPS)
def test_slow_paper_sweeps_resolve(cli, name, tmp_path):
    """The paper sweeps left to the slow run above: every expanded run resolves (a dry run checks them all)."""
    r = cli("sweep", f"configs/paper/{name}.toml", "--out", tmp_path / "sweep", "--dry-run", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["dry_run"] and doc["runs"] and not any(run["error"] for run in doc["runs"])
    counts = {"fedavg-digits": 36, "participation-vote": 24, "scaffold-drift": 36}
    if name in counts:
        assert len(doc["runs"]) == counts[name]


def test_plot_error_messages_are_not_nested(cli, tmp_path):
    bad = tmp_path / "notes.json"
    bad.write_text("workers = 3\n")
    r = cli("plot", bad)
    assert r.code == 2 and r.err.count("notes.json") == 1 and "malformed" not in r.err
