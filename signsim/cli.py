"""The ``signsim`` command line. It parses options, calls one function from ``signsim.commands`` and renders
the result; no mathematics here. Heavy modules (numpy, numba, matplotlib) are imported inside the commands so
that ``signsim --help`` starts instantly.

Exit codes: 0 success, 1 check-spb verdict not "holds", 2 bad input (one line on stderr), 130 interrupted
by Ctrl-C, 143 by SIGTERM (partial results kept in both cases).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

#: signals that arrive while the command line starts (imports) are remembered and acted on by ``main``
_EARLY: list[int] = []


def _is_entry(name: str, argv0: str) -> bool:
    """Whether this process is the signsim command: ``signsim`` (the console script), ``python -m signsim``
    (argv[0] is then the package's ``__main__.py``) or ``python -m signsim.cli``; not a program or test
    importing the module."""
    path = argv0.replace(os.sep, "/").split("/")
    return name == "__main__" or path[-1] == "signsim" or path[-2:] == ["signsim", "__main__.py"]


#: this process is the signsim command (not a program or test importing the module)
_ENTRY = _is_entry(__name__, sys.argv[0] if sys.argv else "")
if _ENTRY:
    from signsim.interface import memory

    memory.command_process()  # (before NumPy's import)
    for _sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(_sig) is not signal.SIG_IGN:  # (a job a script started with &: SIGINT stays ignored)
            signal.signal(_sig, lambda signum, frame: _EARLY.append(signum))

import inspect  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Annotated, Any  # noqa: E402

import typer  # noqa: E402
from typer.core import TyperCommand, TyperGroup  # noqa: E402

from signsim.errors import InputError  # noqa: E402
from signsim.interface import options  # noqa: E402


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


def _text(help: str) -> str:
    """Help text as written: brackets ("[grid]", "[0, 1)") are not Rich markup."""
    from rich.markup import escape

    return escape(help)


def _parameter(o: options.Option, command: str) -> inspect.Parameter:
    """The Typer parameter of one option of ``signsim.interface.options``. Values arrive as text and are parsed by the
    API (one parser, one message for bad input); flags are booleans, repeatable options lists of text."""
    kw: dict[str, Any] = {"help": _text(o.help_for(command)), "show_default": False}
    if o.panel is not None:
        kw["rich_help_panel"] = o.panel
    if o.kind == "bool":
        kind: Any = bool | None if o.record else bool
        kw["metavar"] = ""
        default = None if o.record else o.default
    else:
        kind = list[str] | None if o.kind == "strs" else str | None
        if o.metavar is not None:
            kw["metavar"] = o.metavar
        default = None
    return inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=default,
                             annotation=Annotated[kind, typer.Option(*o.decls, **kw)])


def _argument(command: str) -> list[inspect.Parameter]:
    if command not in options.ARGUMENTS:
        return []
    name, _, help = options.ARGUMENTS[command]
    kind = list[Path] if command == "plot" else Path
    return [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                              annotation=Annotated[kind, typer.Argument(help=_text(help), show_default=False)])]


def _command(name: str, help: str):
    """Register ``fn(**opts)`` as the command ``name`` whose parameters are its rows of
    ``signsim.interface.options``."""

    def register(fn):
        def command(**opts: Any) -> None:
            return fn(**opts)

        command.__signature__ = inspect.Signature(
            _argument(name) + [_parameter(o, name) for o in options.of_command(name).values()])
        command.__doc__ = help
        command.__name__ = fn.__name__
        app.command(name, help=_text(help), cls=_Command)(command)
        return command

    return register


FIGURE_SUFFIXES = {".png", ".pdf", ".svg"}


def _figure(plot: str | None, where: str = "--plot") -> Path | None:
    """--plot checked before any work (a bad path is exit 2, not a lost run)."""
    if plot is None:
        return None
    from signsim.paths import output_file

    output_file(plot, where)
    if Path(plot).suffix.lower() not in FIGURE_SUFFIXES:
        raise InputError(f"{where} {plot}: use a .png, .pdf or .svg file name")
    return Path(plot)


def _api_options(opts: dict[str, Any], command: str) -> dict[str, Any]:
    """The options the API takes (the command line's own, --json, --quiet and --plot, left out)."""
    table = options.of_command(command)
    return {k: v for k, v in opts.items() if k in table and not table[k].cli_only and k != "config"}


def _execute(command: str, opts: dict[str, Any], progress_label: bool = True) -> dict[str, Any]:
    """The command through the API's one path, with a progress bar on a terminal and the compile notice."""
    from signsim.api import execute

    quiet = opts["quiet"]
    bar = progress_label and not (quiet or opts["json"])
    with _compile_notice(quiet, command, spinner=not (bar or opts["json"])) as notice, \
            _progress_bar(bar) as new_task, _stdout_to_stderr(opts["json"]):
        return execute(command, opts["config"], _api_options(opts, command),
                       progress_for=new_task if progress_label else None, on_start=notice.started)


@contextlib.contextmanager
def _stdout_to_stderr(active: bool):
    """While a --json document is computed, what user code prints (a model file's ``print``, a plugin's, a process
    it starts) goes to stderr, at the file descriptor too: stdout holds the document only."""
    if not active:
        yield
        return
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no file descriptor 1 (stdout closed): Python's own stream only
        saved = None
    try:
        if saved is not None:
            os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


def _show(opts: dict[str, Any], items) -> None:
    """Print ``items(signsim.render.tables)`` to stderr unless --quiet or --json."""
    if opts["quiet"] or opts["json"]:
        return
    from signsim.render import tables

    console = tables.stderr_console()
    for item in items(tables):
        tables.emit(console, item)


@_command("run", help="Simulate one optimization run of M workers, print a summary, write results.")
def run(**opts: Any) -> None:
    plot = _figure(opts["plot"])
    show = not (opts["quiet"] or opts["json"])
    doc = _execute("run", opts)
    _emit(doc, opts["json"])
    runs = doc["runs"] if "comparison" in doc else [doc]
    if failed := [d for d in runs if d.get("status") == "failed"]:  # a stage broke its contract mid-run: the
        _fail(failed[0]["error"])  # results so far are written (--out, --json), then one line, exit 2
    if plot is not None:
        from signsim.render.figures import runs_overview, save

        save(runs_overview(runs), plot)
    warnings = sorted({w for d in runs for w in d["warnings"]}) if "comparison" in doc else doc["warnings"]
    if show:
        from signsim.render.tables import comparison_table, emit, run_summary, split_line, stderr_console

        console = stderr_console()
        for w in warnings:
            emit(console, f"[yellow]warning:[/] {w}")
        emit(console, comparison_table(doc) if "comparison" in doc else run_summary(doc))
        if "comparison" not in doc and (line := split_line(doc)):
            emit(console, line)
        for d in runs:  # --lr theory: the theorem, its step and constants, one line a run
            if "lr_theory" in d:
                emit(console, (f"{d['label']}: " if d.get("label") else "") + d["lr_theory"]["line"])
    elif "comparison" not in doc:
        for w in warnings:
            print(f"warning: {w}", file=sys.stderr)
    _diverged(runs)
    if doc["status"] == "interrupted":
        raise typer.Exit(_interrupted_code())


@_command("check-spb", help="Estimate per-coordinate success probabilities at a point, decide SPB, report "
          "rho-norms. Exit 0 when SPB holds, 1 when it is violated or inconclusive.")
def check_spb(**opts: Any) -> None:
    doc = _execute("check-spb", opts, progress_label=False)
    _emit(doc, opts["json"])
    _show(opts, lambda tables: tables.spb_report(doc))
    if opts["quiet"] or opts["json"]:  # the table shows them otherwise
        for w in doc.get("warnings", ()):
            print(f"warning: {w}", file=sys.stderr)
    raise typer.Exit(0 if doc["verdict"] == "holds" else 1)


@_command("diversity", help="Gradient diversity Delta_S, the batch-size bound B_S, the noise scale B_simple and "
          "the predicted speedup at a point; per worker and between workers when data are split.")
def diversity(**opts: Any) -> None:
    doc = _execute("diversity", opts)
    _emit(doc, opts["json"])
    if doc["command"] == "diversity":
        _show(opts, lambda tables: tables.diversity_report(doc))
    else:
        _show(opts, lambda tables: tables.experiment_tables(doc))
    if opts["quiet"] or opts["json"]:  # the table shows them otherwise
        for w in doc.get("warnings", ()):
            print(f"warning: {w}", file=sys.stderr)
    if doc.get("status") == "interrupted":  # an [experiment] stopped by Ctrl-C or SIGTERM: partial rows kept
        raise typer.Exit(_interrupted_code())


@_command("bound", help="Evaluate the theorems' convergence bounds for a problem's constants, the majority-vote "
          "noise reduction, or overlay a finished run.")
def bound(**opts: Any) -> None:
    plot = _figure(opts["plot"])
    doc = _execute("bound", opts, progress_label=False)
    _emit(doc, opts["json"])
    if plot is not None:
        from signsim.render.figures import bound_overview, save

        save(bound_overview(doc), plot)
    _show(opts, lambda tables: tables.bound_report(doc))
    if "overlay" in doc and doc["overlay"]["exceeded"]:
        print(f"signsim: observation exceeds its bound: {', '.join(doc['overlay']['exceeded'])}", file=sys.stderr)


@_command("sweep", help="Run a grid of runs (local processes by default, or a Dask cluster) into tidy, "
          "resumable results: runs/<id>.json, results.csv, manifest.json. Exit 1 when some runs failed.")
def sweep(**opts: Any) -> None:
    from signsim.api import sweep_document

    file, json_, quiet = opts.pop("file"), opts.pop("json"), opts.pop("quiet")
    show = not (quiet or json_)
    here = opts.get("executor") in (None, "local") or opts.get("scheduler") == "local"

    def notices() -> None:  # once the options are checked (``sweep_document``), before the first run
        if not quiet and not opts["dry_run"] and here:
            from signsim.commands.compile import sweep_notices  # remote Dask workers keep their own caches

            out = opts.get("out") or str(Path("results") / file.stem)
            for line in sweep_notices(file, out, opts.get("plugin")) if file.is_file() else ():
                print(line, file=sys.stderr, flush=True)

    log_lines: list[str] = []
    with _progress_bar(show and not opts["dry_run"]) as new_task, _stdout_to_stderr(json_):
        try:
            doc, spec, _ = sweep_document(file, **opts, progress=new_task(f"sweep {file.name}"),
                                          log=log_lines.append, before=notices)
        finally:
            for line in log_lines:
                print(f"signsim: {line}", file=sys.stderr)
            log_lines.clear()
    if doc.get("dry_run"):
        if json_:
            _emit(doc, True)
        elif not quiet:
            from signsim.render.tables import emit, stderr_console, sweep_plan

            emit(stderr_console(), sweep_plan(doc["runs"], spec.parameters))
        return
    _emit(doc, json_)
    if doc.get("stopped"):
        _fail(doc["stopped"], 1)
    if show:
        from signsim.render.tables import emit, stderr_console, sweep_summary

        for item in sweep_summary(doc):
            emit(stderr_console(), item)
    if doc["interrupted"]:
        raise typer.Exit(_interrupted_code())
    if doc["statuses"].get("failed"):
        raise typer.Exit(1)


@_command("plot", help="Figures from results: run JSONs (or the result of a config with compare variants), a "
          "sweep directory, check-spb, diversity or bound results.")
def plot(**opts: Any) -> None:
    from signsim.commands.plot import plot as plot_command
    from signsim.paths import output_file

    results, out = opts["results"], opts["out"]
    if out is not None:
        target = _figure(out, "--out")
    else:
        target = results[0].with_suffix(".png") if not results[0].is_dir() else results[0] / "figure.png"
        output_file(target, "the default --out")
    written = plot_command(results, target, opts["x"], opts["y"], opts["group_by"], opts["where"], opts["facet"],
                           lambda message: print(f"signsim: warning: {message}", file=sys.stderr))
    print(written)


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


def _emit(doc: dict[str, Any], as_json: bool) -> None:
    """The results JSON on stdout (--json); the API wrote --out."""
    if as_json:
        from signsim.interface.results import dumps

        sys.stdout.write(dumps(doc) + "\n")


@app.command("list", cls=_Command,
             help=_text("Name every problem, method, compressor, noise model, data source and data split, "
             "one line each."))
def list_() -> None:
    """Name every problem, method, compressor, noise model, data source and data split, one line each."""
    from signsim import data, methods, noise, problems
    from signsim.data.splits import SUMMARIES
    from signsim.render import stage_tables as tables
    from signsim.render.tables import emit, listing, output_console
    from signsim.stages import kinds

    def stage_rows(kind: str) -> list[tuple[str, str]]:
        return [(f, s + ("" if dft == "-" else f"; default {dft}")) for f, dft, s, _ in tables.rows(kind, False)]

    sections = {
        "problems": [(s.name, s.summary) for s in problems.registry().values()],
        "methods": [(s.name, f"{s.summary}; defaults: {s.defaults()}") for s in methods.registry().values()],
        # every kind of stage with modules of its own, under its table's title (signsim.stages.kinds)
        **{k.title[0].lower() + k.title[1:].replace("`", ""): stage_rows(k.name) for k in kinds.PRIMARY},
        "noise models": [(m.name, m.summary) for m in noise.registry().values()],
        "data sources": [(d.name, d.summary) for d in data.registry().values()],
        "data splits": list(SUMMARIES.items()),
    }
    console = output_console()
    for t in listing(sections):
        emit(console, t)
        emit(console, "")


def _diverged(docs: list[dict[str, Any]]) -> None:
    """One line on stderr per diverged run (exit code unchanged: a diverged run is a result)."""
    from signsim.commands.run import diverged_message

    for doc in docs:
        if (line := diverged_message(doc)) is not None:
            print(f"signsim: {line}", file=sys.stderr)
        if doc.get("note"):  # a budget not reached: one line, in every mode, as a divergence
            label = f"{doc['label']}: " if doc.get("label") else ""
            print(f"signsim: {label}{doc['note']}", file=sys.stderr)


def _composition(cfg) -> str:
    """A run's composition of stages as the compile notice names it: ``signum: sign, majority``."""
    parts = [cfg.compressor, cfg.error_feedback if cfg.error_feedback != "none" else None, cfg.aggregate,
             f"{cfg.attack} attack" if cfg.byzantine else None,
             f"server-opt {cfg.server_opt}" if cfg.server_opt != "sgd" else None,
             f"grad-estimator {cfg.grad_estimator}" if cfg.grad_estimator != "none" else None,
             f"down-compressor {cfg.down_compressor}" if cfg.down_compressor != "none" else None,
             *(f"plugin {Path(p).name}" for p in (cfg.plugin or "").split(",") if p)]
    return f"{cfg.method}: " + ", ".join(p for p in parts if p)


class _compile_notice:
    """While a command runs: one line on stderr just before its first kernel compiles (a cache miss:
    ``signsim.commands.compile.watch``), naming the kernels of ``cfg``'s family of problems and dtype (all
    kernels with ``cfg`` None); then, on a terminal and unless a progress bar shows already (``spinner``
    False), a spinner with the time spent compiling. Nothing with --quiet."""

    def __init__(self, quiet: bool, command: str, cfg=None, spinner: bool = True):
        self.quiet, self.command, self.cfg = quiet, command, cfg
        self.spinner = spinner and sys.stderr.isatty()
        self.watch = self.bar = None

    def __enter__(self):
        if not self.quiet:
            from signsim.commands.compile import watch
            from signsim.engine import warm

            self.watch = watch(self._first, self._busy)
            self.watch.__enter__()
            warm.NOTIFY = lambda message: print(message, file=sys.stderr, flush=True)  # a wait for it, said
        return self

    def __exit__(self, *exc):
        if self.watch is not None:
            from signsim.engine import warm

            self.watch.__exit__(*exc)
            warm.NOTIFY = lambda message: None
        return False

    def started(self, cfg) -> None:
        """The API's ``on_start``: the run's resolved config, once built (its family and dtype)."""
        self.cfg = cfg

    def _first(self, kernel: str = "") -> None:
        from signsim.commands.compile import notice

        family = kernel.split("__")[1] if kernel.count("__") >= 1 else None  # a family's copy: name__family[__key]
        cfg = self.cfg
        if cfg is not None:
            from signsim import problems
            from signsim.engine.dispatch import family_of

            family = family_of(problems.get(cfg.problem).code)
        elif family is not None:
            from signsim.engine.dispatch import FAMILIES

            family = family if family in FAMILIES else None  # not a family's copy (a hash of a plugin's source)
        print(notice(self.command, family, cfg.dtype if cfg is not None else "float64", kernel,
                     _composition(cfg) if cfg is not None else ""), file=sys.stderr, flush=True)

    def _busy(self, compiling: bool) -> None:
        if not self.spinner:
            return
        if compiling:
            import time

            from rich.progress import Progress, ProgressColumn, SpinnerColumn
            from rich.text import Text

            from signsim.render.tables import stderr_console

            self.t0 = t0 = getattr(self, "t0", None) or time.monotonic()  # the time spent over every compile

            class Spent(ProgressColumn):
                def render(self, task):
                    return Text(f"compiling kernels: {time.monotonic() - t0:.0f} s")

            self.bar = Progress(SpinnerColumn(), Spent(), console=stderr_console(), transient=True)
            self.bar.add_task("", total=None)
            self.bar.start()
        elif self.bar is not None:
            self.bar.stop()
            self.bar = None


@app.command("check-stage", cls=_Command,
             help=_text("The contract test of a stage (yours with --plugin): a compressor's bias, "
                        "E||C(x)-x||^2/||x||^2 against its omega or 1 - alpha, bits against its formula, kernel "
                        "against its NumPy reference, on standard vectors; a stage of any other kind (aggregation, "
                        "pre-aggregation, attack, server optimizer, estimator, error feedback, momentum) in a short "
                        "run of the compiled loop against its NumPy reference, iterates and bits; exit 1 when a "
                        "declared property is violated."))
def check_stage(
    spec: Annotated[str, typer.Argument(help=_text("stage spec, e.g. qsgd:4, krum:1, fedadam or your plugin's name"),
                                        show_default=False)],
    kind: Annotated[str | None, typer.Option(help=_text("the stage's kind, for a name several kinds share (none, "
                                                        "...); default: the kind that has it, a compressor first"),
                                             show_default=False)] = None,
    plugin: Annotated[str | None, typer.Option(help=_text("FILE.py[,FILE.py]: load your own stages first"),
                                               show_default=False)] = None,
    samples: Annotated[str, typer.Option(help=_text("draws per vector (default: 2000)"), show_default=False,
                                         metavar="<int>")] = "2000",
    seed: Annotated[str, typer.Option(help=_text("random seed (default: 0)"), show_default=False,
                                      metavar="<int>")] = "0",
) -> None:
    from signsim.commands.check_stage import check_stage as run_check

    lines, ok = run_check(spec, plugin, samples, seed, kind)
    print("\n".join(lines))
    if not ok:
        raise typer.Exit(1)


@_command("compile", help="Compile kernels ahead of time (e.g. in a Docker image or a CI cache step): every "
          "kernel, or those of --command, --family and --dtype; --clear empties signsim's kernel cache instead.")
def compile_(**opts: Any) -> None:
    import time

    from signsim.commands import compile as compiling

    if opts["clear"]:
        print(f"removed {compiling.clear()} cached kernel files", file=sys.stderr)
        return
    cmds = compiling.select(opts["command"], opts["family"], opts["dtype"])
    compiling.check_kept()
    print(f"signsim: {len(cmds)} warm-up commands: about {compiling.estimate(cmds):.0f} s on 2 cores",
          file=sys.stderr, flush=True)
    start = time.monotonic()
    n = compiling.compile_all(main, lambda line: print(line, file=sys.stderr, flush=True), cmds)
    print(f"compiled: {n} warm-up commands ran in {time.monotonic() - start:.0f} s", file=sys.stderr)


def _interrupted_code() -> int:
    from signsim.interface import interrupts

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
    from signsim.interface import interrupts

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
        import signsim

        signsim.remove_temporary_kernels()
        os._exit(code)
    if _ENTRY:
        from signsim.interface import memory

        memory.leaving()
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
        from signsim.interface.kernel_cache import writing_cache

        if writing_cache(e):  # the disk filled (or a quota ran out, or the folder is read-only) while saving a kernel
            import errno

            full = e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
            _fail(f"the kernel cache folder {os.environ.get('NUMBA_CACHE_DIR')}: {e.strerror or e} ("
                  + ("free space there, or set NUMBA_CACHE_DIR to a folder with room)" if full
                     else "set NUMBA_CACHE_DIR to a folder you can write)"))
        where = f"{e.filename}: " if e.filename else ""
        _fail(f"{where}{e.strerror or e}")
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    main()
