"""Figures that fail loudly or say what they did (issue #16): a --y the results lack exits 2 naming them;
--group-by names what it averaged over; --where filters; --facet draws panels; mixing problems warns;
bound --plot draws the run's running values; legends stay outside the axes and inside the figure."""

import json

import numpy as np
import pytest

from signsim.commands.plot import build

from ..cli.test_cli import assert_one_line_error


@pytest.fixture(scope="module")
def res(tmp_path_factory):
    from signsim.cli import main

    root = tmp_path_factory.mktemp("rules")

    def make(name, *args):
        path = root / name
        try:
            main([*map(str, args), "--out", str(path), "--quiet"])
        except SystemExit as e:
            assert e.code in (0, 1), e.code
        return path

    sweep_file = root / "s.toml"
    sweep_file.write_text('problem = "quadratic"\ndim = 5\nnoise = "gaussian:1"\niters = 60\nrepeats = 2\n'
                          '[grid]\nmethod = ["signsgd", "ssdm"]\nworkers = [1, 3]\nlr = [0.01, 0.02]\n')
    return {
        "ros": make("ros.json", "run", "--problem", "rosenbrock", "--iters", "50"),
        "quad": make("quad.json", "run", "--problem", "quadratic", "--iters", "50", "--noise", "gaussian:1"),
        "single": make("single.json", "run", "--problem", "quadratic", "--iters", "120", "--method", "signsgd",
                       "--momentum", "0", "--workers", "1", "--aggregate", "majority", "--track-spb", "1"),
        "sweep": make("sweep", "sweep", sweep_file, "--jobs", "1"),
    }


def visible_lines(ax):
    return [line for line in ax.get_lines() if not line.get_label().startswith("_")]


def test_missing_y_exits_2_naming_the_results(cli, res, tmp_path):
    r = cli("plot", res["ros"], "--x", "megabytes", "--y", "accuracy", "--out", tmp_path / "acc.pdf")
    assert_one_line_error(r, "--y accuracy", str(res["ros"]), "loss")
    assert not (tmp_path / "acc.pdf").exists()
    r = cli("plot", res["quad"], res["ros"], "--y", "rho-norm", "--out", tmp_path / "f.png")
    assert_one_line_error(r, "--y rho-norm", str(res["quad"]), str(res["ros"]), "--track-spb")
    r = cli("plot", res["sweep"], "--y", "accuracy", "--out", tmp_path / "f.png")
    assert_one_line_error(r, "--y accuracy", str(res["sweep"]))


def test_group_by_names_everything_averaged(res):
    fig = build([res["sweep"]], None, None, "method")
    title = fig._suptitle.get_text()
    # the swept options are never averaged over (issue 34): a line per value of each, only the seeds averaged
    assert "averaged over seed" in title and "workers" not in title and "2 runs per line" in title
    assert sorted(line.get_label() for line in visible_lines(fig.get_axes()[0])) == sorted(
        f"method = {m}, workers = {w}, lr = {lr}" for m in ("signsgd", "ssdm") for w in (1, 3) for lr in (0.01, 0.02))
    one = build([res["sweep"]], None, None, "method", where=["workers=3", "lr=0.02"])
    title = one._suptitle.get_text()
    assert title.startswith("quadratic (d = 5)\nworkers = 3, lr = 0.02:")
    assert "averaged over seed" in title and "lr," not in title


def test_where_filters_before_grouping(res, cli, tmp_path):
    fig = build([res["sweep"]], "iter", "loss", "workers", where=["method=ssdm", "lr=0.01"])
    lines = visible_lines(fig.get_axes()[0])
    assert sorted(line.get_label() for line in lines) == ["workers = 1", "workers = 3"]
    rows = [r for r in _rows(res["sweep"]) if r["method"] == "ssdm" and r["workers"] == "1" and r["lr"] == "0.01"]
    iters = sorted({float(r["iter"]) for r in rows})
    mean0 = np.mean([float(r["loss"]) for r in rows if float(r["iter"]) == iters[-1]])
    w1 = next(line for line in lines if line.get_label() == "workers = 1")
    assert w1.get_ydata()[-1] == pytest.approx(mean0)
    assert_one_line_error(cli("plot", res["sweep"], "--where", "workers=7", "--out", tmp_path / "f.png"),
                          "--where workers=7", "no run")
    assert_one_line_error(cli("plot", res["sweep"], "--where", "colour=red", "--out", tmp_path / "f.png"),
                          "--where colour=red", "options:")
    assert_one_line_error(cli("plot", res["sweep"], "--where", "workers", "--out", tmp_path / "f.png"),
                          "KEY=VALUE")
    assert_one_line_error(cli("plot", res["quad"], "--where", "workers=1", "--out", tmp_path / "f.png"),
                          "--where", "sweep")


def _rows(sweep):
    import csv

    with (sweep / "results.csv").open() as f:
        return list(csv.DictReader(f))


def test_facet_draws_one_panel_per_value(res, cli, tmp_path):
    fig = build([res["sweep"]], None, None, "method", facet="workers")
    axes = [ax for ax in fig.get_axes() if ax.get_visible()]
    assert [ax.get_title() for ax in axes] == ["workers = 1", "workers = 3"]
    for ax in axes:
        assert sorted(line.get_label() for line in visible_lines(ax)) == [
            f"method = {m}, lr = {lr}" for m in ("signsgd", "ssdm") for lr in (0.01, 0.02)]
    colours = [{line.get_label(): line.get_color() for line in visible_lines(ax)} for ax in axes]
    assert colours[0] == colours[1]  # a group keeps its colour in every panel
    assert "averaged over seed" in fig._suptitle.get_text() and "lr" not in fig._suptitle.get_text()
    assert_one_line_error(cli("plot", res["sweep"], "--group-by", "method", "--facet", "method", "--out",
                              tmp_path / "f.png"), "--facet method")
    assert_one_line_error(cli("plot", res["sweep"], "--facet", "colour", "--out", tmp_path / "f.png"),
                          "--facet colour")
    r = cli("plot", res["sweep"], "--group-by", "method", "--facet", "lr", "--where", "workers=3", "--out",
            tmp_path / "facet.png")
    assert r.code == 0, r.err
    assert (tmp_path / "facet.png").stat().st_size > 1000


def test_mixing_problems_warns(cli, res, tmp_path):
    r = cli("plot", res["ros"], res["quad"], "--out", tmp_path / "mixed.png")
    assert r.code == 0, r.err
    assert "warning" in r.err and "rosenbrock" in r.err and "quadratic" in r.err
    fig = build([res["ros"], res["quad"]], None, None, None)
    assert "rosenbrock" in fig._suptitle.get_text() and "quadratic" in fig._suptitle.get_text()
    labels = [line.get_label() for line in visible_lines(fig.get_axes()[0])]
    assert labels[0].startswith("rosenbrock") and labels[1].startswith("quadratic")
    r = cli("plot", res["quad"], res["quad"], "--out", tmp_path / "same.png")
    assert r.code == 0 and "warning" not in r.err
    warned = []
    rows = _rows(res["sweep"])
    for r_ in rows:
        r_["problem"] = "rosenbrock" if int(r_["index"]) % 2 else "quadratic"
    from signsim.render.figures import sweep_lines

    sweep_lines(rows, ["method", "workers", "lr"], "method", "iter", "loss", warn=warned.append)
    assert warned and "different problems" in warned[0]


def test_bound_plot_draws_running_values(cli, res, tmp_path):
    out = tmp_path / "bound.json"
    r = cli("bound", "--overlay", res["single"], "--out", out, "--plot", tmp_path / "bound.png", "--quiet")
    assert r.code == 0, r.err
    doc = json.loads(out.read_text())
    run = json.loads(res["single"].read_text())
    row = next(b for b in doc["bounds"] if b["key"] == "signsgd-constant")
    assert row["matches_run"]
    series = row["observed_running"]
    track = [t for t in run["tracks"]["spb"] if t["iter"] < run["final"]["iters_done"]]  # k < K
    assert len(series) == len(track) and series[0]["K"] == 1
    expected = np.cumsum([t["rho_norm"] for t in track]) / np.arange(1, len(track) + 1)
    assert [p["value"] for p in series] == pytest.approx(expected.tolist())
    assert series[-1]["value"] == pytest.approx(row["observed"])
    fig = build([out], None, None, None)
    a1 = fig.get_axes()[0]
    observed = [line for line in visible_lines(a1) if line.get_label().startswith("this run")]
    assert observed and max(len(line.get_xdata()) for line in observed) == len(track)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    drawn = [line for line in visible_lines(a1) + visible_lines(fig.get_axes()[1])
             if np.isfinite(np.asarray(line.get_ydata(), dtype=float)).any()]
    assert len(labels) == len({line.get_label() for line in drawn})  # an entry only for what is drawn
    assert fig.legends[0].get_texts()[0].get_fontsize() >= 8


def _assert_legend_clear(fig):
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.get_axes() if ax.get_legend()]
    assert legends, "no legend"
    box = fig.bbox
    for leg in legends:
        lb = leg.get_window_extent(renderer)
        assert lb.x0 >= box.x0 - 1 and lb.x1 <= box.x1 + 1 and lb.y0 >= box.y0 - 1 and lb.y1 <= box.y1 + 1, \
            (lb, box)
        for ax in fig.get_axes():
            if ax.get_visible():
                assert not lb.overlaps(ax.get_window_extent(renderer)), "the legend covers an axes"
        for t in leg.get_texts():
            tb = t.get_window_extent(renderer)
            assert tb.x0 >= box.x0 - 1 and tb.x1 <= box.x1 + 1, f"clipped legend text {t.get_text()!r}"


def test_legends_are_outside_the_axes_and_inside_the_figure(res, tmp_path):
    from signsim.render.figures import runs_overview

    many = []
    for i, p in enumerate([res["quad"], res["single"], res["quad"], res["single"], res["quad"]]):
        d = json.loads(p.read_text())
        d["label"] = f"a deliberately long label number {i} with noise gaussian:1, lr = 0.01 and more words"
        many.append(d)
    for fig in (build([res["quad"], res["single"], res["ros"]], None, None, None),
                build([res["quad"], res["single"]], "megabytes", "loss", None),
                build([res["sweep"]], None, None, "method", facet="workers"),
                runs_overview(many)):
        _assert_legend_clear(fig)
    out = tmp_path / "bound.json"
    from signsim.cli import main

    with pytest.raises(SystemExit):
        main(["bound", "--overlay", str(res["single"]), "--out", str(out), "--quiet"])
    _assert_legend_clear(build([out], None, None, None))
    for command in ("check-spb", "diversity"):
        out = tmp_path / f"{command}.json"
        with pytest.raises(SystemExit):
            main([command, "--out", str(out), "--quiet"])
        _assert_legend_clear(build([out], None, None, None))


def test_x_y_on_single_figure_results_fail(cli, res, tmp_path):
    out = tmp_path / "spb.json"
    assert cli("check-spb", "--out", out, "--quiet").code in (0, 1)
    assert_one_line_error(cli("plot", out, "--y", "loss", "--out", tmp_path / "f.png"), "--x/--y")
    assert_one_line_error(cli("plot", out, "--group-by", "method", "--out", tmp_path / "f.png"), "--group-by")


def test_runs_the_label_does_not_tell_apart_get_distinct_labels(res, tmp_path):
    from signsim.cli import main

    other = tmp_path / "seed1.json"
    with pytest.raises(SystemExit):
        main(["run", "--problem", "quadratic", "--iters", "50", "--noise", "gaussian:1", "--seed", "1",
              "--out", str(other), "--quiet"])
    fig = build([res["quad"], other, res["quad"]], "iter", "loss", None)
    labels = [line.get_label() for line in visible_lines(fig.get_axes()[0])]
    assert len(set(labels)) == 3
    assert labels[1].endswith("seed = 1") and labels[0].endswith("seed = 0 (#1)") and labels[2].endswith("(#2)")
    assert len(fig.legends[0].get_texts()) == 3


def test_a_heatmap_panel_above_an_empty_slot_keeps_its_x_axis():
    """Issue 50 (a newcomer): with 5 methods in rows of 4, the panels above the last row's empty slots lost their
    x labels and tick labels (the axes are shared, and only the last row showed them)."""
    from signsim.render import figures

    methods = ["m1", "m2", "m3", "m4", "m5"]
    levels = [0.1, 1.0]
    cells = [{"method": m, "byzantine": f, "heterogeneity": h, "status": "ok", "worst": 0.5 + f + h, "attack": "alie",
              "complete": True} for m in methods for f in (0, 1) for h in levels]
    report = {"methods": methods, "byzantine": [0, 1], "metric": "loss", "worst": "highest", "cells": cells,
              "heterogeneity": {"values": levels, "option": "split"}, "attacks": ["alie"]}
    fig = figures.robustness_heatmap(report)
    fig.canvas.draw()
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.get_title() in methods]
    assert [ax.get_title() for ax in panels] == methods
    for ax in panels:
        shown = [t.get_text() for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
        below = methods.index(ax.get_title()) + 4 < len(methods)
        assert (ax.get_xlabel() == "split") == (not below), ax.get_title()
        assert bool(shown) == (not below), (ax.get_title(), shown)


def test_lines_drawn_over_each_other_stay_visible():
    """Issue 50 (a newcomer): lines with the same values hid each other in sweep and run figures; each line has
    its own style beside its colour, so the later one shows as dashes over the earlier."""
    import signsim
    from signsim.render import figures

    a = signsim.run(problem="quadratic", iters=20).to_dict()
    b = {**a, "config": {**a["config"], "seed": 1}}  # the same values under another name
    ax = figures.convergence([a, b], "iter", "loss").get_axes()[0]
    drawn = [line for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert len(drawn) == 2 and drawn[0].get_linestyle() != drawn[1].get_linestyle()
    assert list(drawn[0].get_ydata()) == list(drawn[1].get_ydata())
