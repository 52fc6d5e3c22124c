"""The command line's help (text as written, defaults, flags, --version, -h, completion) and its tables when
piped at 80 columns."""

import re
import subprocess
import sys
from importlib.metadata import version

import pytest
import typer
from typer.testing import CliRunner

from signsim.cli import app

BOX = re.compile(r"[│╭╮╰╯─┃┏┓┗┛━]")
RUNNER = CliRunner()


def _command():
    return typer.main.get_command(app)


def _commands():
    group = _command()
    return {name: group.get_command(None, name) for name in group.list_commands(None)}


def _flat(text: str) -> str:
    """Help output without panel borders and with whitespace normalised (wrapped lines joined)."""
    return " ".join(BOX.sub(" ", text).split())


def _help(*args: str, columns: int = 80) -> str:
    r = RUNNER.invoke(app, [*args], env={"COLUMNS": str(columns), "TERMINAL_WIDTH": str(columns)})
    assert r.exit_code == 0, r.output
    return r.output


def _literal(help_text: str) -> str:
    """The help string as the user should read it (the source escapes Rich markup brackets)."""
    return " ".join(help_text.replace("\\[", "[").split())


@pytest.mark.parametrize("name", sorted(_commands()))
@pytest.mark.parametrize("columns", [80, 200])
def test_help_shows_every_option_help_as_written(name, columns):
    command = _commands()[name]
    shown = _flat(_help(name, "--help", columns=columns))
    assert _literal(command.help) in shown
    for param in command.params:
        text = getattr(param, "help", None)
        if text:
            assert _literal(text) in shown, (name, param.name, _literal(text))


def test_help_keeps_the_bracketed_words():
    assert "run options plus [grid], [[zip]], repeats" in _flat(_help("sweep", "--help"))
    plot = _flat(_help("plot", "--help"))
    assert "run JSONs (or the result of a config with compare variants)" in plot
    assert "[1, kappa]" in _flat(_help("run", "--help"))


def test_top_level_help_lists_commands_and_options():
    shown = _flat(_help("--help"))
    group = _command()
    assert _literal(group.help) in shown
    for name in _commands():
        assert name in shown
    for option in ("--version", "--install-completion", "--show-completion", "-h"):
        assert option in shown


@pytest.mark.parametrize("name", sorted(_commands()))
def test_short_h_is_help_and_flags_show_no_type(name):
    text = _help(name, "-h")
    assert "Usage:" in text and name in text
    assert "<bool>" not in text
    assert text == _help(name, "--help")


def test_top_level_flags_show_no_type():
    assert "<bool>" not in _help("--help")


def test_version():
    r = RUNNER.invoke(app, ["--version"])
    assert r.exit_code == 0
    assert r.output.strip() == f"signsim {version('signsim')}"


def test_version_from_the_console_entry():
    p = subprocess.run([sys.executable, "-m", "signsim.cli", "--version"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert version("signsim") in p.stdout


def test_completion_options():
    import os

    env = {**os.environ, "SHELL": "/bin/bash"}
    # two commands, so that bash runs the second as its child (not exec'd): the shell Typer detects by its parent
    p = subprocess.run(["bash", "-c", f"'{sys.executable}' -m signsim.cli --show-completion; exit $?"],
                       capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    assert "_signsim_completion" in p.stdout


@pytest.mark.parametrize("name,problem", [("run", "rosenbrock"), ("bound", "rosenbrock"),
                                          ("check-spb", "logistic"), ("diversity", "logistic")])
def test_each_command_shows_its_own_problem_default(name, problem):
    shown = _flat(_help(name, "--help"))
    assert f"mlp (default: {problem})" in shown
    assert "(default: 2000)" in shown  # --iters (or --samples)


def test_defaults_are_shown():
    shown = _flat(_help("run", "--help"))
    for text in ("iterations K (default: 2000)", "number of workers M (default: 8", "random seed (default: 0)",
                 "(signsim list; default: ssdm)"):
        assert text in shown
    assert "minibatch size tau per worker (default: 1)" in _flat(_help("check-spb", "--help"))


@pytest.mark.parametrize("name", ["check-spb", "diversity", "bound"])
def test_track_options_only_on_run(name):
    shown = _help(name, "--help", columns=200)
    assert "--track-spb" not in shown and "--track-diversity" not in shown
    assert "--track-spb" in _help("run", "--help", columns=200)


def test_jobs_help_says_what_the_code_does():
    shown = _flat(_help("sweep", "--help"))
    assert "core count / 2" not in shown
    assert "the number of cores this process may use" in shown


def test_plot_x_lists_every_axis():
    from signsim.render.figures import FINAL_AXES, X_AXES

    command = _commands()["plot"]
    x_help = next(p.help for p in command.params if p.name == "x")
    for axis in (*X_AXES, *FINAL_AXES):
        assert re.search(rf"(^|[ |(]){re.escape(axis)}($|[ |)])", x_help), axis


# --- tables when piped at 80 columns ----------------------------------------------------------------------

BAD = ("(d =\n", "tau =\n", "M =\n", "SPB at after", " bit)", "…", "gamma_0/sqrt(…")


def _piped(*args: str, columns: int = 80) -> str:
    """stdout + stderr of ``signsim ARGS`` run with both piped (not a terminal) and COLUMNS set."""
    import os

    env = {**os.environ, "COLUMNS": str(columns)}
    env.pop("FORCE_COLOR", None)
    p = subprocess.run([sys.executable, "-m", "signsim.cli", *args], capture_output=True, text=True, timeout=300,
                       env=env, stdin=subprocess.DEVNULL)
    assert p.returncode in (0, 1), p.stderr
    # the compile notice (a cold kernel cache) is one line by design, not a table
    return p.stdout + "".join(line for line in p.stderr.splitlines(keepends=True)
                              if not line.startswith("signsim: compiling "))


def _assert_readable(text: str, width: int = 80) -> None:
    assert text.strip()
    for line in text.splitlines():
        assert line == line.rstrip(), repr(line)
        assert len(line) <= width, line
    for bad in BAD:
        assert bad not in text, (bad, text)


@pytest.fixture(scope="module")
def run_json(tmp_path_factory):
    path = tmp_path_factory.mktemp("piped") / "run.json"
    _piped("run", "--iters", "100", "--out", str(path), "-q")
    return path


#: a second variant of a command's table (a wider vector, another estimator, a split) starts its own process of
#: 2-5 s: in the slow step (``.ci/run``); each command's table is checked in the fast suite
SECOND = pytest.mark.slow


@pytest.mark.parametrize("args", [
    ("run", "--iters", "50"),
    pytest.param(("run", "--iters", "50", "--dim", "2000", "--workers", "3"), marks=SECOND),
    ("list",),
    ("check-spb",),
    pytest.param(("check-spb", "--estimator", "monte-carlo", "--samples", "100", "--workers", "3", "--split", "iid"),
                 marks=SECOND),
    ("bound",),
    ("diversity",),
    pytest.param(("diversity", "--workers", "4", "--split", "label-skew:0.5", "--transform", "sign"), marks=SECOND),
])
def test_piped_tables_fit_80_columns(args):
    _assert_readable(_piped(*args))


def test_piped_without_columns_nothing_is_wrapped():
    """Issue 50 (a newcomer): piped to a file without COLUMNS, check-spb wrapped its words at an assumed 80 columns;
    each row and each note is one whole line there (COLUMNS, when set, is the width: the test above)."""
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR")}
    p = subprocess.run([sys.executable, "-m", "signsim.cli", "check-spb"], capture_output=True, text=True,
                       timeout=300, env=env, stdin=subprocess.DEVNULL)
    assert p.returncode in (0, 1), p.stderr
    lines = p.stderr.splitlines()
    assert any(re.fullmatch(r"sampling +shared: every worker samples all \d+ rows uniformly", line) for line in lines)
    note = next(line for line in lines if line.startswith("l^{1,2}: not a bound"))
    assert note.endswith("(and unbiased for every worker)"), note
    assert all(line == line.rstrip() for line in lines)


def test_piped_bound_overlay_fits_80_columns(run_json):
    text = _piped("bound", "--overlay", str(run_json))
    _assert_readable(text)
    assert "gamma_k=gamma_0/sqrt(k+1)" in text  # the label wraps at its spaces, never inside a word


def test_spb_after_a_run_reads_well():
    text = _piped("check-spb", "--at", "run:50")
    _assert_readable(text)
    assert "SPB after 50 iterations of ssdm: logistic (d = 31)" in text


def test_wider_terminal_keeps_one_line_titles(run_json):
    text = _piped("bound", "--overlay", str(run_json), columns=200)
    assert "majority vote: E<g, vote> / ||g||_1 at init (closed-form, sampling identical, min rho =" in text
    assert not [line for line in text.splitlines() if line != line.rstrip()]


def test_wrap_title_breaks_only_between_expressions():
    from signsim.render.tables import wrap_title

    title = "SPB after 500 iterations of ssdm: logistic (d = 31), tau = 32, estimator monte-carlo, S = 2000"
    for width in range(20, 100, 7):
        lines = wrap_title(title, width)
        assert " ".join(lines) == title
        for line in lines:
            assert not line.endswith(("=", "(d", "tau")), lines
    assert wrap_title("E<g, vote> at [1, 2]: x", 6) == ["E<g, vote> at [1, 2]:", "x"]


def test_bit_counts():
    from signsim.render.tables import bits_text

    assert bits_text(6000) == "6000"
    assert bits_text(16_000) == "16,000 (2 kB)"


def _panels(text: str) -> dict[str, str]:
    """Each --help panel's title -> its flattened text."""
    out, title = {}, None
    for line in text.splitlines():
        m = re.match(r"\s*╭─ (.*?) ─", line)
        if m:
            title = m.group(1)
            out[title] = ""
        elif title is not None:
            out[title] += " " + _flat(line)
    return out


@pytest.mark.parametrize("command", ["run", "check-spb", "diversity", "bound"])
def test_every_option_that_also_takes_a_word_says_so_in_its_help(command):
    """From the table of options: --batch-size <int> also takes full, --lr <float> also takes theory, and the help
    says what the word means ("full: ...", "theory: ...")."""
    from signsim.interface import options

    command_ = _commands()[command]
    helps = {p.name: _literal(getattr(p, "help", "") or "") for p in command_.params}
    worded = [o for o in options.of_command(command).values() if o.words]
    for o in worded:
        for word in o.words:
            assert re.search(rf"\b{word}:", helps[o.name]), (o.name, word, helps[o.name])
    assert command != "run" or {"batch_size", "lr"} <= {o.name for o in worded}


def test_config_and_tracking_are_not_output_options():
    panels = _panels(_help("run", "--help", columns=200))
    output = panels["Output"]
    assert "--out" in output and "--config" not in output and "--track" not in output
    assert "--config" in panels["Options"]
    assert "--track-spb" in panels["Tracking (quantities recorded during the run)"]
