"""Every option written once (issue #22, item 6): the table of ``signsim.interface.options`` against the command line's
parameters, the Python API's keywords, RunConfig, the commands' option dataclasses, the choices named
elsewhere, the defaults the help texts state and docs/reference.md's option tables."""

import inspect
import re
from dataclasses import MISSING, fields
from pathlib import Path

import pytest
import typer

import signsim
from signsim import api
from signsim.cli import app
from signsim.errors import InputError
from signsim.interface import options

ROOT = Path(__file__).resolve().parents[2]
#: the commands that have a Python function, and that function
FUNCTIONS = {"run": signsim.run, "check-spb": signsim.check_spb, "diversity": signsim.diversity,
             "bound": signsim.bound, "sweep": api.sweep, "plot": signsim.Result.figure}


def _cli_params(command: str) -> dict[str, object]:
    group = typer.main.get_command(app)
    return {p.name: p for p in group.get_command(None, command).params}


def _api_keywords(function) -> set[str]:
    """The keywords a Python function takes: its named parameters, and through **options the table's."""
    params = inspect.signature(function).parameters
    named = {n for n, p in params.items() if p.kind is p.KEYWORD_ONLY}
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        named |= set(options.of_function(function.__name__))
    return named


@pytest.mark.parametrize("command", sorted(FUNCTIONS))
def test_cli_options_and_api_keywords_are_the_same(command):
    """A CLI option missing from its Python function, or the reverse, fails here; the command-line-only
    options (--json, --quiet, --plot, ...) and the Python-only ones (progress) say so in the table."""
    cli = set(_cli_params(command)) - {options.ARGUMENTS.get(command, ("",))[0]}
    api = _api_keywords(FUNCTIONS[command]) - {"config"}
    table = options.of_command(command)
    cli_only = {n for n, o in table.items() if o.cli_only}
    api_only = {o.name for o in options.TABLE if command in o.commands and o.api_only}
    assert cli == set(table), "the command's parameters are its rows of the table"
    assert cli - cli_only - {"config"} == api - api_only, (sorted(cli - cli_only - api), sorted(api - cli))
    for name in cli_only:
        assert table[name].cli_only.strip(), name  # the reason is written down


def test_sample_functions_take_their_commands_options():
    """spb_from_samples takes what check-spb --grads uses; diversity_from_samples --delta."""
    for function, command in options.SAMPLE_FUNCTIONS.items():
        f = getattr(signsim, function)
        named = {n for n, p in inspect.signature(f).parameters.items() if p.kind is p.KEYWORD_ONLY}
        assert named == set(options.of_function(function))
        cli = options.of_command(command)
        assert named <= set(cli) | set(options.RECORD)


@pytest.mark.parametrize("command", ["run", "check-spb", "diversity", "bound"])
def test_every_api_keyword_reaches_its_check(command):
    """Each keyword of the command's function is known (no "unknown option") and checked: a value of no
    sensible type is an InputError naming the option."""
    f = FUNCTIONS[command]
    for name in options.of_function(f.__name__):
        with pytest.raises(InputError) as e:
            f(**{name: object()})
        text = str(e.value)
        assert "unknown option" not in text and "\n" not in text, (name, text)
        assert options.flag(name) in text or name in text, (name, text)


def test_diversity_takes_transform_in_python_as_on_the_command_line(cli):
    """The drift issue #22 names: signsim.diversity(transform=[...]) was "unknown option --transform"."""
    r = cli("diversity", "--transform", "dropout:0.5", "--transform", "sign", "--json")
    assert r.code == 0, r.err
    api = signsim.diversity(transform=["dropout:0.5", "sign"])
    assert api.to_dict() == r.json()
    assert [t["transform"] for t in api["transforms"]] == ["none", "dropout:0.5", "sign"]
    assert signsim.diversity(transform="sign")["transforms"] == signsim.diversity(transform=["sign"])["transforms"]


def test_grads_in_python_as_on_the_command_line(cli, tmp_path):
    import numpy as np

    G = np.random.default_rng(1).standard_normal((40, 3)) + 0.3
    np.save(tmp_path / "G.npy", G)
    r = cli("check-spb", "--grads", tmp_path / "G.npy", "--workers", "3", "--json")
    assert signsim.check_spb(grads=tmp_path / "G.npy", workers=3).to_dict() == r.json()
    r = cli("diversity", "--grads", tmp_path / "G.npy", "--transform", "sign", "--json")
    assert signsim.diversity(grads=str(tmp_path / "G.npy"), transform="sign").to_dict() == r.json()


def test_sweep_force_in_python(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text('problem = "quadratic"\niters = 2\n[grid]\nlr = [0.1, 0.01]\n')
    with pytest.raises(InputError, match="--force"):
        signsim.sweep(spec, out=tmp_path / "o", jobs=10**6)
    assert len(signsim.sweep(spec, out=tmp_path / "o", dry_run=True, force=True)["runs"]) == 2


# --- RunConfig, the commands' dataclasses, defaults --------------------------------------------------------


def test_runconfig_is_made_from_the_table():
    from signsim.interface.config import RunConfig

    assert [f.name for f in fields(RunConfig)] == list(options.RECORD) == list(options.RECORD_ORDER)
    assert {o.name for o in options.TABLE if o.record} == set(options.RECORD)
    for f in fields(RunConfig):
        assert f.default == options.RECORD[f.name].default, f.name


def test_command_dataclasses_have_the_tables_defaults():
    from signsim.commands.bound import BoundOptions
    from signsim.commands.check_spb import SpbOptions
    from signsim.commands.diversity import DiversityOptions

    for cls, command in ((SpbOptions, "check-spb"), (DiversityOptions, "diversity"), (BoundOptions, "bound")):
        table = options.of_command(command)
        for f in fields(cls):
            if f.name in table and f.default is not MISSING:
                assert f.default == table[f.name].default, (command, f.name)


@pytest.mark.parametrize("function", [signsim.spb_from_samples, signsim.diversity_from_samples, api.sweep])
def test_signature_defaults_are_the_tables(function):
    table = options.of_function(function.__name__)
    for name, p in inspect.signature(function).parameters.items():
        if p.kind is p.KEYWORD_ONLY and name in table and p.default is not None:
            assert p.default == table[name].default, name


def _shown_default(value) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


@pytest.mark.parametrize("command", ["run", "check-spb", "diversity", "bound", "sweep"])
def test_help_states_the_real_default(command):
    """Where a help text says "default: X" for an option with a plain default, X is that default."""
    for o in options.of_command(command).values():
        text = o.help_for(command)
        m = re.search(r"default: ([^;)]+)", text)
        if m is None or o.default_for(command) is None or o.name in ("lr",):  # lr: "0.01, or the method's"
            continue
        assert m.group(1).split(" ")[0] == _shown_default(o.default_for(command)), (command, o.name, text)


def test_choices_are_those_of_their_sources():
    from signsim.codes import Schedule, names
    from signsim.diagnostics.diversity_report import ESTIMATORS
    from signsim.diagnostics.estimators import METHODS
    from signsim.diagnostics.intervals import CORRECTIONS, INTERVALS
    from signsim.diagnostics.votes import SIGN_ZERO, TIES
    from signsim.problems.mlp import ACTIVATIONS

    spb, div = options.of_command("check-spb"), options.of_command("diversity")
    assert options.RECORD["lr_schedule"].choices == tuple(names(Schedule))
    assert options.RECORD["sign_zero"].choices == SIGN_ZERO
    assert options.RECORD["tie"].choices == TIES
    assert options.RECORD["activation"].choices == tuple(ACTIVATIONS)
    assert spb["interval"].choices == tuple(INTERVALS) and spb["correction"].choices == tuple(CORRECTIONS)
    assert spb["estimator"].choices == METHODS and div["estimator"].choices == ESTIMATORS
    for name, o in options.RECORD.items():
        for choice in o.choices:  # every listed value is accepted by the run's own checks
            from signsim.interface import config

            values = {name: choice, "iters": 1}
            if name in ("oracle",):
                values["problem"] = "rosenbrock"
            if name == "activation":
                values["problem"] = "mlp"
            if name == "model_gradients":
                values["problem"] = "model"
            if name == "votes" and choice == "binomial":
                values["method"] = "signsgd"
            config.resolve(values)


def test_a_command_names_each_option_once():
    for command in options.API_OF:
        names = [o.name for o in options.TABLE if command in o.commands]
        assert len(names) == len(set(names)), command


# --- docs/reference.md --------------------------------------------------------------------------------------


def _doc_sections() -> dict[str, set[str]]:
    """The flags each '### heading' table of docs/reference.md lists (the first code span of each row)."""
    sections: dict[str, set[str]] = {}
    current = None
    for line in (ROOT / "docs" / "reference.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            current = line.lstrip("#").strip()
            continue
        m = re.match(r"\| `(--[a-z0-9-]+|-[a-z]|[A-Z.]+)", line)
        if current is not None and m:
            sections.setdefault(current, set()).add(m.group(1))
    return sections


def test_reference_tables_list_every_option_of_the_table():
    s = _doc_sections()
    run_sections = s["Problem"] | s["Data (logistic, least-squares, mlp)"] | s["Run"] | s["Rounds"] | s["Output"]

    def flags(command):
        return {o.flag for o in options.of_command(command).values()}

    assert run_sections | s["run"] | s["System (simulated wall-clock time)"] == flags("run")
    assert s["System (simulated wall-clock time)"] == {o.flag for o in options.TABLE if o.panel == options.P_SYSTEM}
    tracks = {"--track-spb", "--track-diversity", "--grad-estimator", "--down-compressor",
              "--down-feedback", "--pre-aggregate", "--heterogeneity"}  # run only (the tables say so)
    for command in ("check-spb", "diversity", "bound"):
        run_only = {"--server-opt", "--prox-mu", "--catch-up"}
        rounds = s["Rounds"] - run_only if command != "diversity" else set()
        only = tracks | ({"--model", "--model-gradients"} if command == "bound" else set())  # not bound (the table)
        assert (run_sections - only - s["Rounds"]) | rounds | s[command] == flags(command), command
    for command in ("sweep", "plot", "compile"):
        assert s[command] - {"FILE", "RESULTS..."} == flags(command), command
