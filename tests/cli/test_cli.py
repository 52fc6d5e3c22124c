"""The command line: outputs, config files, bad input (exit 2, one line, no traceback), imports."""

import json
import subprocess
import sys

import pytest

from ..conftest import run_subprocess

FAST = ("--iters", "50")


def assert_one_line_error(r, *words):
    assert r.code == 2, (r.code, r.err)
    lines = [line for line in r.err.strip().splitlines() if line]
    assert len(lines) == 1, r.err
    assert "Traceback" not in r.err
    for w in words:
        assert w in lines[0], (w, lines[0])


def test_run_json_has_the_contract_fields(cli):
    r = cli("run", "--method", "ssdm", "--workers", "4", *FAST, "--json")
    assert r.code == 0, r.err
    doc = r.json()
    for key in ("signsim_version", "config", "history", "final", "status"):
        assert key in doc
    assert doc["status"] == "ok"
    assert doc["config"]["seed"] == 0 and doc["config"]["method"] == "ssdm" and doc["config"]["workers"] == 4
    for key in ("iter", "loss", "grad_norm", "bits_up", "bits_down"):
        assert key in doc["history"][0]
    assert doc["history"][-1]["iter"] == 50
    assert doc["final"]["wall_time"] > 0


def test_default_main_job_makes_clear_progress(cli):
    r = cli("run", "--method", "ssdm", "--workers", "32", "--json")
    doc = r.json()
    assert doc["final"]["loss"] < 0.05 * doc["history"][0]["loss"]


def test_config_file_and_flag_override(cli, tmp_path):
    cfg = tmp_path / "run.toml"
    cfg.write_text('method = "signum"\nworkers = 3\nbatch-size = 2\nmomentum = 0.5\niters = 20\n')
    doc = cli("run", "--config", cfg, "--workers", "5", "--json").json()
    c = doc["config"]
    assert (c["method"], c["workers"], c["batch_size"], c["momentum"], c["iters"]) == ("signum", 5, 2, 0.5, 20)


def test_same_seed_same_result_other_seed_differs(cli):
    a = cli("run", *FAST, "--seed", "3", "--json").json()
    b = cli("run", *FAST, "--seed", "3", "--json").json()
    c = cli("run", *FAST, "--seed", "4", "--json").json()
    assert a["history"] == b["history"]
    assert a["history"] != c["history"]


def test_out_plot_and_quiet(cli, tmp_path):
    out, fig = tmp_path / "res" / "run.json", tmp_path / "run.png"
    r = cli("run", *FAST, "--out", out, "--plot", fig, "--quiet")
    assert r.code == 0 and r.out == "" and r.err == ""
    assert json.loads(out.read_text())["status"] == "ok"
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(out.parent.glob(".*.tmp"))


def test_human_output_goes_to_stderr(cli):
    r = cli("run", *FAST)
    assert r.code == 0 and r.out == ""
    assert "loss" in r.err and "bits up" in r.err


def test_ssdm_on_heterogeneous_problem_warns(cli):
    r = cli("run", "--problem", "vote-trap", "--method", "ssdm", *FAST, "--json")
    assert r.code == 0
    assert "v6" in r.err
    assert any("v6" in w for w in r.json()["warnings"])


def test_list_names_everything(cli):
    r = cli("list")
    assert r.code == 0
    from signsim import data, methods, noise, problems
    from signsim.data.splits import SUMMARIES

    for name in (*problems.registry(), *methods.registry(), *noise.registry(), *data.registry(), *SUMMARIES):
        assert name in r.out
    # every kind of stage (the table of kinds), each under its option, with every built-in stage's name
    from signsim.stages import kinds, registry

    lines = r.out.splitlines()
    for kind in kinds.PRIMARY:
        title = kind.title[0].lower() + kind.title[1:].replace("`", "")
        at = lines.index(title)
        end = lines.index("", at)  # a blank line ends the section
        names = {line.split()[0].split("[")[0].split(":")[0] for line in lines[at + 1:end] if line[:1].strip()}
        assert set(registry.builtin(kind.name)) <= names, kind.name


@pytest.mark.parametrize(("args", "words"), [
    (("--method", "adam"), ("--method", "adam")),
    (("--problem", "nope"), ("--problem", "nope")),
    (("--workers", "0"), ("--workers",)),
    (("--lr", "-0.1"), ("--lr",)),
    (("--lr", "nan"), ("--lr",)),
    (("--momentum", "1.0"), ("--momentum",)),
    (("--iters", "-1"), ("--iters",)),
    (("--batch-size", "0"), ("--batch-size",)),
    (("--byzantine", "9", "--workers", "4"), ("--byzantine",)),
    (("--noise", "gaussian"), ("--noise",)),
    (("--noise", "levy:1"), ("--noise", "levy")),
    (("--kappa", "10"), ("--kappa", "rosenbrock")),
    (("--problem", "sign-trap", "--dim", "5"), ("--dim", "sign-trap")),
    (("--problem", "vote-trap", "--workers", "4"), ("--workers", "vote-trap")),
    (("--method", "ef-signsgd", "--aggregate", "majority"), ("--aggregate", "ef-signsgd")),
    (("--aggregate", "mode"), ("--aggregate",)),
    (("--sign-zero", "minus"), ("--sign-zero",)),
    (("--tie", "left"), ("--tie",)),
    (("--attack", "collude"), ("--attack",)),
    (("--lr-schedule", "cosine"), ("--lr-schedule",)),
    (("--oracle", "half"), ("--oracle",)),
    (("--workers", "many"), ("--workers",)),
    (("--no-such-flag",), ("--no-such-flag",)),
    (("--plot", "fig.txt"), ("--plot",)),
    (("--config", "/nonexistent/run.toml"), ("--config", "/nonexistent/run.toml")),
])
def test_bad_input_exits_2_with_one_line(cli, args, words):
    assert_one_line_error(cli("run", *args), *words)


@pytest.mark.parametrize(("text", "words"), [
    ("method = \n", ("not valid TOML",)),
    ("workers = 'four'\n", ("workers", "integer")),
    ("lr = 'fast'\n", ("lr", "number")),
    ("colour = 'red'\n", ("colour",)),
    ("workers = 0\n", ("'workers' 0", "bad.toml")),
])
def test_bad_config_file_exits_2(cli, tmp_path, text, words):
    p = tmp_path / "bad.toml"
    p.write_text(text)
    assert_one_line_error(cli("run", "--config", p), *words)


def test_binary_config_file_exits_2(cli, tmp_path):
    p = tmp_path / "bin.toml"
    p.write_bytes(b"\xff\xfe\x00garbage")
    assert_one_line_error(cli("run", "--config", p), str(p))


def test_help_does_not_import_heavy_modules():
    """Nor a stage module: the stage options' help lists come from the generated catalog (plain data)."""
    code = (
        "import sys\nfrom signsim.cli import main\n"
        "for args in (['--help'], ['run', '--help']):\n"
        "    try:\n        main(args)\n    except SystemExit:\n        pass\n"
        "print([m for m in ('numba', 'matplotlib', 'numpy', 'scipy') if m in sys.modules]"
        " + [m for m in sys.modules if m.startswith('signsim.stages.') and m.count('.') > 2])"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().splitlines()[-1] == "[]"


def test_console_script_runs_without_arguments():
    r = run_subprocess()
    assert r.code == 0 and "run" in r.out


@pytest.mark.parametrize(("name", "argv0", "entry"), [
    ("signsim.cli", "/venv/bin/signsim", True),
    ("signsim.cli", "/src/signsim/__main__.py", True),  # python -m signsim (it was missed: a late Ctrl-C gave -2)
    ("__main__", "/src/signsim/cli.py", True),  # python -m signsim.cli
    ("signsim.cli", "/usr/bin/pytest", False),
    ("signsim.cli", "/src/other/__main__.py", False),
    ("signsim.cli", "", False),
])
def test_the_command_knows_it_is_the_command(name, argv0, entry):
    """Only the command itself installs the early signal handlers and leaves with os._exit after an interrupt;
    a program importing signsim keeps its own."""
    from signsim.cli import _is_entry

    assert _is_entry(name, argv0) is entry
