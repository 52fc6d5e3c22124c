"""The worst-case robustness benchmark (issue #32, item 5): a sweep file's ``[robustness]`` table, its expansion into
runs, the worst case over the attacks from results.csv, bad tables, and a tiny end-to-end sweep with its heatmap.
Fast tests run the quadratic in the analytic problems' one loop, in this process (no new kernels)."""

import csv
import json

import pytest

from signsim.errors import InputError
from signsim.sweep import robustness
from signsim.sweep.spec import expand, load

from ..cli.test_cli import assert_one_line_error

BASE = 'problem = "quadratic"\ndim = 5\nmethod = "sgd"\nworkers = 8\niters = 20\nlr = 0.05\n'
TABLE = """
[robustness]
aggregate = ["mean", "krum:f"]
pre_aggregate = ["none", "nnm:f"]
methods = [{ method = "signsgd", aggregate = "majority", lr = 0.01 }]
attack = ["alie", "invert"]
byzantine = [0, 2]
noise = ["gaussian:0.1", "gaussian:1"]
"""


def write(tmp_path, text, name="r.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_expansion_into_runs(tmp_path):
    spec = load(write(tmp_path, BASE + TABLE))
    tasks = expand(spec)
    # 5 methods x 2 noise levels x (1 run at f = 0 + 2 attacks at f = 2)
    assert len(tasks) == 5 * 2 * (1 + 2)
    assert [m["name"] for m in spec.robustness["methods"]] == [
        "mean", "nnm:f + mean", "krum:f", "nnm:f + krum:f", "signsgd lr=0.01 majority"]
    cfgs = [t.config for t in tasks]
    # a parameter written f is the run's number of Byzantine workers
    krum = [(c["byzantine"], c["aggregate"], c["pre_aggregate"]) for c in cfgs if c["aggregate"].startswith("krum")]
    assert set(krum) == {(0, "krum:0", "none"), (2, "krum:2", "none"), (0, "krum:0", "nnm:0"), (2, "krum:2", "nnm:2")}
    # f = 0: one run per method and level (no worker attacks); f = 2: one per attack
    assert sorted(c["attack"] for c in cfgs if c["byzantine"] == 0 and c["aggregate"] == "mean"
                  and c["pre_aggregate"] == "none") == ["alie", "alie"]
    assert sorted(c["attack"] for c in cfgs if c["byzantine"] == 2 and c["aggregate"] == "mean"
                  and c["pre_aggregate"] == "none") == ["alie", "alie", "invert", "invert"]
    # a method's own options, the others from the top level; every run the file's base otherwise
    assert {(c["method"], c["lr"]) for c in cfgs if c["aggregate"] == "majority"} == {("signsgd", 0.01)}
    assert {(c["method"], c["lr"]) for c in cfgs if c["aggregate"] != "majority"} == {("sgd", 0.05)}
    assert all(c["workers"] == 8 and c["iters"] == 20 and c["dim"] == 5 for c in cfgs)
    assert {c["noise"] for c in cfgs} == {"gaussian:0.1", "gaussian:1"}
    assert len({t.run_id for t in tasks}) == len(tasks)
    assert spec.robustness["heterogeneity"] == {"option": "noise", "values": ["gaussian:0.1", "gaussian:1"]}
    assert spec.robustness["metric"] == "loss" and spec.robustness["worst"] == "highest"
    assert robustness.substitute("nnm:f,bucketing:2,clip:f", 3) == "nnm:3,bucketing:2,clip:3"


INFO = {"metric": "test_acc", "worst": "lowest", "defaults": {}, "method_keys": ["aggregate"],
        "methods": [{"name": "mean", "options": {"aggregate": "mean"}},
                    {"name": "krum:f", "options": {"aggregate": "krum:f"}}],
        "attacks": ["alie", "ipm:0.1", "invert"], "byzantine": [0, 1],
        "heterogeneity": {"option": "split", "values": ["iid", "label-skew:0.1"]}}


def rows_for(runs):
    """A hand-made results.csv: each run (aggregate, f, split, attack, status, final test_acc, repeat) as two rows
    (iterations 0 and 10; the final value on the last)."""
    out = []
    for i, (agg, f, split, attack, status, acc, rep) in enumerate(runs):
        for it, value in ((0, 0.5), (10, acc)):
            out.append({"run_id": f"r{i}", "status": status, "aggregate": agg, "byzantine": str(f), "split": split,
                        "attack": attack, "repeat": str(rep), "iter": str(it),
                        "test_acc": "" if value is None else str(value)})
    return out


def test_worst_case_against_a_hand_made_table():
    runs = [
        ("mean", 0, "iid", "alie", "ok", 0.95, 0), ("mean", 0, "label-skew:0.1", "alie", "ok", 0.9, 0),
        ("mean", 1, "iid", "alie", "ok", 0.8, 0), ("mean", 1, "iid", "ipm:0.1", "ok", 0.7, 0),
        ("mean", 1, "iid", "invert", "ok", 0.7, 0),  # a tie with ipm: the attack listed first wins
        ("mean", 1, "label-skew:0.1", "alie", "ok", 0.6, 0), ("mean", 1, "label-skew:0.1", "alie", "ok", 0.4, 1),
        ("mean", 1, "label-skew:0.1", "ipm:0.1", "ok", 0.55, 0),  # repeats: alie's mean 0.5 is the worst
        ("mean", 1, "label-skew:0.1", "invert", "ok", 0.52, 0),
        ("krum:0", 0, "iid", "alie", "ok", 0.9, 0), ("krum:0", 0, "label-skew:0.1", "alie", "ok", 0.85, 0),
        ("krum:1", 1, "iid", "alie", "ok", 0.3, 0), ("krum:1", 1, "iid", "ipm:0.1", "diverged", 0.9, 0),
        ("krum:1", 1, "iid", "invert", "failed", None, 0),  # diverged and failed count as the worst: the first
        ("krum:1", 1, "label-skew:0.1", "alie", "ok", 0.8, 0), ("krum:1", 1, "label-skew:0.1", "invert", "ok", 0.9, 0),
        ("krum:1", 1, "label-skew:0.1", "ipm:0.1", "interrupted", 0.1, 0),  # not finished: left out, incomplete
        ("krum:1", 1, "label-skew:0.1", "alie", "ok", float("nan"), 1),  # a non-finite final value: diverged
    ]
    report = robustness.worst_case(rows_for(runs), INFO)
    cells = {(c["method"], c["byzantine"], c["heterogeneity"]): c for c in report["cells"]}
    assert len(cells) == 2 * 2 * 2
    c = cells["mean", 0, "iid"]
    assert (c["worst"], c["attack"], c["status"], c["complete"]) == (0.95, "none", "ok", True)
    c = cells["mean", 1, "iid"]
    assert (c["worst"], c["attack"]) == (0.7, "ipm:0.1")
    assert c["per_attack"] == {"alie": 0.8, "ipm:0.1": 0.7, "invert": 0.7}
    c = cells["mean", 1, "label-skew:0.1"]
    assert (c["worst"], c["attack"]) == (pytest.approx(0.5), "alie")
    c = cells["krum:f", 1, "iid"]
    assert (c["worst"], c["attack"], c["status"]) == (None, "ipm:0.1", "diverged")
    assert c["per_attack"] == {"alie": 0.3, "ipm:0.1": "diverged", "invert": "failed"}
    c = cells["krum:f", 1, "label-skew:0.1"]
    assert (c["attack"], c["status"], c["complete"]) == ("alie", "diverged", False)
    assert c["per_attack"]["ipm:0.1"] == "missing"
    overall = {o["method"]: o for o in report["overall"]}
    assert (overall["mean"]["worst"], overall["mean"]["attack"], overall["mean"]["byzantine"],
            overall["mean"]["heterogeneity"], overall["mean"]["complete"]) == (
        pytest.approx(0.5), "alie", 1, "label-skew:0.1", True)
    # two diverged cells: the smaller f, then the earlier level, takes the tie
    assert (overall["krum:f"]["status"], overall["krum:f"]["heterogeneity"], overall["krum:f"]["complete"]) == (
        "diverged", "iid", False)
    text = robustness.to_csv(report)
    table = list(csv.DictReader(text.splitlines()))
    assert len(table) == 8 + 2 and table[-1]["byzantine"] == "all" and table[-2]["worst_split"] == "label-skew:0.1"
    assert table[2]["test_acc[ipm:0.1]"] == "0.7"
    # a metric the runs did not record: one line naming it
    with pytest.raises(InputError, match="no column 'test_acc'"):
        robustness.worst_case([{k: v for k, v in r.items() if k != "test_acc"} for r in rows_for(runs)], INFO)
    # a loss: the highest is the worst
    loss = robustness.worst_case([{**r, "loss": r["test_acc"]} for r in rows_for(runs[:5])],
                                 {**INFO, "metric": "loss", "worst": "highest"})
    assert {(c["byzantine"], c["heterogeneity"]): c["attack"] for c in loss["cells"] if c["method"] == "mean"
            and c["status"] == "ok"} == {(0, "iid"): "none", (0, "label-skew:0.1"): "none", (1, "iid"): "alie"}


@pytest.mark.parametrize(("table", "words"), [
    ("[robustness]\nattack = ['alie']\nbyzantine = [1]\n", ("'aggregate'", "'methods'")),
    ("[robustness]\naggregate = ['mean']\nbyzantine = [1]\n", ("'attack'", "required")),
    ("[robustness]\naggregate = ['mean']\nattack = []\nbyzantine = [1]\n", ("'attack'", "non-empty")),
    ("[robustness]\naggregate = ['mean']\nattack = ['alie', 'alie']\nbyzantine = [1]\n", ("'alie'", "twice")),
    ("[robustness]\naggregate = ['mean']\nattack = ['alie']\nbyzantine = [1]\nmetric = 'f1'\n", ("'metric'",)),
    ("[robustness]\naggregate = ['mean']\nattack = ['alie']\nbyzantine = [1]\nmetric = ['loss']\n", ("'metric'",)),
    ("[robustness]\naggregate = ['mean']\nattack = ['alie']\nbyzantine = [1]\nnoise = ['none']\nkappa = [2.0]\n",
     ("one heterogeneity option",)),
    ("[robustness]\naggregate = ['mean']\nattack = ['alie']\nbyzantine = [1]\ncolour = [1]\n", ("colour",)),
    ("[robustness]\naggregate = ['mean']\nattack = ['alie']\nbyzantine = ['x']\n", ("byzantine", "integer")),
    ("[robustness]\nmethods = [{attack = 'inf'}]\nattack = ['alie']\nbyzantine = [1]\n", ("may not set", "attack")),
    ("[robustness]\nmethods = [{aggregate = 'mean'}, {aggregate = 'mean'}]\nattack = ['alie']\nbyzantine = [1]\n",
     ("'mean'", "twice")),
    ("[robustness]\nmethods = [3]\nattack = ['alie']\nbyzantine = [1]\n", ("'methods'", "inline tables")),
    ("byzantine = 1\n[robustness]\naggregate = ['mean']\nattack = ['alie']\nbyzantine = [1]\n",
     ("'byzantine'", "top-level")),
    ("[grid]\nlr = [0.1]\n[robustness]\naggregate = ['mean']\nattack = ['alie']\nbyzantine = [1]\n",
     ("[grid]", "hyperparameters")),
    ("[robustness]\naggregate = ['mean']\nattack = ['teleport']\nbyzantine = [1]\n", ("teleport",)),
    ("[robustness]\naggregate = ['krum:f']\nattack = ['alie']\nbyzantine = [1, 9]\n", ("byzantine",)),
    ("robustness = 3\n", ("[robustness]", "table")),
    # a metric the problem's runs do not record: found before the first run, not after the last
    ("[robustness]\naggregate = ['mean']\nattack = ['alie']\nbyzantine = [1]\nmetric = 'test_acc'\n",
     ("metric 'test_acc'", "quadratic", "loss")),
])
def test_bad_tables_exit_2_with_one_line(cli, tmp_path, table, words):
    p = write(tmp_path, 'problem = "quadratic"\nworkers = 6\niters = 5\n' + table)
    assert_one_line_error(cli("sweep", p, "--out", tmp_path / "o", "--dry-run"), *words)


class InProcess:
    """An executor that runs each task in this process (the sweep's executors start worker processes)."""

    name = "in-process"

    def describe(self):
        return {"name": self.name}

    def run(self, tasks, runner):
        from signsim.sweep.worker import execute

        for t in tasks:
            yield t["index"], execute(t, runner)

    def drain(self):
        return iter(())

    def close(self, kill=False):
        pass


def test_tiny_sweep_end_to_end_with_its_figure(tmp_path):
    from signsim.commands.plot import load_any, plot
    from signsim.commands.sweep import sweep
    from signsim.render.tables import sweep_summary

    p = write(tmp_path, BASE.replace("iters = 20", "iters = 10") + """
[robustness]
aggregate = ["mean", "median"]
attack = ["invert", "ipm:0.5"]
byzantine = [0, 1]
noise = ["gaussian:0.1", "gaussian:1"]
""")
    out = tmp_path / "out"
    doc = sweep(p, out, InProcess())
    assert doc["runs"] == 2 * 2 * 3 and doc["statuses"] == {"ok": 12}
    report = doc["robustness"]
    written = json.loads((out / "robustness.json").read_text())
    assert written.pop("command") == "sweep-robustness" and written == json.loads(json.dumps(report))
    assert len(report["cells"]) == 2 * 2 * 2 and all(c["complete"] for c in report["cells"])
    assert {c["attack"] for c in report["cells"] if c["byzantine"] == 1} <= {"invert", "ipm:0.5"}
    table = list(csv.DictReader((out / "robustness.csv").read_text().splitlines()))
    assert [r["method"] for r in table[-2:]] == ["mean", "median"] and table[0]["noise"] == "gaussian:0.1"
    assert json.loads((out / "manifest.json").read_text())["robustness"]["attacks"] == ["invert", "ipm:0.5"]
    # the report is results.csv's: computed again from the file, the same
    again = robustness.worst_case(robustness.read_rows(out / "results.csv"),
                                  json.loads((out / "manifest.json").read_text())["robustness"])
    assert again == json.loads(json.dumps(report))
    assert any("worst final loss" in str(getattr(t, "title", "")) for t in sweep_summary(doc))
    # plot DIR chooses the heatmap for such a sweep (with --group-by and the like, the ordinary sweep figures: the
    # slow test below)
    assert load_any(out)[0] == "robustness"
    assert plot([out], tmp_path / "h.png").stat().st_size > 0


@pytest.mark.slow  # the shipped small benchmark through the CLI, worker processes and the GLM's loop
def test_the_small_benchmark_through_the_cli(tmp_path):
    from ..conftest import run_subprocess

    out = tmp_path / "small"
    # the GLMs' one loop, as the suite sets it (SIGNSIM_LOOP), else each composition compiles its own
    env = {"SIGNSIM_LOOP": "analytic,glm"}
    r = run_subprocess("sweep", "configs/sweeps/robustness-small.toml", "--out", out, "--jobs", "2", env=env,
                       timeout=900)
    assert r.code == 0, r.err
    assert "worst final test_acc" in r.err
    report = json.loads((out / "robustness.json").read_text())
    assert len(report["overall"]) == 8 and all(o["complete"] for o in report["overall"])
    for args in ((), ("--group-by", "aggregate", "--where", "split=iid")):
        r = run_subprocess("plot", out, "--out", tmp_path / "h.png", *args)
        assert r.code == 0, r.err
        assert (tmp_path / "h.png").is_file()
