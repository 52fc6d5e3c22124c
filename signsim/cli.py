"""The ``signsim`` command line. It parses options, calls one function from ``signsim.commands`` and renders
the result; no mathematics here. Heavy modules (numpy, numba, matplotlib) are imported inside the commands so
that ``signsim --help`` starts instantly.

Exit codes: 0 success, 1 check-spb verdict not "holds", 2 bad input (one line on stderr), 130 interrupted
by Ctrl-C, 143 by SIGTERM (partial results kept in both cases).
"""

from __future__ import annotations

import os
import signal
import sys

#: signals that arrive while the command line starts (imports) are remembered and acted on by ``main``
_EARLY: list[int] = []
#: this process is the signsim command (not a program or test importing the module)
_ENTRY = __name__ == "__main__" or bool(sys.argv) and sys.argv[0].rsplit("/", 1)[-1] == "signsim"
if _ENTRY:
    for _sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(_sig, lambda signum, frame: _EARLY.append(signum))

import inspect  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Annotated, Any  # noqa: E402

import typer  # noqa: E402
from typer.core import TyperCommand, TyperGroup  # noqa: E402

from signsim.errors import InputError  # noqa: E402


def _no_flag_types(command, ctx) -> None:
    """Flags (--help, --install-completion, --json, ...) take no value: show no value type for them."""
    for param in command.get_params(ctx):
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""


class _Group(TyperGroup):
    def format_help(self, ctx, formatter):
        _no_flag_types(self, ctx)
        return super().format_help(ctx, formatter)


class _Command(TyperCommand):
    def format_help(self, ctx, formatter):
        _no_flag_types(self, ctx)
        return super().format_help(ctx, formatter)


app = typer.Typer(
    name="signsim",
    help="Simulate sign-based, 1-bit distributed optimization (signSGD, majority vote, Signum, SSDM, "
    "error feedback) and the statistics that decide whether it works.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
    cls=_Group,
    context_settings={"help_option_names": ["-h", "--help"]},
)



def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("signsim")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree that is not installed
        return "unknown"


def _print_version(value: bool) -> None:
    if value:
        print(f"signsim {package_version()}")
        raise typer.Exit(0)


@app.callback()
def _main_options(
    version: Annotated[bool, typer.Option("--version", help="print the version and exit", is_eager=True,
                                          callback=_print_version, show_default=False, metavar="")] = False,
) -> None:
    pass


EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143

Opt = typer.Option
P_RUN = "Run"
P_PROBLEM = "Problem"
P_OUT = "Output"
P_DATA = "Data (logistic, least-squares, mlp)"
P_SPB = "Success probabilities"
P_DIV = "Diversity"
P_BOUND = "Bounds"


def _text(help: str) -> str:
    """Help text as written: brackets ("[grid]", "[0, 1)") are not Rich markup."""
    from rich.markup import escape

    return escape(help)


def _option(name: str, kind: Any, help: str, panel: str, *decls: str, default: Any = None) -> inspect.Parameter:
    flag = kind is bool or kind == (bool | None)
    opt = Opt(*decls, help=_text(help), rich_help_panel=panel, show_default=False,
              metavar="" if flag else None)
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                             annotation=Annotated[kind, opt])


def _compressor_forms() -> str:
    """The built-in compressors' spec forms, from their modules (light: they import nothing heavy)."""
    from signsim.stages import registry

    return " | ".join(registry.form(m) for m in registry.builtin("compressor").values())


def run_options(problem: str = "rosenbrock", batch_size: str = "1; mlp 32", tracks: bool = True) \
        -> list[inspect.Parameter]:
    """Every option that describes a run, shared by run, check-spb, diversity and bound; ``problem`` and
    ``batch_size`` are the command's defaults, ``tracks`` offers --track-spb and --track-diversity (run only)."""
    options = [
        _option("config", Path | None, "TOML file of options; flags override it", P_OUT, "--config"),
        _option("problem", str | None, "rosenbrock | quadratic | sign-trap | vote-trap | logistic | least-squares | "
                f"mlp (default: {problem})", P_PROBLEM),
        _option("dim", int | None, "dimension d (rosenbrock, quadratic; default: 10)", P_PROBLEM),
        _option("noise", str | None, "gaussian:S | laplace:S | uniform:S | student-t:NU:S (S the std for NU > 2, "
                "the scale for 1 < NU <= 2) | bimodal:S | skewed:S | cauchy:C | stable:ALPHA:C | none (default: "
                "gaussian:1 for rosenbrock and quadratic, none for the others)", P_PROBLEM),
        _option("kappa", float | None, "quadratic: L_i log-spaced in [1, kappa] (default: 100)", P_PROBLEM),
        _option("oracle", str | None, "rosenbrock: full | term (default: full)", P_PROBLEM),
        _option("trap_eps", float | None, "sign-trap: eps in (0, 1) (default: 0.5)", P_PROBLEM),
        _option("trap_lambda", float | None, "vote-trap: lambda > 0 (default: 6)", P_PROBLEM),
        _option("x0", float | None, "starting point: every coordinate set to this value; a config file may give "
                "a vector instead (default: the problem's)", P_PROBLEM),
        _option("noise_scales", str | None, "per-coordinate noise scales: first:K | power:A | FILE.npy", P_PROBLEM),
        _option("data", str | None, "builtin:digits | builtin:breast-cancer | FILE (.svm/.libsvm/.txt, .csv, .npz, "
                "IMAGES,LABELS idx) (default: builtin:breast-cancer; mlp builtin:digits)", P_DATA),
        _option("split", str | None, "shared | iid | label-skew:ALPHA | sorted | split-batch (default: shared)",
                P_DATA),
        _option("test_fraction", float | None, "held-out fraction (default: 0.2)", P_DATA),
        _option("standardize", bool | None, "standardize features (default: on)", P_DATA,
                "--standardize/--no-standardize"),
        _option("intercept", bool | None, "add a constant feature (GLMs; default: on)", P_DATA,
                "--intercept/--no-intercept"),
        _option("replicate", int | None, "repeat the training set r times (default: 1)", P_DATA),
        _option("positive_class", float | None, "logistic: this label is +1, the rest -1", P_DATA),
        _option("l2", float | None, "L2 regularization lambda (default: 0)", P_DATA),
        _option("hidden", int | None, "mlp: hidden units (default: 32)", P_DATA),
        _option("activation", str | None, "mlp: relu | tanh (default: relu)", P_DATA),
        _option("method", str | None, "sgd | signsgd | signum | ssdm | ef-signsgd | sto-sign | lion | qsgd | "
                "terngrad | topk-ef | randk | ef21 | natural | onebit-sgd (signsim list; default: ssdm)", P_RUN),
        _option("compressor", str | None, f"{_compressor_forms()} (signsim list; default: the method's)", P_RUN),
        _option("error_feedback", str | None, "none | ef | ef21 (default: the method's)", P_RUN),
        _option("workers", int | None, "number of workers M (default: 8; vote-trap 3)", P_RUN),
        _option("aggregate", str | None, "server rule: majority | mean | median | trimmed:BETA | krum:F | "
                "cclip:TAU[:L] (default: the method's)", P_RUN),
        _option("batch_size", int | None, f"minibatch size tau per worker (default: {batch_size})", P_RUN),
        _option("iters", int | None, "iterations K (default: 2000)", P_RUN),
        _option("lr", float | None, "step size gamma_0 (default: 0.01, or the method's or problem's own)", P_RUN),
        _option("lr_schedule", str | None, "constant | sqrt (gamma_0 / sqrt(k+1)) (default: constant; vote-trap "
                "sqrt)", P_RUN),
        _option("momentum", float | None, "momentum beta in [0, 1) (Lion's beta1; default: the method's)", P_RUN),
        _option("momentum2", float | None, "Lion's beta2 in [0, 1) (default: 0.99)", P_RUN),
        _option("weight_decay", float | None, "lambda >= 0: the step adds gamma lambda x (default: 0)", P_RUN),
        _option("votes", str | None, "per-worker | binomial: exact vote counts for any M, for memoryless sign "
                "workers on a shared exact-gradient problem with closed-form noise (default: per-worker)", P_RUN),
        _option("dtype", str | None, "float64 | float32: the type of the run's state vectors and data matrix; "
                "float32 halves their memory, arithmetic stays float64 (signsim run only; default: float64)", P_RUN),
        _option("byzantine", int | None, "number of Byzantine workers (the first ones; see --attack; default: 0)",
                P_RUN),
        _option("attack", str | None, "invert | random | alie:Z | ipm:EPS (omniscient: from the honest messages; "
                "default: invert)", P_RUN),
        _option("sign_zero", str | None, "sign(0) in messages: random | plus | zero (default: random; sign-trap "
                "zero)", P_RUN),
        _option("tie", str | None, "tied majority vote: random | zero (default: random; sign-trap zero)", P_RUN),
        _option("eval_every", int | None, "record history every N iterations (default: K/100, at least 1)", P_RUN),
        _option("stop_loss", float | None, "stop early once a recorded loss is <= this", P_RUN),
        _option("monotone", bool | None, "keep a step only if f does not increase (signSGD option 2; default: off)",
                P_RUN, "--monotone/--no-monotone"),
        _option("seed", int | None, "random seed (default: 0)", P_RUN),
        _option("plugin", str | None, "FILE.py[,FILE.py]: your own stages, written to the stage contract "
                "(docs/api.md)", P_RUN),
    ]
    if tracks:
        options += [
            _option("track_spb", int | None, "every N iterations, record the fraction of coordinates satisfying "
                    "SPB, min rho and the rho-norms", P_OUT),
            _option("track_diversity", int | None, "every N iterations, record the gradient diversity and B_S",
                    P_OUT),
        ]
    return options


#: the run command's options (the diagnostics take the same without --track-spb and --track-diversity)
RUN_OPTIONS = run_options()
OUTPUT_OPTIONS = [
    _option("out", str | None, "write the results JSON here (atomically)", P_OUT),
    _option("json_", bool, "print the results JSON on stdout, nothing else", P_OUT, "--json", default=False),
    _option("quiet", bool, "no progress bar or table", P_OUT, "--quiet", "-q", default=False),
]
_RUN_FIELDS = {p.name for p in RUN_OPTIONS} - {"config"}


def _command(name: str, extra: list[inspect.Parameter], help: str, options: list[inspect.Parameter] = RUN_OPTIONS):
    """Register ``fn(**options)`` as a command whose options are ``options`` (the run options) + extra +
    OUTPUT_OPTIONS."""

    def register(fn):
        def checked(**opts: Any) -> None:
            _check_outputs(opts)
            return fn(**opts)

        checked.__signature__ = inspect.Signature(options + extra + OUTPUT_OPTIONS)
        checked.__doc__ = help
        checked.__name__ = fn.__name__
        app.command(name, help=_text(help), cls=_Command)(checked)
        return checked

    return register


FIGURE_SUFFIXES = {".png", ".pdf", ".svg"}


def _check_outputs(opts: dict[str, Any]) -> None:
    """Validate --out and --plot before any work (a bad path is exit 2, not a lost run); they become Paths."""
    from signsim.paths import output_file

    if opts.get("plot") is not None:
        output_file(opts["plot"], "--plot")
        if Path(opts["plot"]).suffix.lower() not in FIGURE_SUFFIXES:
            raise InputError(f"--plot {opts['plot']}: use a .png, .pdf or .svg file name")
        opts["plot"] = Path(opts["plot"])
    if opts.get("out") is not None:
        output_file(opts["out"], "--out")
        opts["out"] = Path(opts["out"])


def _run_values(opts: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(values from the --config file, values given as flags), both keyed by RunConfig field."""
    from signsim import config as cfgmod

    file_values = cfgmod.load_toml(opts["config"]) if opts.get("config") is not None else {}
    given = {k: v for k, v in opts.items() if k in _RUN_FIELDS and v is not None}
    return file_values, given


def _diagnostic_values(opts: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """A diagnostic command's options (file < flags; the logistic problem by default) and the file's
    [experiment] table, if any; [[compare]] variants do not apply."""
    values, given = _run_values(opts)
    values.pop("compare", None)
    experiment = values.pop("experiment", None)
    merged = {**values, **given}
    merged.setdefault("problem", "logistic")
    return merged, experiment


def _grads_values(opts: dict[str, Any]) -> dict[str, Any]:
    """With --grads: the run options given in the --config file or as flags (most do not apply)."""
    values, given = _run_values(opts)
    values.pop("compare", None)
    values.pop("experiment", None)
    return {**values, **given}


def _show(opts: dict[str, Any], items) -> None:
    """Print ``items(signsim.render.tables)`` to stderr unless --quiet or --json."""
    if opts["quiet"] or opts["json_"]:
        return
    from signsim.render import tables

    console = tables.stderr_console()
    for item in items(tables):
        tables.emit(console, item)


@_command("run", [
    _option("plot", str | None, "save a figure: loss (or accuracy) against iterations and megabytes, SPB panels "
            "when tracked (PNG, PDF, SVG)", P_OUT),
], help="Simulate one optimization run of M workers, print a summary, write results.")
def run(**opts: Any) -> None:
    from signsim import config as cfgmod
    from signsim.commands.run import run as run_command

    values, given = _run_values(opts)
    plot, out, json_ = opts["plot"], opts["out"], opts["json_"]
    if plot is not None and plot.suffix.lower() not in {".png", ".pdf", ".svg"}:
        raise InputError(f"--plot {plot}: use a .png, .pdf or .svg file name")
    show = not (opts["quiet"] or json_)
    if "compare" in values:
        _run_comparison(values, given, out, json_, show, plot)
        return
    cfg = cfgmod.resolve({**values, **given})
    doc = _with_progress(lambda progress: run_command(cfg, progress, lambda: _compile_notice(opts["quiet"], cfg)), show,
                         f"{cfg.method} on {cfg.problem}")
    _emit(doc, out, json_)
    if plot is not None:
        from signsim.render.figures import runs_overview, save

        save(runs_overview([doc]), plot)
    if show:
        from signsim.render.tables import emit, run_summary, stderr_console

        console = stderr_console()
        for w in doc["warnings"]:
            emit(console, f"[yellow]warning:[/] {w}")
        emit(console, run_summary(doc))
    else:
        for w in doc["warnings"]:
            print(f"warning: {w}", file=sys.stderr)
    if doc["status"] == "interrupted":
        raise typer.Exit(_interrupted_code())


@_command("check-spb", [
    _option("at", str | None, "init | optimum | FILE.npy | run:K (the point after K iterations; default: init)",
            P_SPB),
    _option("estimator", str | None, "auto | exact | closed-form | monte-carlo (default: auto)", P_SPB),
    _option("samples", int | None, "Monte Carlo sample count S (default: 2000)", P_SPB),
    _option("confidence", float | None, "confidence level (default: 0.95)", P_SPB),
    _option("interval", str | None, "wilson | clopper-pearson (default: wilson)", P_SPB),
    _option("correction", str | None, "multiple testing over coordinates: holm | bonferroni | none (default: holm)",
            P_SPB),
    _option("top", int | None, "rows in the table of worst coordinates (default: 10)", P_SPB),
    _option("grads", Path | None, "your own per-sample gradients: FILE.npy, an n x d array (memory-mapped); "
            "uses --workers, --batch-size, --sign-zero, --tie, --seed", P_SPB),
], help="Estimate per-coordinate success probabilities at a point, decide SPB, report rho-norms. "
        "Exit 0 when SPB holds, 1 when it is violated or inconclusive.",
    options=run_options("logistic", "1", tracks=False))
def check_spb(**opts: Any) -> None:
    from signsim import config as cfgmod
    from signsim.commands.check_spb import SpbOptions
    from signsim.commands.check_spb import check_spb as check_command

    names = ("at", "estimator", "samples", "confidence", "interval", "correction", "top")
    if opts["grads"] is not None:
        from signsim.commands import grads

        doc = grads.check_spb(opts["grads"], _grads_values(opts), {k: opts[k] for k in names})
    else:
        merged, _ = _diagnostic_values(opts)
        merged.setdefault("batch_size", 1)
        cfg = cfgmod.resolve(merged)
        spb = SpbOptions.build(**{k: opts[k] for k in names}, workers_given="workers" in merged)
        doc = check_command(cfg, spb)
    _emit(doc, opts["out"], opts["json_"])
    _show(opts, lambda tables: tables.spb_report(doc))
    raise typer.Exit(0 if doc["verdict"] == "holds" else 1)


@_command("diversity", [
    _option("at", str | None, "init | optimum | FILE.npy | run:K (the point after K iterations; default: init)",
            P_DIV),
    _option("delta", float | None, "report the largest batch with B <= delta B_S + 1 (default: 1)", P_DIV),
    _option("estimator", str | None, "auto | exact | population | two-batch (default: auto)", P_DIV),
    _option("pairs", int | None, "two-batch estimator: number of batch pairs (default: 2000)", P_DIV),
    _option("small_batch", int | None, "two-batch estimator: small batch b (default: --batch-size)", P_DIV),
    _option("big_batch", int | None, "two-batch estimator: big batch B (default: max(2, M) b)", P_DIV),
    _option("grads", Path | None, "your own per-sample gradients: FILE.npy, an n x d array (memory-mapped)", P_DIV),
    _option("transform", list[str] | None, "also the diversity of transformed per-sample gradients: dropout:P | "
            "langevin:S | sign | sto-sign | qsgd:S | natural (repeatable)", P_DIV),
], help="Gradient diversity Delta_S, the batch-size bound B_S, the noise scale B_simple and the predicted "
        "speedup at a point; per worker and between workers when data are split.",
    options=run_options("logistic", tracks=False))
def diversity(**opts: Any) -> None:
    from signsim import config as cfgmod
    from signsim.commands.diversity import DiversityOptions
    from signsim.commands.diversity import diversity as diversity_command

    names = ("at", "delta", "estimator", "pairs", "small_batch", "big_batch", "transform")
    if opts["grads"] is not None:
        from signsim.commands import grads

        doc = grads.diversity(opts["grads"], _grads_values(opts), {k: opts[k] for k in names})
        _emit(doc, opts["out"], opts["json_"])
        _show(opts, lambda tables: tables.diversity_report(doc))
        return
    merged, experiment = _diagnostic_values(opts)
    if experiment is not None:
        from signsim.commands.experiments import run as run_experiment

        with _progress_bar(not (opts["quiet"] or opts["json_"])) as new_task:
            doc = run_experiment(merged, experiment, new_task)
        _emit(doc, opts["out"], opts["json_"])
        _show(opts, lambda tables: tables.experiment_tables(doc))
        return
    cfg = cfgmod.resolve(merged)
    o = DiversityOptions.build(**{k: opts[k] for k in names})
    doc = diversity_command(cfg, o)
    _emit(doc, opts["out"], opts["json_"])
    _show(opts, lambda tables: tables.diversity_report(doc))


@_command("bound", [
    _option("overlay", Path | None, "a run's results JSON: its observations beside the bounds", P_BOUND),
    _option("constant", list[str] | None, "override a constant: NAME=VALUE (repeatable; F, f0, f_star, L1, L2, "
            "sigma1, sigma_total, gamma, M, alpha, d, K)", P_BOUND),
    _option("box", float | None, "rosenbrock: smoothness bounded over [-R, R]^d (default: 2)", P_BOUND),
    _option("at", str | None, "point of the majority-vote table: init | optimum | FILE.npy | run:K (default: init)",
            P_BOUND),
    _option("plot", str | None, "figure of the bounds against K (with the run's running averages)", P_BOUND),
], help="Evaluate the theorems' convergence bounds for a problem's constants, the majority-vote noise "
        "reduction, or overlay a finished run.", options=run_options(tracks=False))
def bound(**opts: Any) -> None:
    from signsim import config as cfgmod
    from signsim.commands.bound import BoundOptions
    from signsim.commands.bound import bound as bound_command

    values, given = _run_values(opts)
    values.pop("compare", None)
    values.pop("experiment", None)
    run_doc = None
    if opts["overlay"] is not None:
        from signsim.results import load_results

        run_doc = load_results(opts["overlay"], "run", "--overlay")
        values = {k: v for k, v in run_doc["config"].items() if v is not None}
        try:
            cfgmod.resolve(values)
        except (InputError, TypeError) as e:
            raise InputError(f"--overlay {opts['overlay']}: its config is not a valid run config ({e})") from None
    plot = opts["plot"]
    if plot is not None and plot.suffix.lower() not in {".png", ".pdf", ".svg"}:
        raise InputError(f"--plot {plot}: use a .png, .pdf or .svg file name")
    cfg = cfgmod.resolve({**values, **given})
    o = BoundOptions(constants=opts["constant"] or [], box=opts["box"] if opts["box"] is not None else 2.0,
                     at=opts["at"] or "init")
    doc = bound_command(cfg, o, run_doc)
    _emit(doc, opts["out"], opts["json_"])
    if plot is not None:
        from signsim.render.figures import bound_overview, save

        save(bound_overview(doc), plot)
    _show(opts, lambda tables: tables.bound_report(doc))
    if run_doc is not None and doc["overlay"]["exceeded"]:
        print(f"signsim: observation exceeds its bound: {', '.join(doc['overlay']['exceeded'])}", file=sys.stderr)


def _opt(help: str, *decls: str) -> Any:
    """A typer option of the sweep, plot and compile commands: the help as written, the default in its text."""
    return Opt(*decls, help=_text(help), show_default=False)


def _flag(help: str, *decls: str) -> Any:
    """A boolean flag: no value type shown."""
    return Opt(*decls, help=_text(help), show_default=False, metavar="")


@app.command("sweep", cls=_Command,
             help=_text("Run a grid of runs (local processes by default, or a Dask cluster) into tidy, "
             "resumable results: runs/<id>.json, results.csv, manifest.json. Exit 1 when some runs failed."))
def sweep(
    file: Annotated[Path, typer.Argument(help=_text("sweep file (TOML): run options plus [grid], [[zip]], repeats"),
                                         show_default=False)],
    out: Annotated[str | None, _opt("output directory (default: results/<file stem>)")] = None,
    executor: Annotated[str, _opt("local | dask (default: local)")] = "local",
    jobs: Annotated[int | None, _opt("local: worker processes (default: the number of cores this process may "
                                     "use); dask --scheduler local: LocalCluster workers (default: 2)")] = None,
    scheduler: Annotated[str | None, _opt("dask: scheduler address, or 'local' for a LocalCluster")] = None,
    dry_run: Annotated[bool, _flag("list the expanded runs and exit", "--dry-run")] = False,
    force: Annotated[bool, _flag("allow --jobs above the number of cores", "--force")] = False,
    json_: Annotated[bool, _flag("print the summary JSON on stdout, nothing else", "--json")] = False,
    quiet: Annotated[bool, _flag("no progress bar or table", "--quiet", "-q")] = False,
    plugin: Annotated[str | None, _opt("FILE.py[,FILE.py]: your own stages, for every run (docs/api.md)")] = None,
) -> None:
    from signsim.commands.sweep import plan
    from signsim.commands.sweep import sweep as sweep_command
    from signsim.paths import output_dir
    from signsim.sweep.executors import make
    from signsim.sweep.store import Store

    out = output_dir(out if out is not None else str(Path("results") / file.stem), "--out")
    show = not (quiet or json_)
    if dry_run:
        spec, tasks = plan(file, plugin)
        store = Store(out)
        rows = [{"index": t["index"], "run_id": t["run_id"], "params": t["params"],
                 "finished": store.finished(t["run_id"]), "error": t["error"]} for t in tasks]
        if json_:
            from signsim.results import dumps

            sys.stdout.write(dumps({"command": "sweep", "dry_run": True, "runs": rows}) + "\n")
        elif not quiet:
            from signsim.render.tables import emit, stderr_console, sweep_plan

            emit(stderr_console(), sweep_plan(rows, spec.parameters))
        return
    ex = make(executor, jobs, scheduler, force)
    log_lines: list[str] = []
    with _progress_bar(show) as new_task:
        progress = new_task(f"sweep {file.name}")
        try:
            doc = sweep_command(file, out, ex, progress, log_lines.append, plugin)
        finally:
            for line in log_lines:
                print(f"signsim: {line}", file=sys.stderr)
            log_lines.clear()
    for line in log_lines:
        print(f"signsim: {line}", file=sys.stderr)
    _emit(doc, None, json_)
    if show:
        from signsim.render.tables import emit, stderr_console, sweep_summary

        for item in sweep_summary(doc):
            emit(stderr_console(), item)
    if doc["interrupted"]:
        raise typer.Exit(_interrupted_code())
    if doc["statuses"].get("failed"):
        raise typer.Exit(1)


@app.command("plot", cls=_Command,
             help=_text("Figures from results: run JSONs (or the result of a config with compare variants), "
             "a sweep directory, check-spb, diversity or bound results."))
def plot(
    results: Annotated[list[Path], typer.Argument(help=_text("results files or a sweep directory"),
                                                  show_default=False)],
    out: Annotated[str | None, _opt("figure file: .png, .pdf or .svg (default: <first input>.png, or figure.png "
                                    "in a sweep directory)")] = None,
    x: Annotated[str | None, _opt("iter | bits | megabytes | time (curves against it; default: iter) | workers | "
                                  "byzantine | batch-size (final values against this run option)")] = None,
    y: Annotated[str | None, _opt("loss | grad-norm | grad-norm-l1 | distance | accuracy | train-accuracy | "
                                  "spb-fraction | rho-min | rho-norm | B_S (default: loss)")] = None,
    group_by: Annotated[str | None, _opt("sweeps: one line per value of this option (the title names the "
                                         "options averaged over)")] = None,
    where: Annotated[list[str] | None, _opt("sweeps: keep only runs with KEY=VALUE (repeatable; all must "
                                            "hold)")] = None,
    facet: Annotated[str | None, _opt("sweeps: one panel per value of this option")] = None,
) -> None:
    from signsim.commands.plot import plot as plot_command
    from signsim.paths import output_file

    if out is not None:
        output_file(out, "--out")
        if Path(out).suffix.lower() not in FIGURE_SUFFIXES:
            raise InputError(f"--out {out}: use a .png, .pdf or .svg file name")
        target = Path(out)
    else:
        target = results[0].with_suffix(".png") if not results[0].is_dir() else results[0] / "figure.png"
        output_file(target, "the default --out")
    written = plot_command(results, target, x, y, group_by, where, facet,
                           lambda message: print(f"signsim: warning: {message}", file=sys.stderr))
    print(written)


def _run_comparison(values, given, out, json_, show, plot) -> None:
    from signsim.commands.compare import compare

    variants = values.pop("compare")
    with _progress_bar(show) as new_task:
        doc = compare(values, variants, given, new_task)
    _emit(doc, out, json_)
    if plot is not None:
        from signsim.render.figures import runs_overview, save

        save(runs_overview(doc["runs"]), plot)
    if show:
        from signsim.render.tables import comparison_table, emit, stderr_console

        console = stderr_console()
        for w in sorted({w for d in doc["runs"] for w in d["warnings"]}):
            emit(console, f"[yellow]warning:[/] {w}")
        emit(console, comparison_table(doc))
    if doc["status"] == "interrupted":
        raise typer.Exit(_interrupted_code())


class _progress_bar:
    """A Rich progress display on stderr (or nothing); ``new_task(label)`` returns a progress callback."""

    def __init__(self, show: bool):
        # only on a terminal: elsewhere Rich cannot redraw the bar and leaves a blank line before any error
        self.show = show and sys.stderr.isatty()

    def __enter__(self):
        if not self.show:
            return lambda label: None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        from signsim.render.tables import stderr_console

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), console=stderr_console(), transient=True)
        self.bar.__enter__()

        def new_task(label: str):
            task = self.bar.add_task(f"{label}: loading compiled kernels (the first run after install compiles "
                                     "them)", total=None)

            def progress(done: int, total: int) -> None:
                self.bar.update(task, completed=done, total=total, description=label)

            return progress

        return new_task

    def __exit__(self, *exc):
        if self.show:
            self.bar.__exit__(*exc)
        return False


def _with_progress(work, show: bool, label: str):
    with _progress_bar(show) as new_task:
        return work(new_task(label))


def _emit(doc: dict[str, Any], out: Path | None, as_json: bool) -> None:
    from signsim.interrupts import deferred
    from signsim.results import dumps, write_atomic

    with deferred():  # a further Ctrl-C while the results are written acts once they are written
        text = dumps(doc)
        if out is not None:
            write_atomic(out, text + "\n")
        if as_json:
            sys.stdout.write(text + "\n")


@app.command("list", cls=_Command,
             help=_text("Name every problem, method, compressor, noise model, data source and data split, "
             "one line each."))
def list_() -> None:
    """Name every problem, method, compressor, noise model, data source and data split, one line each."""
    from rich.console import Console

    from signsim import data, methods, noise, problems
    from signsim.data.splits import SUMMARIES
    from signsim.render.tables import emit, listing
    from signsim.stages import tables

    def stage_rows(kind: str) -> list[tuple[str, str]]:
        return [(f, s + ("" if dft == "-" else f"; default {dft}")) for f, dft, s, _ in tables.rows(kind, False)]

    sections = {
        "problems": [(s.name, s.summary) for s in problems.registry().values()],
        "methods": [(s.name, f"{s.summary}; defaults: {s.defaults()}") for s in methods.registry().values()],
        "compressors": stage_rows("compressor"),
        "aggregations": stage_rows("aggregation"),
        "attacks": stage_rows("attack"),
        "noise models": [(m.name, m.summary) for m in noise.registry().values()],
        "data sources": [(d.name, d.summary) for d in data.registry().values()],
        "data splits": list(SUMMARIES.items()),
    }
    console = Console()
    for t in listing(sections):
        emit(console, t)
        emit(console, "")


def _compile_notice(quiet: bool, cfg) -> None:
    """One line on stderr, terminal or not, when the run loop for ``cfg``'s problem is not in the kernel cache
    yet (called once the run is built, so the engine's modules are loaded already)."""
    from signsim import problems
    from signsim.commands.compile import COMPILE_NOTICE, loop_is_cached
    from signsim.engine.specialize import family_of

    if not quiet and not loop_is_cached(family_of(problems.get(cfg.problem).code), cfg.dtype):
        print(COMPILE_NOTICE, file=sys.stderr, flush=True)


@app.command("check-stage", cls=_Command,
             help=_text("The contract test of a compressor (yours with --plugin): bias, E||C(x)-x||^2/||x||^2 against "
                        "its omega or 1 - alpha, bits against its formula, kernel against its NumPy reference, on "
                        "standard vectors; exit 1 when a declared property is violated."))
def check_stage(
    spec: Annotated[str, typer.Argument(help=_text("compressor spec, e.g. qsgd:4 or your plugin's name"),
                                        show_default=False)],
    plugin: Annotated[str | None, _opt("FILE.py[,FILE.py]: load your own stages first")] = None,
    samples: Annotated[int, _opt("draws per vector (default: 2000)")] = 2000,
    seed: Annotated[int, _opt("random seed (default: 0)")] = 0,
) -> None:
    from signsim.commands.check_stage import check_stage as run_check

    lines, ok = run_check(spec, plugin, samples, seed)
    print("\n".join(lines))
    if not ok:
        raise typer.Exit(1)


@app.command("compile", cls=_Command,
             help=_text("Compile every kernel ahead of time (e.g. in a Docker image or a CI cache step); "
             "--clear empties signsim's kernel cache instead."))
def compile_(clear: Annotated[bool, _flag("remove the cached kernels and exit", "--clear")] = False) -> None:
    from signsim.commands import compile as compiling

    if clear:
        print(f"removed {compiling.clear()} cached kernel files", file=sys.stderr)
        return
    n = compiling.compile_all(main, lambda line: print(line, file=sys.stderr, flush=True))
    print(f"compiled: {n} warm-up commands ran", file=sys.stderr)


def _interrupted_code() -> int:
    from signsim import interrupts

    return interrupts.exit_code()


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> None:
    # one line, whatever the user's names hold (a file or archive member name may contain line breaks)
    one_line = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(message))
    print(f"signsim: error: {one_line}", file=sys.stderr)
    sys.exit(code)


def _usage_error_type() -> type[Exception]:
    """Typer >= 0.2x vendors click and raises its own exception type; older Typer raises click's."""
    try:
        return typer.TyperException
    except AttributeError:  # pragma: no cover - older Typer
        import click

        return click.ClickException


def main(argv: list[str] | None = None) -> None:
    """Entry point: one line on stderr and exit 2 for bad input, exit 130 on Ctrl-C and 143 on SIGTERM, never
    a traceback for any of them."""
    from signsim import interrupts

    previous = interrupts.install()
    try:
        if _EARLY:
            interrupts.note(_EARLY[-1])
            raise KeyboardInterrupt
        code = _main(argv)
        if interrupts.pending():  # an interrupt Python could not raise where it arrived (see interrupts)
            code = EXIT_INTERRUPTED
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    finally:
        interrupts.hold()
        interrupts.acknowledge()
        if _ENTRY:  # the work is done and its results written: a late Ctrl-C must not kill the exit
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, signal.SIG_IGN)
        else:
            interrupts.restore(previous)
            interrupts.release()
    if code in (EXIT_INTERRUPTED, EXIT_TERMINATED):
        code = interrupts.exit_code()
        print("signsim: interrupted" if code == EXIT_INTERRUPTED else "signsim: terminated", file=sys.stderr)
    if _ENTRY and (code in (EXIT_INTERRUPTED, EXIT_TERMINATED) or interrupts.abandoned()):
        # the results are written (atomically, flushed to disk). Leave now: a compiled chunk may still run in a
        # helper thread, and an interrupt that escaped some C call during start-up makes CPython's own exit
        # re-raise SIGINT (exit -2 instead of 130)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


def _main(argv: list[str] | None) -> int:
    usage_error = _usage_error_type()
    try:
        code = app(args=argv, prog_name="signsim", standalone_mode=False)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except InputError as e:
        _fail(str(e))
    except usage_error as e:
        if type(e).__name__ == "NoArgsIsHelpError":
            return 0
        _fail(" ".join(e.format_message().split()))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except MemoryError:
        _fail("not enough memory for this problem size (reduce --dim, --workers or the data)")
    except RuntimeError as e:  # click's Abort: an unexpected end of input
        if type(e).__name__ != "Abort":
            raise
        cause = e.__cause__ or e.__context__
        if isinstance(cause, KeyboardInterrupt):
            return EXIT_INTERRUPTED
        _fail(f"unexpected end of input ({' '.join(str(cause).split()) or type(cause).__name__})")
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        _fail(f"{where}{e.strerror or e}")
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    main()
