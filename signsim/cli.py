"""The ``signsim`` command line. It parses options, calls one function from ``signsim.commands`` and renders
the result; no mathematics here. Heavy modules (numpy, numba, matplotlib) are imported inside the commands so
that ``signsim --help`` starts instantly.

Exit codes (interface.md): 0 success, 1 check-spb verdict not "holds", 2 bad input (one line on stderr),
130 interrupted (partial results kept).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from signsim.errors import InputError

app = typer.Typer(
    name="signsim",
    help="Simulate sign-based, 1-bit distributed optimization (signSGD, majority vote, Signum, SSDM, "
    "error feedback) and the statistics that decide whether it works.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130

Opt = typer.Option
P_RUN = "Run"
P_PROBLEM = "Problem"
P_OUT = "Output"
P_DATA = "Data (logistic, least-squares, mlp)"


def _explicit(local: dict[str, Any], skip: set[str]) -> dict[str, Any]:
    return {k: v for k, v in local.items() if k not in skip and v is not None}


@app.command()
def run(
    config: Annotated[Path | None, Opt("--config", help="TOML file of options; flags override it",
                                       rich_help_panel=P_OUT)] = None,
    problem: Annotated[str | None, Opt(help="rosenbrock | quadratic | sign-trap | vote-trap | logistic | "
                                       "least-squares | mlp", rich_help_panel=P_PROBLEM)] = None,
    dim: Annotated[int | None, Opt(help="dimension d (rosenbrock, quadratic)", rich_help_panel=P_PROBLEM)] = None,
    noise: Annotated[str | None, Opt(help="gaussian:S | laplace:S | uniform:S | student-t:NU:S | bimodal:S | "
                                     "skewed:S | none", rich_help_panel=P_PROBLEM)] = None,
    kappa: Annotated[float | None, Opt(help="quadratic: L_i log-spaced in [1, kappa]",
                                       rich_help_panel=P_PROBLEM)] = None,
    oracle: Annotated[str | None, Opt(help="rosenbrock: full | term", rich_help_panel=P_PROBLEM)] = None,
    trap_eps: Annotated[float | None, Opt(help="sign-trap: eps in (0, 1)", rich_help_panel=P_PROBLEM)] = None,
    trap_lambda: Annotated[float | None, Opt(help="vote-trap: lambda > 0", rich_help_panel=P_PROBLEM)] = None,
    x0: Annotated[float | None, Opt(help="starting point: every coordinate set to this value",
                                    rich_help_panel=P_PROBLEM)] = None,
    data: Annotated[str | None, Opt(help="builtin:digits | builtin:breast-cancer | FILE (.svm/.libsvm/.txt, .csv, "
                                    ".npz, IMAGES,LABELS idx)", rich_help_panel=P_DATA)] = None,
    split: Annotated[str | None, Opt(help="shared | iid | label-skew:ALPHA | sorted | split-batch",
                                     rich_help_panel=P_DATA)] = None,
    test_fraction: Annotated[float | None, Opt(help="held-out fraction (default 0.2)",
                                               rich_help_panel=P_DATA)] = None,
    standardize: Annotated[bool | None, Opt("--standardize/--no-standardize", help="standardize features (default on)",
                                            rich_help_panel=P_DATA, show_default=False)] = None,
    intercept: Annotated[bool | None, Opt("--intercept/--no-intercept", help="add a constant feature (GLMs, on)",
                                          rich_help_panel=P_DATA, show_default=False)] = None,
    replicate: Annotated[int | None, Opt(help="repeat the training set r times", rich_help_panel=P_DATA)] = None,
    positive_class: Annotated[float | None, Opt(help="logistic: this label is +1, the rest -1",
                                                rich_help_panel=P_DATA)] = None,
    l2: Annotated[float | None, Opt(help="L2 regularization lambda", rich_help_panel=P_DATA)] = None,
    hidden: Annotated[int | None, Opt(help="mlp: hidden units (32)", rich_help_panel=P_DATA)] = None,
    activation: Annotated[str | None, Opt(help="mlp: relu | tanh", rich_help_panel=P_DATA)] = None,
    method: Annotated[str | None, Opt(help="sgd | signsgd | signum | ssdm | ef-signsgd | sto-sign",
                                      rich_help_panel=P_RUN)] = None,
    workers: Annotated[int | None, Opt(help="number of workers M", rich_help_panel=P_RUN)] = None,
    aggregate: Annotated[str | None, Opt(help="server rule: majority | mean (default: the method's)",
                                         rich_help_panel=P_RUN)] = None,
    batch_size: Annotated[int | None, Opt(help="minibatch size tau per worker", rich_help_panel=P_RUN)] = None,
    iters: Annotated[int | None, Opt(help="iterations K", rich_help_panel=P_RUN)] = None,
    lr: Annotated[float | None, Opt(help="step size gamma_0", rich_help_panel=P_RUN)] = None,
    lr_schedule: Annotated[str | None, Opt(help="constant | sqrt (gamma_0 / sqrt(k+1))",
                                           rich_help_panel=P_RUN)] = None,
    momentum: Annotated[float | None, Opt(help="momentum beta in [0, 1) (default: the method's)",
                                          rich_help_panel=P_RUN)] = None,
    byzantine: Annotated[int | None, Opt(help="number of blind Byzantine workers", rich_help_panel=P_RUN)] = None,
    attack: Annotated[str | None, Opt(help="invert | random", rich_help_panel=P_RUN)] = None,
    sign_zero: Annotated[str | None, Opt(help="sign(0) in messages: random | plus | zero",
                                         rich_help_panel=P_RUN)] = None,
    tie: Annotated[str | None, Opt(help="tied majority vote: random | zero", rich_help_panel=P_RUN)] = None,
    eval_every: Annotated[int | None, Opt(help="record history every N iterations (default K/100)",
                                          rich_help_panel=P_RUN)] = None,
    seed: Annotated[int | None, Opt(help="random seed (default 0)", rich_help_panel=P_RUN)] = None,
    out: Annotated[Path | None, Opt(help="write the results JSON here (atomically)", rich_help_panel=P_OUT)] = None,
    json_: Annotated[bool, Opt("--json", help="print the results JSON on stdout, nothing else",
                               rich_help_panel=P_OUT)] = False,
    quiet: Annotated[bool, Opt("--quiet", "-q", help="no progress bar or table", rich_help_panel=P_OUT)] = False,
    plot: Annotated[Path | None, Opt(help="save loss against iterations and bits (PNG, PDF, SVG)",
                                     rich_help_panel=P_OUT)] = None,
) -> None:
    """Simulate one optimization run of M workers, print a summary, write results."""
    given = _explicit(locals(), {"config", "out", "json_", "quiet", "plot"})
    from signsim import config as cfgmod
    from signsim.commands.run import run as run_command

    values = cfgmod.load_toml(config) if config is not None else {}
    if plot is not None and plot.suffix.lower() not in {".png", ".pdf", ".svg"}:
        raise InputError(f"--plot {plot}: use a .png, .pdf or .svg file name")
    show = not (quiet or json_)
    if "compare" in values:
        _run_comparison(values, given, out, json_, show, plot)
        return
    values.update(given)
    cfg = cfgmod.resolve(values)
    doc = _with_progress(lambda progress: run_command(cfg, progress), show, f"{cfg.method} on {cfg.problem}")
    _emit(doc, out, json_)
    if plot is not None:
        from signsim.render.plots import run_figure

        run_figure(doc, plot)
    if show:
        from signsim.render.tables import run_summary, stderr_console

        console = stderr_console()
        for w in doc["warnings"]:
            console.print(f"[yellow]warning:[/] {w}")
        console.print(run_summary(doc))
    else:
        for w in doc["warnings"]:
            print(f"warning: {w}", file=sys.stderr)
    if doc["status"] == "interrupted":
        raise typer.Exit(EXIT_INTERRUPTED)


def _run_comparison(values, given, out, json_, show, plot) -> None:
    from signsim.commands.compare import compare

    variants = values.pop("compare")
    with _progress_bar(show) as new_task:
        doc = compare(values, variants, given, new_task)
    _emit(doc, out, json_)
    if plot is not None:
        from signsim.render.plots import comparison_figure

        comparison_figure(doc, plot)
    if show:
        from signsim.render.tables import comparison_table, stderr_console

        console = stderr_console()
        for w in sorted({w for d in doc["runs"] for w in d["warnings"]}):
            console.print(f"[yellow]warning:[/] {w}")
        console.print(comparison_table(doc))
    if doc["status"] == "interrupted":
        raise typer.Exit(EXIT_INTERRUPTED)


class _progress_bar:
    """A Rich progress display on stderr (or nothing); ``new_task(label)`` returns a progress callback."""

    def __init__(self, show: bool):
        self.show = show

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
    from signsim.results import dumps, write_atomic

    text = dumps(doc)
    if out is not None:
        write_atomic(out, text + "\n")
    if as_json:
        sys.stdout.write(text + "\n")


@app.command("list")
def list_() -> None:
    """Name every problem, method and noise model, one line each."""
    from rich.console import Console

    from signsim import methods, noise, problems
    from signsim.render.tables import listing

    sections = {
        "problems": [(s.name, s.summary) for s in problems.registry().values()],
        "methods": [(s.name, s.summary) for s in methods.registry().values()],
        "noise models": [(m.name, m.summary) for m in noise.registry().values()],
    }
    console = Console()
    for t in listing(sections):
        console.print(t)
        console.print()


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> None:
    print(f"signsim: error: {message}", file=sys.stderr)
    sys.exit(code)


def _usage_error_type() -> type[Exception]:
    """Typer >= 0.2x vendors click and raises its own exception type; older Typer raises click's."""
    try:
        return typer.TyperException
    except AttributeError:  # pragma: no cover - older Typer
        import click

        return click.ClickException


def main(argv: list[str] | None = None) -> None:
    """Entry point: one line on stderr and exit 2 for bad input, exit 130 on Ctrl-C, never a traceback for
    either."""
    usage_error = _usage_error_type()
    try:
        code = app(args=argv, prog_name="signsim", standalone_mode=False)
    except InputError as e:
        _fail(str(e))
    except usage_error as e:
        if type(e).__name__ == "NoArgsIsHelpError":
            sys.exit(0)
        _fail(" ".join(e.format_message().split()))
    except KeyboardInterrupt:
        print("signsim: interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
