"""Sweeps: expansion, stable ids, identical results across executors, resume, failures, bad files."""

import json

import pytest

from signsim.sweep.spec import expand, load, repeat_seeds

from ..cli.test_cli import assert_one_line_error

SMOKE = "configs/sweeps/ci-smoke.toml"


def write(tmp_path, text, name="s.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_grid_and_zip_expansion(tmp_path):
    p = write(tmp_path, 'problem = "quadratic"\niters = 5\nseed = 7\nrepeats = 2\n[grid]\nmethod = ["signsgd", "sgd"]\n'
                        'workers = [1, 3, 5]\n[[zip]]\nlr = [0.1, 0.01]\nlr-schedule = ["constant", "sqrt"]\n')
    tasks = expand(load(p))
    assert len(tasks) == 2 * 3 * 2 * 2
    combos = {(t.params["method"], t.params["workers"], t.params["lr"], t.params["lr_schedule"]) for t in tasks}
    assert len(combos) == 12
    assert all((t.params["lr"], t.params["lr_schedule"]) in {(0.1, "constant"), (0.01, "sqrt")} for t in tasks)
    seeds = repeat_seeds(7, 2)
    assert [t.params["seed"] for t in tasks[:2]] == seeds and seeds[0] != seeds[1]
    assert all(t.config["iters"] == 5 for t in tasks)


def test_run_ids_are_stable_and_distinct(tmp_path):
    a = [t.run_id for t in expand(load(SMOKE))]
    b = [t.run_id for t in expand(load(SMOKE))]
    assert a == b and len(set(a)) == len(a)
    # the id depends on the resolved config, not on the file's spelling
    with open(SMOKE) as f:
        p = write(tmp_path, f.read().replace("iters = 300", "iters = 300\n# comment"))
    assert [t.run_id for t in expand(load(p))] == a


def strip_timings(doc):
    doc = json.loads(json.dumps(doc))
    doc["final"].pop("wall_time", None)
    return doc


def run_docs(root):
    return {p.name: strip_timings(json.loads(p.read_text())) for p in sorted((root / "runs").glob("*.json"))}


@pytest.mark.slow  # the same sweep through three executors, a local Dask cluster among them (6-8 s); .ci/run runs it
def test_identical_results_across_executors(cli, tmp_path):
    roots = []
    for name, args in (("one", ("--jobs", "1")), ("two", ("--jobs", "2")),
                       ("dask", ("--executor", "dask", "--scheduler", "local", "--jobs", "2"))):
        root = tmp_path / name
        r = cli("sweep", SMOKE, "--out", root, *args, "--quiet")
        assert r.code == 0, r.err
        roots.append(root)
    csvs = [(r / "results.csv").read_bytes() for r in roots]
    assert csvs[0] == csvs[1] == csvs[2]
    docs = [run_docs(r) for r in roots]
    assert len(docs[0]) == 12 and docs[0] == docs[1] == docs[2]
    manifests = [json.loads((r / "manifest.json").read_text()) for r in roots]
    for m in manifests:
        m.pop("executor")
    assert manifests[0] == manifests[1] == manifests[2]
    assert manifests[0]["seeds"] == repeat_seeds(0, 2) and manifests[0]["signsim_version"]


def test_resume_runs_only_what_is_missing(cli, tmp_path):
    root = tmp_path / "r"
    first = cli("sweep", SMOKE, "--out", root, "--jobs", "2", "--json").json()
    assert first["ran"] == 12 and first["skipped"] == 0
    files = sorted((root / "runs").glob("*.json"))
    before = {p.name: p.read_text() for p in files}
    for p in files[:3]:
        p.unlink()  # as if the sweep had stopped before these
    interrupted = json.loads(files[3].read_text())
    interrupted["status"] = "interrupted"
    files[3].write_text(json.dumps(interrupted))
    second = cli("sweep", SMOKE, "--out", root, "--jobs", "2", "--json").json()
    assert second["ran"] == 4 and second["skipped"] == 8
    after = {p.name: p.read_text() for p in sorted((root / "runs").glob("*.json"))}
    assert set(after) == set(before)
    for name in list(before)[4:]:
        assert after[name] == before[name]  # finished runs were not touched
    assert cli("sweep", SMOKE, "--out", root, "--json").json()["ran"] == 0


def test_invalid_runs_exit_2_before_any_work_and_failing_runs_are_recorded(cli, tmp_path):
    p = write(tmp_path, 'iters = 20\n[grid]\nproblem = ["vote-trap", "least-squares"]\nworkers = [3, 4]\n')
    r = cli("sweep", p, "--out", tmp_path / "out", "--jobs", "2", "--json")
    assert r.code == 2 and "--workers 4" in r.err  # checked before the first run: nothing ran
    assert not list((tmp_path / "out").glob("runs/*.json"))
    # a run refused only at its turn (its memory estimate exceeds the machine) is recorded; the rest finish
    q = write(tmp_path, 'problem = "rosenbrock"\niters = 5\n[grid]\nworkers = [3, 2000000000]\n', name="q.toml")
    r2 = cli("sweep", q, "--out", tmp_path / "out2", "--jobs", "1", "--json")
    assert r2.code == 1 and r2.json()["statuses"] == {"ok": 1, "failed": 1}
    statuses = (tmp_path / "out2" / "results.csv").read_text()
    assert ",failed," in statuses and ",ok," in statuses


@pytest.mark.parametrize(("text", "words"), [
    ("[grid\nmethod = 1", ("not valid TOML",)),
    ("[grid]\nmethod = 'sgd'\n", ("'method'", "list")),
    ("[grid]\ncolour = [1]\n", ("colour",)),
    ("[grid]\nworkers = ['x']\n", ("workers", "integer")),
    ("[[zip]]\nlr = [0.1, 0.2]\nmomentum = [0.5]\n", ("equal lengths",)),
    ("repeats = 0\n", ("repeats",)),
    ("repeats = 2\n[grid]\nseed = [1, 2]\n", ("seed", "repeats")),
    ("[grid]\nlr = [0.1]\n[[zip]]\nlr = [0.2]\n", ("'lr'", "more than one place")),
])
def test_malformed_sweep_files_exit_2(cli, tmp_path, text, words):
    p = write(tmp_path, text)
    assert_one_line_error(cli("sweep", p, "--out", tmp_path / "o"), *words)


def test_bad_executor_options_exit_2(cli, tmp_path):
    assert_one_line_error(cli("sweep", SMOKE, "--executor", "ray"), "--executor")
    assert_one_line_error(cli("sweep", SMOKE, "--executor", "dask"), "--scheduler")
    assert_one_line_error(cli("sweep", SMOKE, "--jobs", "0", "--out", tmp_path / "o"), "--jobs")
    assert_one_line_error(cli("sweep", tmp_path / "missing.toml"), "missing.toml")


def test_dry_run_lists_runs(cli):
    r = cli("sweep", SMOKE, "--dry-run", "--json")
    doc = r.json()
    assert r.code == 0 and len(doc["runs"]) == 12 and doc["runs"][0]["params"]["method"] == "signsgd"


def test_a_grid_over_seeds_names_each_column_once(cli, tmp_path):
    p = write(tmp_path, 'problem = "quadratic"\niters = 2\n[grid]\nseed = [1, 2]\n')
    assert cli("sweep", p, "--out", tmp_path / "o", "--jobs", "1").code == 0
    lines = (tmp_path / "o" / "results.csv").read_text().splitlines()
    header = lines[0].split(",")
    assert len(header) == len(set(header)) and header.count("seed") == 1
    seeds = {row.split(",")[header.index("seed")] for row in lines[1:]}
    assert seeds == {"1", "2"}
