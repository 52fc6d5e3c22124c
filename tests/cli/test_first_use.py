"""Issue 25: what a new user meets. Compile notices for every command that compiles (item 2), a diverged run
says so (item 5), and the smaller things of item 6 (titles, the missing-data message, --jobs, x0, one table
style)."""

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from ..cli.test_cli import assert_one_line_error
from ..cli.test_cli_help import _flat, _help

ROOT = Path(__file__).resolve().parents[2]


# --- compile notices -----------------------------------------------------------------------------------


def _kernel(module: str):
    """A tiny uncached Numba kernel that looks as if defined in ``module``."""
    from numba import njit

    def add_one(x):
        return x + 1

    fn = types.FunctionType(add_one.__code__, {"__name__": module}, "add_one")
    return njit(cache=False)(fn)


def test_watch_reports_the_first_compile_of_a_signsim_kernel_only():
    from signsim.commands.compile import watch

    calls = []
    ours, theirs = _kernel("signsim.fake"), _kernel("elsewhere")
    with watch(lambda name: calls.append(f"first {name}"), lambda busy: calls.append(busy)):
        theirs(1)  # not a signsim kernel (e.g. Numba's own typed containers): no notice
        assert calls == []
        ours(1)  # a cache miss: the notice, then busy around the compile
        ours(2)  # compiled already: nothing
        ours(2.5)  # a new signature compiles again: busy, but no second notice
    assert calls == ["first add_one", True, False, True, False]
    _kernel("signsim.fake")(1)
    assert calls == ["first add_one", True, False, True, False]  # the listener is gone after the block


@pytest.mark.slow
def test_a_diagnostic_says_it_compiles_with_an_empty_cache_and_not_with_a_warm_one(tmp_path):
    """check-spb compiled for minutes without a word (issue 25 item 2)."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    args = [sys.executable, "-m", "signsim.cli", "check-spb", "--problem", "sign-trap", "--estimator", "monte-carlo",
            "--samples", "64", "--json"]
    first = subprocess.run(args, capture_output=True, text=True, env=env, timeout=1200)
    assert first.returncode in (0, 1), first.stderr
    notices = [line for line in first.stderr.splitlines() if "compiling" in line]
    assert len(notices) == 1 and "analytic kernels (float64) for check-spb" in notices[0], first.stderr
    assert "signsim compile --command check-spb --family analytic" in notices[0]
    second = subprocess.run(args, capture_output=True, text=True, env=env, timeout=600)
    assert second.returncode == first.returncode and "compiling" not in second.stderr, second.stderr


def test_compile_selects_by_command_family_and_dtype(cli):
    from signsim.commands import compile as compiling

    every = compiling.warm_commands()
    picked = compiling.select(["check-spb"], ["mlp"])
    assert picked == [c for c in every if c[0] == "check-spb" and "mlp" in c] and len(picked) >= 2
    for family in ("analytic", "glm", "mlp"):  # the sampling estimators too (auto takes a closed form often)
        assert any("monte-carlo" in c for c in compiling.select(["check-spb"], [family])), family
        assert any("two-batch" in c for c in compiling.select(["diversity"], [family])), family
    float32 = compiling.select(None, None, "float32")
    assert float32 and all("float32" in c for c in float32)
    assert compiling.select() == every
    assert {c[0] for c in every} == set(compiling.COMMANDS)
    for args, words in ((("--family", "cnn"), ("--family cnn", "analytic, glm, mlp")),
                        (("--command", "sweep"), ("--command sweep", "bound")),
                        (("--dtype", "float16"), ("--dtype float16", "float32"))):
        assert_one_line_error(cli("compile", *args), *words)
    r = cli("compile", "--command", "bound")
    assert r.code == 0, r.err
    assert "signsim: 1 warm-up commands: about" in r.err and "compiled: 1 warm-up commands ran in" in r.err


def test_compile_estimates_every_group_it_runs(tmp_path, monkeypatch):
    from signsim.commands import compile as compiling

    every = compiling.warm_commands()
    import importlib.util

    # your own model's loop compiles ahead of time only where torch is installed
    groups = {g for g in compiling.SECONDS if g[1] != "external" or importlib.util.find_spec("torch")}
    assert {compiling.group(c) for c in every} == groups
    from signsim.engine import ledger

    monkeypatch.setattr(ledger, "root", lambda: tmp_path / ledger.FOLDER)  # nothing cached: every group counts
    assert compiling.estimate(every) == sum(compiling.SECONDS[g] + compiling.ASYNC_SECONDS.get(g, 0) for g in groups
                                            ) + sum(compiling.SERVER_SECONDS.values())
    assert set(compiling.SERVER_SECONDS) == set(compiling.DTYPES) and min(compiling.SERVER_SECONDS.values()) > 0
    assert compiling.estimate(compiling.select(["bound"])) == compiling.SECONDS[("bound", "analytic", "float64")]
    # the rounds' loop cached, the asynchronous one not: only the latter counts
    monkeypatch.setattr(compiling, "loop_is_cached",
                        lambda family="*", dtype=None, kernel=compiling.LOOP: kernel == compiling.LOOP)
    group = ("run", "analytic", "float64")
    assert compiling.estimate(compiling.select(["run"], ["analytic"], "float64")) == compiling.ASYNC_SECONDS[group]


def test_compile_warms_the_binomial_engine():
    """``--votes binomial`` compiled silently, and ``signsim compile`` did not compile it ahead of time."""
    from signsim.commands import compile as compiling
    from signsim.engine.binomial import BinomialEngine
    from signsim.engine.build import build
    from signsim.interface import config

    (args,) = [c for c in compiling.warm_commands() if "--votes" in c]
    options = dict(zip(args[1:-3:2], args[2:-3:2], strict=True))
    options = {k[2:].replace("-", "_"): int(v) if v.isdigit() else v for k, v in options.items()}
    assert isinstance(build(config.resolve(options)).engine, BinomialEngine)


def test_the_family_help_of_compile_names_every_problem():
    from typer.testing import CliRunner

    from signsim import problems
    from signsim.cli import app
    from signsim.engine.dispatch import family_of

    output = CliRunner().invoke(app, ["compile", "--help"], env={"COLUMNS": "200"}).output
    shown = " ".join(output.replace("│", " ").split())  # a narrower terminal wraps the help inside its box
    for name in problems.registry():
        family = family_of(problems.get(name).code)
        if family == name:
            assert f"| {family}" in shown
            continue
        assert f"{family} (" in shown and name in shown.split(f"{family} (", 1)[1].split(")")[0], name


def test_a_sweep_names_the_families_it_will_compile(tmp_path, monkeypatch):
    from signsim.commands.compile import sweep_notices

    p = tmp_path / "s.toml"
    p.write_text('iters = 2\n[grid]\nproblem = ["quadratic", "logistic"]\n')
    from signsim.engine import ledger

    monkeypatch.setattr(ledger, "root", lambda: tmp_path / "empty" / ledger.FOLDER)  # nothing cached
    lines = sweep_notices(p, tmp_path / "o")
    assert len(lines) == 2 and "analytic kernels (float64)" in lines[0] and "glm kernels (float64)" in lines[1]
    # the command it suggests is one that `signsim compile` takes (a sweep's runs compile run's kernels)
    assert "'signsim compile --command run --family glm'" in lines[1]


# --- a diverged run ------------------------------------------------------------------------------------


def test_a_diverged_run_says_so_on_stderr(cli):
    r = cli("run", "--method", "signsgd", "--compressor", "qsgd:4", "--aggregate", "median", "--quiet")
    assert r.code == 0
    (line,) = r.err.strip().splitlines()
    assert line.startswith("signsim: the run diverged at iteration 20 (loss 1.09e+292)"), r.err
    assert "diverged" not in cli("run", "--iters", "20", "--quiet").err


def test_a_diverged_variant_of_a_comparison_says_so(cli, tmp_path):
    p = tmp_path / "c.toml"
    p.write_text('method = "signsgd"\ncompressor = "qsgd:4"\niters = 40\n[[compare]]\nlabel = "mean"\n'
                 'aggregate = "mean"\n[[compare]]\nlabel = "median"\naggregate = "median"\n')
    r = cli("run", "--config", p, "--json")
    statuses = {d["label"]: d["status"] for d in r.json()["runs"]}
    diverged = [line for line in r.err.splitlines() if "diverged" in line]
    assert [line.split(": ")[1] for line in diverged] == [k for k, v in statuses.items() if v == "diverged"]
    assert statuses["median"] == "diverged"


# --- the smaller things --------------------------------------------------------------------------------


def test_figure_titles_name_a_point_after_a_run(cli, tmp_path):
    from signsim.commands.plot import build

    for command in ("check-spb", "diversity"):
        out = tmp_path / f"{command}.json"
        r = cli(command, "--at", "run:20", "--out", out, "--quiet")
        assert r.code in (0, 1), r.err
        title = build([out], None, None, None).get_axes()[0].get_title()
        assert "after 20 iterations" in title and "at after" not in title, title


def test_the_comparison_table_title_reads_as_words():
    from signsim.render.tables import comparison_table

    t = comparison_table({"comparison": {"budget_megabytes": 1.5, "rows": []}})
    assert not str(t.title).startswith("@") and "equal communication B = 1.5 MB" in str(t.title)


def test_a_missing_data_file_names_the_bundled_data_sets(cli):
    assert_one_line_error(cli("run", "--problem", "logistic", "--data", "mnist"), "--data mnist", "no such file",
                          "builtin:digits", "builtin:breast-cancer")


def test_the_reference_and_the_help_agree_on_jobs_for_a_local_dask_cluster():
    from signsim.sweep.executors import LOCAL_CLUSTER_JOBS

    (row,) = [line for line in (ROOT / "docs/reference.md").read_text().splitlines()
              if line.startswith("| `--jobs N` |")]
    assert f"`--executor dask --scheduler local`: {LOCAL_CLUSTER_JOBS}" in row
    shown = _flat(_help("sweep", "--help"))
    assert f"LocalCluster workers (default: {LOCAL_CLUSTER_JOBS})" in shown


@pytest.mark.parametrize(("problem", "x0"), [("sign-trap", 1.0), ("quadratic", 1.0), ("rosenbrock", 0.0),
                                             ("logistic", 0.0), ("least-squares", 0.0)])
def test_the_resolved_starting_point_is_recorded(cli, problem, x0):
    doc = cli("run", "--problem", problem, "--iters", "2", "--json").json()
    assert doc["config"]["x0"] == x0
    assert doc["history"][0]["loss"] is not None
    given = cli("run", "--problem", problem, "--iters", "2", "--x0", "0.5", "--json").json()
    assert given["config"]["x0"] == 0.5


def test_every_table_has_the_one_style(cli, tmp_path):
    from rich.console import Console

    from signsim.render import tables

    run = cli("run", "--iters", "20", "--json").json()
    spb = cli("check-spb", "--json").json()
    div = cli("diversity", "--json").json()
    bound = cli("bound", "--json").json()
    made = [tables.run_summary(run), *tables.listing({"problems": [("a", "b")]}), *tables.spb_report(spb),
            *tables.diversity_report(div), *tables.bound_report(bound)]
    made = [t for t in made if isinstance(t, tables.Table)]
    assert len(made) >= 6
    narrow = Console(width=40, file=open(os.devnull, "w"))  # noqa: SIM115
    for t in made:
        tables.emit(narrow, t)  # fitting a table to a narrow console keeps its style
        assert (t.box, t.show_edge, t.pad_edge) == (tables.STYLE["box"], False, False), t.title
