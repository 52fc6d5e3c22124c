"""Every option of signsim, declared once: its name, type, range, choices, default, help text, help panel, and
which commands and Python functions take it.

Everything else comes from this table: the command line's Typer parameters (``signsim.cli``), the Python API's
coercion and its set of accepted keywords (``signsim.api``), the checks of config files and sweep files
(``signsim.interface.config``), the fields and defaults of ``RunConfig``; tests check docs/reference.md's option tables,
the commands' own option dataclasses and the choices named elsewhere against it. A new option is one row.

Pure Python (no NumPy): ``signsim --help`` loads it.
"""

from __future__ import annotations

import math
import operator
import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from signsim.codes import Topology, names
from signsim.errors import InputError, shown
from signsim.numbers import MAX_SIZE, SPACE, to_float, to_int
from signsim.stages import catalog
from signsim.suggest import hint

# help panels of the command line
P_RUN = "Run"
P_PROBLEM = "Problem"
P_OUT = "Output"
P_TRACK = "Tracking (quantities recorded during the run)"
P_SYSTEM = "System (simulated wall-clock time, docs/theory.md §14)"
P_DATA = "Data (logistic, least-squares, mlp)"
P_SPB = "Success probabilities"
P_DIV = "Diversity"
P_BOUND = "Bounds"


#: the commands whose options describe a run (the diagnostics evaluate the run's problem at a point)
RUN_COMMANDS = ("run", "check-spb", "diversity", "bound")
DIAGNOSTICS = ("check-spb", "diversity", "bound")

#: the metavar shown by --help for each kind of value
METAVARS = {"int": "<int>", "float": "<float>", "str": "<str>", "path": "<path>", "file": "<str>"}


@dataclass(frozen=True)
class Option:
    """One option. ``kind``: int | float | bool | str | path (a file that must exist, shown ``<path>``) | file
    (a file to write, shown ``<str>``) | strs (repeatable text) | callable (Python only). Ranges are checked by
    ``check``; ``choices`` are the values a text option takes (others are refused, naming the close ones)."""

    name: str  # the Python keyword; the flag is --name with - for _
    kind: str
    help: str  # as --help shows it; "{default}" is replaced by the command's shown default
    commands: tuple[str, ...]  # the CLI commands that take it
    panel: str | None = None  # --help panel (None: the command's "Options")
    default: Any = None  # the value when it is not given (None: decided later, by the problem or the method)
    #: (command, default) where a command sets its own default (check-spb: the logistic problem)
    command_defaults: tuple[tuple[str, Any], ...] = ()
    #: (command, the default as --help shows it) for help texts with "{default}" (else the command's default)
    shown_defaults: tuple[tuple[str, str], ...] = ()
    lo: float | None = None  # smallest allowed value (None: unbounded)
    hi: float | None = None  # largest allowed value
    lo_open: bool = False  # lo itself excluded
    hi_open: bool = False  # hi itself excluded
    what: str = ""  # what the value means, for errors ("the step size")
    vector: bool = False  # a list of such numbers is accepted too (one per coordinate; config files, Python)
    #: words a number option also takes, kept as text (``--lr theory``, resolved by ``config.resolve``; ``--batch-size
    #: full``, kept: the exact local gradient)
    words: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()
    decls: tuple[str, ...] = ()  # the flags when not --name (--standardize/--no-standardize, --quiet/-q)
    record: bool = False  # a field of RunConfig: resolved, recorded in the results' "config"
    #: left out of a sweep's run ids while at its default (None for most), so that the ids of sweeps made before the
    #: option existed stay the same (``signsim.sweep.spec.run_id``)
    omit_unset: bool = False
    problem: bool = False  # read only by the problems that name it (the others refuse it)
    #: why the Python API does not take it (a command-line-only option); "" when it does
    cli_only: str = ""
    #: Python functions that take it besides the commands' own (``signsim.spb_from_samples``, ...)
    also: tuple[str, ...] = ()
    api_only: bool = False  # a Python keyword with no flag (progress callbacks)

    @property
    def flag(self) -> str:
        """The flag as the command line takes it: --name with - for _, or its one declared flag (``--async`` for
        ``asynchronous``, a Python keyword)."""
        if len(self.decls) == 1 and "/" not in self.decls[0]:
            return self.decls[0]
        return "--" + self.name.replace("_", "-")

    @property
    def api(self) -> tuple[str, ...]:
        """The Python functions that take it (``Result.figure`` is the ``plot`` command)."""
        if self.cli_only:
            return self.also
        return tuple(API_OF[c] for c in self.commands) + self.also

    def command_default(self, command: str) -> Any:
        """The command's own default, or None where the command uses the option's (``default``)."""
        return dict(self.command_defaults).get(command)

    def default_for(self, command: str) -> Any:
        own = self.command_default(command)
        return self.default if own is None else own

    def help_for(self, command: str) -> str:
        if "{default}" not in self.help:
            return self.help
        shown = dict(self.shown_defaults).get(command, str(self.default_for(command)))
        return self.help.replace("{default}", shown)

    @property
    def metavar(self) -> str | None:
        return METAVARS.get(self.kind)


#: the Python function of each command
API_OF = {"run": "run", "check-spb": "check_spb", "diversity": "diversity", "bound": "bound", "sweep": "sweep",
          "plot": "figure", "compile": "", "list": ""}

_R = RUN_COMMANDS
_D = DIAGNOSTICS


def _run(name, kind, help, panel, *, problem=False, default=None, commands=_R, **kw) -> Option:
    return Option(name, kind, help, commands, panel, default=default, record=True, problem=problem, **kw)


def _system_options() -> tuple[Option, ...]:
    """The system model's options (docs/theory.md §14): any one given turns the simulated clock on."""
    law = "const:VALUE | lognormal:MEDIAN:SIGMA | trace:FILE.csv"  # (not ":V:", which Rich shows as an emoji)
    kw = dict(commands=("run",), omit_unset=True)
    return (
        _run("compute", "str", f"seconds one worker takes per minibatch gradient: {law} (each worker's value drawn "
             "once from --seed; default: const:0)", P_SYSTEM, **kw),
        _run("uplink", "str", f"each worker's uplink in bits per second: {law} (default: const:inf)", P_SYSTEM, **kw),
        _run("downlink", "str", f"each worker's downlink in bits per second: {law} (default: const:inf)", P_SYSTEM,
             **kw),
        _run("latency", "float", "seconds added to every message (default: 0)", P_SYSTEM, lo=0, what="the latency",
             **kw),
        _run("server_bandwidth", "float", "the parameter server's own link in bits per second, shared by every "
             "message of a round (default: unlimited)", P_SYSTEM, lo=0, lo_open=True, what="the server's bandwidth",
             **kw),
        _run("topology", "str", "how messages travel: ps (a parameter server) | allreduce | allgather (rings among "
             "the round's participants; default: ps)", P_SYSTEM,
             choices=tuple(n for n in names(Topology) if n != "none"), **kw),
        _run("deadline", "float", "seconds after a round starts by which a participant's message must have arrived; "
             "later ones are counted but left out of the aggregate", P_SYSTEM, lo=0, lo_open=True,
             what="the deadline", **kw),
        _run("over_select", "float", "sample S + ceil(F S) clients a round (at most M) and aggregate the first S to "
             "finish", P_SYSTEM, lo=0, lo_open=True, hi=MAX_SIZE, what="the over-selection fraction", **kw),
        _run("asynchronous", "str", "asynchronous buffered aggregation (FedBuff): buffer:B[:const|:poly:A], the server "
             "steps after B uploads, each weighted by (1+tau)^-A for tau steps of staleness; --clients-per-round "
             "clients train at a time", P_SYSTEM, decls=("--async",), **kw),
        _run("budget_seconds", "float", "stop once the simulated clock reaches T seconds", P_SYSTEM, lo=0,
             lo_open=True, what="the time budget", **kw),
        _run("target", "str", "report the first recorded iteration at which loss:V or test_loss:V (<= V), or "
             "accuracy:V, train_acc:V or test_acc:V (>= V) holds, with its simulated time and bits", P_SYSTEM, **kw),
    )


#: the longest spec form a stage option's help shows: the help column of ``--help`` at 80 columns (Rich breaks a line
#: only at a space, and cuts off a longer word); a longer form is shown as ``NAME:...`` (``NAME[:...]`` when its
#: parameters may be left out; ``signsim list`` has it all)
HELP_FORM_WIDTH = 27


def help_form(name: str, form: str) -> str:
    """A stage's spec form as a stage option's help shows it (``HELP_FORM_WIDTH``)."""
    if len(form) <= HELP_FORM_WIDTH:
        return form
    return f"{name}[:...]" if form.startswith(f"{name}[") else f"{name}:..."


def _stages(kind: str, without: str = "") -> str:
    """The spec forms of the built-in stages of ``kind``, joined with " | ", for a stage option's help: from the
    generated catalog (``signsim.stages.catalog``, plain data: no stage is imported), leaving out the stages that
    set the flag ``without`` (a lazy error feedback is for the workers' messages only)."""
    return " | ".join(help_form(name, form) for _, name, form, flags in catalog.STAGES[kind] if without not in flags)


#: every option, in the order --help shows them; RunConfig's fields are the rows with record=True
TABLE: tuple[Option, ...] = (
    Option("config", "path", "TOML file of options; flags override it", _R),
    _run("problem", "str", "rosenbrock | quadratic | sign-trap | vote-trap | logistic | least-squares | model "
         "(with --model) | mlp (default: {default})", P_PROBLEM, default="rosenbrock",
         command_defaults=(("check-spb", "logistic"), ("diversity", "logistic"))),
    _run("dim", "int", "dimension d (rosenbrock, quadratic; default: 10)", P_PROBLEM, problem=True, lo=1,
         hi=MAX_SIZE),
    _run("noise", "str", "gaussian:S | laplace:S | uniform:S | student-t:NU:S (S the std for NU > 2, the scale for "
         "1 < NU <= 2) | bimodal:S | skewed:S | cauchy:C | stable:ALPHA:C | none (default: gaussian:1 for "
         "rosenbrock and quadratic, none for the others)", P_PROBLEM, problem=True),
    _run("kappa", "float", "quadratic: L_i log-spaced in [1, kappa] (default: 100)", P_PROBLEM, problem=True, lo=1,
         what="the condition number"),
    _run("oracle", "str", "rosenbrock: full | term (default: full)", P_PROBLEM, problem=True,
         choices=("full", "term")),
    _run("trap_eps", "float", "sign-trap: eps in (0, 1) (default: 0.5)", P_PROBLEM, problem=True, lo=0, hi=1,
         lo_open=True, hi_open=True),
    _run("trap_lambda", "float", "vote-trap: lambda > 0 (default: 6)", P_PROBLEM, problem=True, lo=0, lo_open=True),
    _run("x0", "float", "starting point: every coordinate set to this value; a config file may give a vector "
         "instead (default: the problem's)", P_PROBLEM, problem=True, vector=True),
    _run("noise_scales", "str", "per-coordinate noise scales: first:K | power:A | FILE.npy", P_PROBLEM),
    _run("data", "str", "builtin:digits | builtin:breast-cancer | FILE (.svm/.libsvm/.txt, .csv, .npz, "
         "IMAGES,LABELS idx) (default: builtin:breast-cancer; mlp builtin:digits)", P_DATA, problem=True),
    _run("split", "str", "shared | iid | label-skew:ALPHA[:MIN] | shards:K | power-law:A | sorted | split-batch "
         "(default: shared)", P_DATA, problem=True),
    _run("test_fraction", "float", "held-out fraction (default: 0.2)", P_DATA, problem=True, lo=0, hi=1,
         hi_open=True),
    _run("standardize", "bool", "standardize features (default: on)", P_DATA, problem=True,
         decls=("--standardize/--no-standardize",)),
    _run("intercept", "bool", "add a constant feature (GLMs; default: on)", P_DATA, problem=True,
         decls=("--intercept/--no-intercept",)),
    _run("replicate", "int", "repeat the training set r times (default: 1)", P_DATA, problem=True, lo=1, hi=MAX_SIZE),
    _run("positive_class", "float", "logistic: this label is +1, the rest -1", P_DATA, problem=True),
    _run("l2", "float", "L2 regularization lambda (default: 0)", P_DATA, problem=True, lo=0),
    _run("hidden", "int", "mlp: hidden units (default: 32)", P_DATA, problem=True, lo=1, hi=MAX_SIZE),
    _run("activation", "str", "mlp: relu | tanh (default: relu)", P_DATA, problem=True, choices=("relu", "tanh")),
    _run("model", "str", "your PyTorch model: a Python file defining model(), loss(output, target) and data() "
         "(docs/api.md; needs signsim[torch]; sets --problem model)", P_PROBLEM, problem=True,
         commands=("run", "check-spb", "diversity")),
    _run("model_gradients", "str", "with --model: vmap (torch.func.vmap over the workers) | grouped (every worker's "
         "minibatch gradient from one forward and backward pass: models whose trained layers are Linear and Conv; "
         "equal to rounding) | auto (grouped where the model allows; default: vmap)", P_PROBLEM, problem=True,
         choices=("vmap", "grouped", "auto"), commands=("run", "check-spb", "diversity"), omit_unset=True),
    _run("method", "str", "sgd | signsgd | signum | ssdm | ef-signsgd | sto-sign | lion | qsgd | terngrad | topk-ef "
         "| randk | ef21 | ef21-bc | ef21-hb | clag | diana | marina | fedprox | scaffold | natural | onebit-sgd "
         "(signsim list; default: ssdm)",
         P_RUN, default="ssdm"),
    _run("compressor", "str", f"{_stages('compressor')} (signsim list; default: the method's)", P_RUN),
    _run("error_feedback", "str", f"{_stages('error_feedback')} (default: the method's)", P_RUN),
    _run("grad_estimator", "str", f"{_stages('estimator')} (DIANA's shifts; SCAFFOLD's control variates; MARINA's "
         "compressed differences of exact gradients; default: none)", P_RUN, default="none", commands=("run",)),
    _run("workers", "int", "number of workers M (default: 8; vote-trap 3)", P_RUN, default=8, lo=1, hi=MAX_SIZE,
         also=("spb_from_samples",)),
    _run("aggregate", "str", f"server rule: {_stages('aggregation')} (default: the method's)", P_RUN),
    _run("pre_aggregate", "str", "pre-aggregations applied in order before --aggregate, a comma list of up to 3: "
         f"{_stages('pre_aggregation')} (default: none)", P_RUN, default="none", commands=("run",)),
    _run("batch_size", "int", "minibatch size tau per worker (default: {default}); full: each worker's exact local "
         "gradient, every sample of its share once (data problems)", P_RUN, default=1, lo=1,
         hi=MAX_SIZE, words=("full",), command_defaults=(("check-spb", 1),),
         shown_defaults=(("run", "1; mlp 32"), ("diversity", "1; mlp 32"), ("bound", "1; mlp 32")),
         also=("spb_from_samples",)),
    _run("iters", "int", "iterations K (default: 2000)", P_RUN, default=2000, lo=0, hi=10**15),
    _run("lr", "float", "step size gamma_0, or theory: the step of the method's convergence theorem from the "
         "problem's constants (docs/theory.md §3.6) (default: 0.01, or the method's or problem's own)", P_RUN,
         default=1e-2, lo=0, lo_open=True, what="the step size", words=("theory",)),
    _run("lr_schedule", "str", "constant | sqrt (gamma_0 / sqrt(k+1)) (default: constant; vote-trap sqrt)", P_RUN,
         default="constant", choices=("constant", "sqrt")),
    _run("momentum", "float", "momentum beta in [0, 1) (Lion's beta1; default: the method's)", P_RUN, lo=0, hi=1,
         hi_open=True),
    _run("momentum2", "float", "Lion's beta2 in [0, 1) (default: 0.99)", P_RUN, lo=0, hi=1, hi_open=True),
    _run("weight_decay", "float", "lambda >= 0: the step adds gamma lambda x (default: 0)", P_RUN, default=0.0, lo=0),
    _run("votes", "str", "per-worker | binomial: exact vote counts for any M, for memoryless sign workers on a "
         "shared exact-gradient problem with closed-form noise (default: per-worker)", P_RUN, default="per-worker",
         choices=("per-worker", "binomial")),
    _run("dtype", "str", "float64 | float32: the type of the run's state vectors and data matrix; float32 halves "
         "their memory, arithmetic stays float64 (signsim run only; default: float64)", P_RUN, default="float64",
         choices=("float64", "float32")),
    _run("local_steps", "int", "local steps H per round: each participating worker takes H SGD steps from the "
         "server's x and sends its compressed model change (default: 1)", P_RUN, default=1, lo=1, hi=10**6,
         commands=("run", "check-spb", "bound")),
    _run("local_lr", "float", "the workers' local step size, gamma_0 of the schedule (default: --lr)", P_RUN, lo=0,
         lo_open=True, what="the local step size", commands=("run", "check-spb", "bound")),
    _run("prox_mu", "float", "FedProx's proximal weight mu: each local step adds mu (y - x) to the gradient, which "
         "holds the local iterate y near the server's x (Li et al. 2020; default: 0)", P_RUN, default=0.0, lo=0,
         what="the proximal weight", commands=("run",)),
    _run("server_lr", "float", "the server's step size: x <- x - server_lr gamma_k direction (default: 1)", P_RUN,
         default=1.0, lo=0, lo_open=True, what="the server step size", commands=("run", "check-spb", "bound")),
    _run("server_opt", "str", f"the server's optimizer: {_stages('server_optimizer')} (Reddi et al. 2021; default: "
         "sgd)", P_RUN, default="sgd", commands=("run",)),
    _run("down_compressor", "str", "compress the server's broadcast: none | a compressor spec (as --compressor); "
         "the workers receive C(u) of the server's update u and x moves by it (default: none)", P_RUN,
         default="none", commands=("run",)),
    _run("down_feedback", "str", f"the downlink's error feedback: {_stages('error_feedback', without='LAZY')} "
         "(needs a contractive --down-compressor; default: none)", P_RUN, default="none", commands=("run",)),
    _run("participation", "float", "fraction P in (0, 1] of the workers sampled each round (default: 1)", P_RUN,
         lo=0, hi=1, lo_open=True, what="the participation fraction", commands=("run", "check-spb", "bound")),
    _run("clients_per_round", "int", "S of the M workers sampled each round, uniformly without replacement "
         "(default: all; or P M, at least 1)", P_RUN, lo=1, hi=MAX_SIZE, commands=("run", "check-spb", "bound")),
    _run("catch_up", "str", "full | none: a sampled client that does not hold the current model first downloads "
         "it, 32 d bits (full), or not (none: the participants-only convention; default: full with partial "
         "participation)", P_RUN, choices=("full", "none"), commands=("run",), omit_unset=True),
    _run("budget_mb", "float", "stop once the bits sent up and down reach X megabytes (8e6 bits)", P_RUN, lo=0,
         lo_open=True, what="the communication budget", commands=("run",)),
    _run("budget_bits", "float", "stop once the bits sent up and down reach N bits", P_RUN, lo=0, lo_open=True,
         what="the communication budget", commands=("run",)),
    _run("byzantine", "int", "number of Byzantine workers (the first ones; see --attack; default: 0)", P_RUN,
         default=0, lo=0, hi=MAX_SIZE),
    _run("attack", "str", f"{_stages('attack')} (alie, ipm, mimic and the -opt ones omniscient; the -opt ones search "
         "their factor each round; label-flip: honest gradients on flipped labels, logistic and mlp; default: "
         "invert)", P_RUN, default="invert"),
    _run("sign_zero", "str", "sign(0) in messages: random | plus | zero (default: random; sign-trap zero)", P_RUN,
         default="random", choices=("random", "plus", "zero"), also=("spb_from_samples",)),
    _run("tie", "str", "tied majority vote: random | zero (default: random; sign-trap zero)", P_RUN,
         default="random", choices=("random", "zero"), also=("spb_from_samples",)),
    _run("eval_every", "int", "record history every N iterations (default: K/100, at least 1)", P_RUN, lo=1,
         hi=MAX_SIZE),
    _run("stop_loss", "float", "stop early once a recorded loss is <= this", P_RUN),
    _run("monotone", "bool", "keep a step only if f does not increase (signSGD option 2; default: off)", P_RUN,
         default=False, decls=("--monotone/--no-monotone",)),
    _run("seed", "int", "random seed (default: 0)", P_RUN, default=0, lo=0, hi=2**64 - 1,
         also=("spb_from_samples",)),
    _run("plugin", "str", "FILE.py[,FILE.py]: your own stages, written to the stage contract (docs/api.md)", P_RUN),
    *_system_options(),
    _run("track_spb", "int", "every N iterations, record the fraction of coordinates satisfying SPB, min rho and "
         "the rho-norms", P_TRACK, commands=("run",), lo=1, hi=MAX_SIZE),
    _run("track_diversity", "int", "every N iterations, record the gradient diversity and B_S", P_TRACK,
         commands=("run",), lo=1, hi=MAX_SIZE),
    _run("heterogeneity", "bool", "on split or heterogeneous data, measure each worker's bias and zeta^2 at x_0 "
         "before the run (the results' heterogeneity; default: on)", P_TRACK, default=True,
         decls=("--heterogeneity/--no-heterogeneity",), commands=("run",), omit_unset=True),
    # run
    Option("plot", "file", "save a figure: loss (or accuracy) against iterations and megabytes, SPB panels when "
           "tracked (PNG, PDF, SVG)", ("run",), P_OUT,
           cli_only="a figure file; in Python, Result.figure(out=...) draws it"),
    # check-spb
    Option("at", "str", "init | optimum | FILE.npy | run:K (the point after K iterations; default: init)",
           ("check-spb",), P_SPB, default="init"),
    Option("estimator", "str", "auto | exact | closed-form | monte-carlo (default: auto)", ("check-spb",), P_SPB,
           default="auto", choices=("auto", "exact", "closed-form", "monte-carlo")),
    Option("samples", "int", "Monte Carlo sample count S (default: 2000)", ("check-spb",), P_SPB, default=2000, lo=2,
           hi=10**9, also=("spb_from_samples",)),
    Option("confidence", "float", "confidence level (default: 0.95)", ("check-spb",), P_SPB, default=0.95, lo=0, hi=1,
           lo_open=True, hi_open=True, also=("spb_from_samples",)),
    Option("interval", "str", "wilson | clopper-pearson (default: wilson)", ("check-spb",), P_SPB, default="wilson",
           choices=("wilson", "clopper-pearson"), also=("spb_from_samples",)),
    Option("correction", "str", "multiple testing over coordinates: holm | bonferroni | none (default: holm)",
           ("check-spb",), P_SPB, default="holm", choices=("holm", "bonferroni", "none"),
           also=("spb_from_samples",)),
    Option("top", "int", "rows in the table of worst coordinates (default: 10)", ("check-spb",), P_SPB, default=10,
           lo=0, hi=10**6, also=("spb_from_samples",)),
    Option("grads", "path", "your own per-sample gradients: FILE.npy, an n x d array (memory-mapped); uses "
           "--workers, --batch-size, --sign-zero, --tie, --seed", ("check-spb",), P_SPB),
    # diversity
    Option("at", "str", "init | optimum | FILE.npy | run:K (the point after K iterations; default: init)",
           ("diversity",), P_DIV, default="init"),
    Option("delta", "float", "report the largest batch with B <= delta B_S + 1 (default: 1)", ("diversity",), P_DIV,
           default=1.0, lo=0, lo_open=True, also=("diversity_from_samples",)),
    Option("estimator", "str", "auto | exact | population | two-batch (default: auto)", ("diversity",), P_DIV,
           default="auto", choices=("auto", "exact", "population", "two-batch")),
    Option("pairs", "int", "two-batch estimator: number of batch pairs (default: 2000)", ("diversity",), P_DIV,
           default=2000, lo=2, hi=10**9),
    Option("small_batch", "int", "two-batch estimator: small batch b (default: --batch-size)", ("diversity",), P_DIV,
           lo=1, hi=MAX_SIZE),
    Option("big_batch", "int", "two-batch estimator: big batch B (default: max(2, M) b)", ("diversity",), P_DIV,
           lo=1, hi=MAX_SIZE),
    Option("grads", "path", "your own per-sample gradients: FILE.npy, an n x d array (memory-mapped)",
           ("diversity",), P_DIV),
    Option("transform", "strs", "also the diversity of transformed per-sample gradients: dropout:P | langevin:S | "
           "a compressor, as --compressor takes it (sign, sto-sign, qsgd:S, top-k:K, your plugin's, ...; "
           "repeatable)", ("diversity",), P_DIV),
    Option("transform_draws", "int", "draws of the transformed gradients for a --transform without closed forms "
           "(a Monte Carlo estimate with a 95% interval; default: 200)", ("diversity",), P_DIV, default=200, lo=2,
           hi=10**9),
    # bound
    Option("overlay", "path", "a run's results JSON: its observations beside the bounds", ("bound",), P_BOUND),
    Option("constant", "strs", "override a constant: NAME=VALUE (repeatable; F, f0, f_star, L1, L2, sigma1, "
           "sigma_total, gamma, M, alpha, d, K)", ("bound",), P_BOUND),
    Option("box", "float", "rosenbrock: smoothness bounded over [-R, R]^d (default: 2)", ("bound",), P_BOUND,
           default=2.0, lo=0, lo_open=True),
    Option("at", "str", "point of the majority-vote table: init | optimum | FILE.npy | run:K (default: init)",
           ("bound",), P_BOUND, default="init"),
    Option("plot", "file", "figure of the bounds against K (with the run's running averages)", ("bound",), P_BOUND,
           cli_only="a figure file; in Python, Result.figure(out=...) draws it"),
    # the outputs of the run commands
    Option("out", "file", "write the results JSON here (atomically)", _R, P_OUT),
    Option("log", "strs", "also send the run's history and tracked quantities to an experiment tracker: "
           "tensorboard:DIR (pip install 'signsim[log]') | wandb[:PROJECT] | mlflow[:EXPERIMENT] (when installed); "
           "repeatable", ("run",), P_OUT),
    Option("json", "bool", "print the results JSON on stdout, nothing else", _R, P_OUT, default=False,
           decls=("--json",), cli_only="Python returns the results (Result.to_dict() is the JSON document)"),
    Option("quiet", "bool", "no progress bar or table", _R, P_OUT, default=False, decls=("--quiet", "-q"),
           cli_only="Python prints no table or progress bar"),
    Option("progress", "callable", "progress(done, total), called as the run advances", ("run",), api_only=True),
    Option("plugins", "str", "files of your own stages, a path or a list (joined into --plugin; docs/api.md)", ("run",),
           api_only=True),
    # sweep
    Option("out", "file", "output directory (default: results/<file stem>)", ("sweep",)),
    Option("executor", "str", "local | dask (default: local)", ("sweep",), default="local", choices=("local", "dask")),
    Option("jobs", "int", "local: worker processes (default: the number of cores this process may use); dask "
           "--scheduler local: LocalCluster workers (default: 2)", ("sweep",), lo=1, hi=MAX_SIZE),
    Option("scheduler", "str", "dask: scheduler address, or 'local' for a LocalCluster", ("sweep",)),
    Option("dask_timeout", "float", "dask: stop when the scheduler has had no worker for this many seconds, keeping "
           "the finished runs (default: 60)", ("sweep",), lo=0, lo_open=True, hi=1e9),
    Option("dry_run", "bool", "list the expanded runs and exit", ("sweep",), default=False, decls=("--dry-run",)),
    Option("force", "bool", "allow --jobs above the number of cores", ("sweep",), default=False, decls=("--force",)),
    Option("json", "bool", "print the summary JSON on stdout, nothing else", ("sweep",), default=False,
           decls=("--json",), cli_only="Python returns the summary (Result.to_dict() is the JSON document)"),
    Option("quiet", "bool", "no progress bar or table", ("sweep",), default=False, decls=("--quiet", "-q"),
           cli_only="Python prints no table or progress bar"),
    Option("plugin", "str", "FILE.py[,FILE.py]: your own stages, for every run (docs/api.md)", ("sweep",)),
    Option("progress", "callable", "progress(done, total), called as runs finish", ("sweep",), api_only=True),
    # plot (in Python: Result.figure)
    Option("out", "file", "figure file: .png, .pdf or .svg (default: <first input>.png, or figure.png in a sweep "
           "directory)", ("plot",)),
    Option("x", "str", "iter | bits | megabytes | time (curves against it; default: iter) | workers | byzantine | "
           "batch-size (final values against this run option) | a sweep's varied option (final values against it)",
           ("plot",)),
    Option("y", "str", "loss | test-loss | grad-norm | grad-norm-l1 | distance | accuracy | train-accuracy | "
           "spb-fraction | rho-min | rho-norm | B_S (default: loss)", ("plot",)),
    Option("group_by", "str", "sweeps: one line per value of this option (the title names the options averaged "
           "over)", ("plot",)),
    Option("where", "strs", "sweeps: keep only runs with KEY=VALUE (repeatable; all must hold)", ("plot",)),
    Option("facet", "str", "sweeps: one panel per value of this option", ("plot",)),
    # compile
    Option("clear", "bool", "remove the cached kernels and exit", ("compile",), default=False, decls=("--clear",),
           cli_only="no Python function compiles ahead of time"),
    Option("command", "strs", "only the kernels of this command: run | check-spb | diversity | bound (repeatable; "
           "--at run:K also takes run's)", ("compile",), cli_only="no Python function compiles ahead of time"),
    Option("family", "strs", "only this family of problems: analytic (rosenbrock, quadratic, sign-trap, vote-trap) "
           "| glm (logistic, least-squares) | mlp | external (model: your PyTorch model) (repeatable)", ("compile",),
           cli_only="no Python function compiles ahead of time"),
    Option("dtype", "str", "only this dtype: float64 | float32", ("compile",),
           cli_only="no Python function compiles ahead of time"),
)

#: the positional argument of a command: (its name on the command line, in the Python function, help)
ARGUMENTS = {
    "sweep": ("file", "path", "sweep file (TOML): run options plus [grid], [[zip]], repeats"),
    "plot": ("results", "", "results files or a sweep directory"),
}

#: options of the Python functions with no command of their own (each mirrors a command's --grads)
SAMPLE_FUNCTIONS = {"spb_from_samples": "check-spb", "diversity_from_samples": "diversity"}

#: RunConfig's fields in the order of a results document's "config" (the order they were added in)
RECORD_ORDER = (
    "problem", "method", "workers", "aggregate", "batch_size", "iters", "lr", "lr_schedule", "momentum", "byzantine",
    "attack", "sign_zero", "tie", "eval_every", "stop_loss", "monotone", "track_spb", "track_diversity", "seed",
    "compressor", "error_feedback", "momentum2", "weight_decay", "votes", "noise_scales", "dtype", "plugin",
    "local_steps", "local_lr", "server_lr", "participation", "clients_per_round", "budget_mb", "budget_bits", "noise",
    "dim",
    "kappa", "oracle", "trap_eps", "trap_lambda", "x0", "data", "split", "test_fraction", "standardize", "intercept",
    "replicate", "positive_class", "l2", "hidden", "activation", "server_opt",
    "grad_estimator", "model", "down_compressor", "down_feedback", "prox_mu", "pre_aggregate",
    "compute", "uplink", "downlink", "latency", "server_bandwidth", "topology", "budget_seconds", "target",
    "deadline", "over_select", "catch_up", "heterogeneity", "asynchronous", "model_gradients",
)


#: the options left out of a sweep's run ids while at their default (``Option.omit_unset``): name -> default
OMIT_UNSET = {o.name: o.default for o in TABLE if o.omit_unset}


def flag(name: str) -> str:
    """The flag of option ``name``: --name with - for _ (``Option.flag`` where an option declares its own)."""
    o = next((o for o in TABLE if o.name == name), None)
    return o.flag if o is not None else "--" + name.replace("_", "-")


def of_command(command: str) -> dict[str, Option]:
    """The options of a command (CLI), by name, in --help order (Python-only ones left out)."""
    return {o.name: o for o in TABLE if command in o.commands and not o.api_only}


def of_function(function: str) -> dict[str, Option]:
    """The keyword options of a Python function, by name."""
    return {o.name: o for o in TABLE if function in o.api}


#: RunConfig's options by name: what a config file, a sweep file and ``config.resolve`` take
RECORD: dict[str, Option] = {name: next(o for o in TABLE if o.record and o.name == name) for name in RECORD_ORDER}
#: the options every problem accepts (the others are read by the problems that name them)
COMMON = frozenset(name for name, o in RECORD.items() if not o.problem)


# ----------------------------------------------------------------------------------------------------------
# checks: one path for flags, config files, sweep files and Python values


def unknown_option(name: str, known: Iterable[str]) -> InputError:
    """"unknown option --name", naming the closest known option (``signsim.suggest``)."""
    return InputError(f"unknown option {flag(name)}{hint(name, known, flag)}")


def unknown(value: str, choices: Iterable[str], where: str, what: str = "value") -> InputError:
    choices = list(choices)
    return InputError(f"{where}: unknown {what}{hint(value, choices)}; choose from {', '.join(choices)}")


def range_text(o: Option) -> str:
    lo = None if o.lo is None else f"{'>' if o.lo_open else '>='} {o.lo:g}"
    hi = None if o.hi is None else f"{'<' if o.hi_open else '<='} {o.hi:g}"
    if o.kind == "int" and o.lo is not None and o.hi is not None:
        return f"an integer from {o.lo:g} to {o.hi}" + "".join(f" or {w}" for w in o.words)
    if lo and hi:
        return f"a finite number {lo} and {hi}"
    return f"a{'n integer' if o.kind == 'int' else ' finite number'}" + (f" {lo or hi}" if lo or hi else "")


def check(o: Option, value: Any, where: str) -> Any:
    """``value`` (already of the option's Python type, as a config file or ``coerce`` gives it) checked against
    the option's type, range and choices; ``where`` names it as the user wrote it (``--batch-size 0`` or
    ``sweep file s.toml: [grid]: 'lr' -1``). Returns the value (floats as float)."""
    if o.words and isinstance(value, str) and value in o.words:
        return value
    value = check_type(o, value, where)
    if o.kind == "bool":
        return value
    if o.kind in ("str", "path", "file"):
        if not value.strip():
            raise InputError(f"{where}: an empty value is not allowed")
        if o.choices and value not in o.choices:
            raise unknown(value, o.choices, where)
        return value
    if o.kind == "strs":
        if not all(v.strip() for v in value):
            raise InputError(f"{where}: an empty value is not allowed")
        return value
    if o.vector and isinstance(value, list):
        if not value:
            raise InputError(f"{where}: an empty vector")
        return [_number(o, v, where) for v in value]
    return _number(o, value, where)


def check_type(o: Option, value: Any, where: str) -> Any:
    """The type alone, as a TOML file gives values (an integer is a number too; floats become float)."""
    if o.words and isinstance(value, str) and value in o.words:
        return value
    if o.kind == "bool":
        if not isinstance(value, bool):
            raise InputError(f"{where} must be true or false, got {value!r}")
    elif o.kind in ("str", "path", "file"):
        if not isinstance(value, str):
            raise InputError(f"{where} must be a string, got {value!r}")
    elif o.kind == "strs":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InputError(f"{where} must be a list of strings, got {value!r}")
    elif o.vector and isinstance(value, list | tuple):
        return [check_type(replace(o, vector=False), v, where) for v in value]  # numbers, not nested lists
    elif isinstance(value, bool) or not isinstance(value, int | float) or (o.kind == "int"
                                                                            and not isinstance(value, int)):
        kind = "an integer" if o.kind == "int" else "a number"
        words = "".join(f" or '{w}'" for w in o.words)
        raise InputError(f"{where} must be {kind}{words}, got {value!r}")
    elif o.kind == "float":
        try:
            return float(value)
        except OverflowError:  # an integer beyond every float (a TOML integer of 400 digits)
            raise InputError(f"{where} is too large for a number") from None
    return value


def _number(o: Option, value: Any, where: str) -> Any:
    value = check_type(o, value, where)
    if o.kind == "float":
        if not math.isfinite(value):
            raise InputError(f"{where}: must be finite ({range_text(o)})")
    if o.kind == "int" and o.hi is not None and value > o.hi:
        raise InputError(f"{where}: too large (at most {o.hi})")
    bad = ((o.lo is not None and (value < o.lo or (o.lo_open and value == o.lo)))
           or (o.hi is not None and (value > o.hi or (o.hi_open and value == o.hi))))
    if bad:
        raise InputError(f"{where}: {o.what + ' ' if o.what else ''}must be {range_text(o)}")
    return value


def _index(value: Any) -> int | None:
    """An exact Python int from an int-like (int, NumPy integer), else None; bools are not integers."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def _several(text: str) -> str:
    return ("; one value per run (a sweep file's [grid] runs several)" if "," in text and len(text.split(",")) > 1
            else "")


def coerce(o: Option, value: Any) -> Any:
    """A value given on the command line (text) or in Python -> the option's Python value, or an InputError
    naming the option and echoing the value. Text is parsed as the option's type ("0.1" is 0.1 for a number);
    a Python value must already be of a matching type (NumPy scalars count). None is returned as None (not
    given). The range is checked by ``check``."""
    name = o.flag
    if value is None:
        return None
    if o.kind == "bool":
        if isinstance(value, bool) or type(value).__name__ == "bool_":
            return bool(value)
        raise InputError(f"{name} {value!r}: must be True or False")
    if o.kind == "int":
        n = _index(value)
        if n is not None:
            return n
        if isinstance(value, float) or type(value).__name__.startswith("float"):
            try:
                f = float(value)
            except (TypeError, ValueError):
                f = math.nan
            if math.isfinite(f) and f.is_integer():
                return int(f)
        words = "".join(f" or '{w}'" for w in o.words)
        if isinstance(value, str):
            text = value.strip(SPACE)
            if text in o.words:
                return text
            try:
                return to_int(text)
            except ValueError:
                pass
            raise InputError(f"{name} {value!r}: not a valid integer{words}{_several(text)}{hint(text, o.words)}")
        raise InputError(f"{name} {value!r}: not a valid integer{words}")
    if o.kind == "float":
        if isinstance(value, bool) or type(value).__name__ == "bool_" or isinstance(value, complex):
            raise InputError(f"{name} {value!r}: not a valid number")
        if isinstance(value, int | float) or _index(value) is not None or type(value).__name__.startswith("float"):
            try:
                return float(value)
            except (TypeError, ValueError, OverflowError):
                pass
        if isinstance(value, str):
            text = value.strip(SPACE)
            if text in o.words:
                return text
            try:
                return to_float(text)
            except ValueError:
                pass
            words = "".join(f" or '{w}'" for w in o.words)
            raise InputError(f"{name} {value!r}: not a valid number{words}{_several(text)}{hint(text, o.words)}")
        raise InputError(f"{name} {value!r}: not a valid number")
    if isinstance(value, os.PathLike) and o.kind in ("path", "file", "str"):  # a file name (--data, --at too)
        value = os.fspath(value)
    if o.kind in ("path", "file"):
        if isinstance(value, str):
            return value
        raise InputError(f"{name} {value!r}: expected a file name (a str or a path)")
    if o.kind == "strs":
        if isinstance(value, str):
            return [value]
        if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
            return list(value)
        raise InputError(f"{name} {value!r}: expected a string or a list of strings")
    if o.kind == "callable":
        if callable(value):
            return value
        raise InputError(f"{name.lstrip('-')} {value!r}: expected a function progress(done, total), or None")
    if not isinstance(value, str):
        raise InputError(f"{name} {value!r}: must be a string")
    return value


def value(o: Option, raw: Any) -> Any:
    """``coerce`` then ``check``, naming the value as given: the one step every flag and keyword goes through."""
    v = coerce(o, raw)
    if v is None or o.kind == "callable":
        return v
    written = (raw.strip() or shown(raw)) if isinstance(raw, str) else shown(raw)  # as given (1e-400, not 0.0)
    return check(o, v, f"{o.flag} {written}")


def check_fields(obj: Any, command: str) -> None:
    """Every field of a command's options dataclass that is one of the command's options, checked."""
    from dataclasses import fields

    table = of_command(command)
    for f in fields(obj):
        v = getattr(obj, f.name)
        if f.name in table and v is not None:
            check(table[f.name], v, f"{table[f.name].flag} {shown(v)}")
