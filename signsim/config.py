"""Run options: defaults, TOML files, command-line overrides and validation.

Precedence, highest first: command-line flags, the ``--config`` TOML file, the problem's preferred defaults
(e.g. vote-trap runs 3 workers with gamma_k = 0.5/sqrt(k+1)), the method's defaults (momentum, server rule),
then the global defaults below. Every problem names the problem-specific options it reads; setting one that
does not apply is an error. All failures raise ``InputError`` with one line naming the option or file.
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from signsim.errors import InputError

#: options that every problem accepts
COMMON = frozenset({
    "problem", "method", "workers", "aggregate", "batch_size", "iters", "lr", "lr_schedule", "momentum",
    "byzantine", "attack", "sign_zero", "tie", "eval_every", "seed", "stop_loss", "track_spb", "track_diversity",
    "monotone", "compressor", "error_feedback", "momentum2", "weight_decay", "votes", "noise_scales", "dtype",
    "plugin",
})
#: the values of --dtype: the floating-point type of a run's state and data (docs/reference.md)
DTYPES = ("float64", "float32")


@dataclass
class RunConfig:
    """Every option of ``signsim run`` once resolved (names as in docs/reference.md, with _ for -)."""

    problem: str = "rosenbrock"
    method: str = "ssdm"
    workers: int = 8
    aggregate: str | None = None  # the method's default server rule
    batch_size: int = 1
    iters: int = 2000
    lr: float = 1e-2  # the method's default_lr where it has one (SGD, EF: gradient-sized steps)
    lr_schedule: str = "constant"
    momentum: float | None = None  # the method's default
    byzantine: int = 0
    attack: str = "invert"
    sign_zero: str = "random"
    tie: str = "random"
    eval_every: int | None = None  # max(1, iters // 100)
    stop_loss: float | None = None  # stop once a recorded loss is <= this
    monotone: bool = False  # take a step only if it does not increase f (signSGD "option 2")
    track_spb: int | None = None  # every N iterations: SPB fraction, min rho, rho-norms (tracks.spb)
    track_diversity: int | None = None  # every N iterations: B_S (tracks.diversity)
    seed: int = 0
    compressor: str | None = None  # the method's compressor spec
    error_feedback: str | None = None  # the method's: none | ef | ef21
    momentum2: float | None = None  # Lion's beta2 (the method's default)
    weight_decay: float = 0.0  # lambda: the step adds gamma_k lambda x
    votes: str = "per-worker"  # per-worker | binomial (exact vote counts, docs/theory.md §11)
    noise_scales: str | None = None  # first:K | power:A | FILE.npy: per-coordinate noise scales
    dtype: str = "float64"  # float64 | float32: the engine's state vectors and the data matrix (opt-in float32)
    plugin: str | None = None  # FILE.py[,FILE.py...]: researchers' own stages (signsim.stages.plugins)
    # problem-specific
    noise: str | None = None  # the problem's default
    dim: int | None = None
    kappa: float | None = None
    oracle: str | None = None
    trap_eps: float | None = None
    trap_lambda: float | None = None
    x0: float | list[float] | None = None  # the starting point: one value for every coordinate, or a vector
    # data problems (logistic, least-squares, mlp)
    data: str | None = None
    split: str | None = None
    test_fraction: float | None = None
    standardize: bool | None = None
    intercept: bool | None = None
    replicate: int | None = None
    positive_class: float | None = None
    l2: float | None = None
    hidden: int | None = None
    activation: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_FIELDS = {f.name: f for f in fields(RunConfig)}

#: the largest value an integer option may take (sizes index arrays; iterations and seeds are counters)
MAX_SIZE = 2**31 - 1


@dataclass(frozen=True)
class Decl:
    """The declared type and range of one option; every entry point (flags, config files, sweep grids, the
    Python API) checks a value against it once, by ``check_value``. A new option is one row of OPTIONS."""

    kind: type  # int, float, bool or str
    lo: float | None = None  # smallest allowed value (None: unbounded)
    hi: float | None = None  # largest allowed value
    lo_open: bool = False  # lo itself excluded
    hi_open: bool = False  # hi itself excluded
    what: str = ""  # what the value means, for errors ("the step size")
    vector: bool = False  # a list of such numbers is accepted too (one per coordinate)


OPTIONS: dict[str, Decl] = {
    "problem": Decl(str), "method": Decl(str), "aggregate": Decl(str), "lr_schedule": Decl(str),
    "attack": Decl(str), "sign_zero": Decl(str), "tie": Decl(str), "noise": Decl(str), "oracle": Decl(str),
    "data": Decl(str), "split": Decl(str), "activation": Decl(str),
    "workers": Decl(int, 1, MAX_SIZE), "batch_size": Decl(int, 1, MAX_SIZE), "iters": Decl(int, 0, 10**15),
    "byzantine": Decl(int, 0, MAX_SIZE), "eval_every": Decl(int, 1, MAX_SIZE), "seed": Decl(int, 0, 2**64 - 1),
    "dim": Decl(int, 1, MAX_SIZE), "replicate": Decl(int, 1, MAX_SIZE), "hidden": Decl(int, 1, MAX_SIZE),
    "track_spb": Decl(int, 1, MAX_SIZE), "track_diversity": Decl(int, 1, MAX_SIZE),
    "lr": Decl(float, 0, None, lo_open=True, what="the step size"), "momentum": Decl(float, 0, 1, hi_open=True),
    "stop_loss": Decl(float), "kappa": Decl(float, 1, None, what="the condition number"),
    "trap_eps": Decl(float, 0, 1, lo_open=True, hi_open=True), "trap_lambda": Decl(float, 0, None, lo_open=True),
    "x0": Decl(float, vector=True), "test_fraction": Decl(float, 0, 1, hi_open=True), "positive_class": Decl(float),
    "l2": Decl(float, 0, None),
    "standardize": Decl(bool), "intercept": Decl(bool), "monotone": Decl(bool),
    "compressor": Decl(str), "error_feedback": Decl(str), "momentum2": Decl(float, 0, 1, hi_open=True),
    "weight_decay": Decl(float, 0, None), "votes": Decl(str), "noise_scales": Decl(str),
    "dtype": Decl(str), "plugin": Decl(str),
}
_INT = {k for k, d in OPTIONS.items() if d.kind is int}
_FLOAT = {k for k, d in OPTIONS.items() if d.kind is float}
_BOOL = {k for k, d in OPTIONS.items() if d.kind is bool}


def _range_text(d: Decl) -> str:
    lo = None if d.lo is None else f"{'>' if d.lo_open else '>='} {d.lo:g}"
    hi = None if d.hi is None else f"{'<' if d.hi_open else '<='} {d.hi:g}"
    if d.kind is int and d.lo is not None and d.hi is not None:
        return f"an integer from {d.lo:g} to {d.hi}"
    if lo and hi:
        return f"a finite number {lo} and {hi}"
    return f"a{'n integer' if d.kind is int else ' finite number'}" + (f" {lo or hi}" if lo or hi else "")


def _shown(value: Any) -> str:
    return "''" if isinstance(value, str) and not value.strip() else str(value)


def check_value(name: str, value: Any, where: str) -> Any:
    """``value`` checked against OPTIONS[name] (type, then range); ``where`` names it as the user wrote it
    (``--batch-size 0`` or ``sweep file s.toml: [grid]: 'lr' -1``). Returns the value (floats as float)."""
    d = OPTIONS.get(name)
    if d is None:
        return value
    if d.kind is bool:
        if not isinstance(value, bool):
            raise InputError(f"{where} must be true or false, got {value!r}")
        return value
    if d.kind is str:
        if not isinstance(value, str):
            raise InputError(f"{where} must be a string, got {value!r}")
        if not value.strip():
            raise InputError(f"{where}: an empty value is not allowed")
        return value
    if d.vector and isinstance(value, list | tuple):
        if not value:
            raise InputError(f"{where}: an empty vector")
        return [check_value_scalar(d, v, where) for v in value]
    return check_value_scalar(d, value, where)


def check_value_scalar(d: Decl, value: Any, where: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float) or (d.kind is int and not isinstance(value, int)):
        kind = "an integer" if d.kind is int else "a number"
        raise InputError(f"{where} must be {kind}, got {value!r}")
    if d.kind is float:
        value = float(value)
        if not math.isfinite(value):
            raise InputError(f"{where}: must be finite ({_range_text(d)})")
    if d.kind is int and d.hi is not None and value > d.hi:
        raise InputError(f"{where}: too large (at most {d.hi})")
    bad = ((d.lo is not None and (value < d.lo or (d.lo_open and value == d.lo)))
           or (d.hi is not None and (value > d.hi or (d.hi_open and value == d.hi))))
    if bad:
        raise InputError(f"{where}: {d.what + ' ' if d.what else ''}must be {_range_text(d)}")
    return value


def option_name(field: str) -> str:
    return "--" + field.replace("_", "-")


def read_toml(path: Path, where: str) -> dict[str, Any]:
    """The parsed TOML file; a missing, non-UTF-8 or invalid file raises InputError prefixed by ``where``."""
    from signsim.paths import input_file

    input_file(path, where)
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{where}: not valid TOML ({e})") from None
    except UnicodeDecodeError:
        raise InputError(f"{where}: not a UTF-8 text file") from None


def load_toml(path: str | Path) -> dict[str, Any]:
    """Read a run config file: top-level keys are option names (``batch-size`` or ``batch_size``).

    An optional array of tables ``[[compare]]`` lists variants (each a ``label`` and option overrides) to run
    side by side; it is returned under the key ``compare`` as a list of checked dicts."""
    p = Path(path)
    raw = read_toml(p, f"--config {p}")
    variants = raw.pop("compare", None)
    experiment = raw.pop("experiment", None)
    out = parse_options(raw, f"--config {p}")
    if experiment is not None:
        from signsim.experiment_config import parse as parse_experiment

        out["experiment"] = parse_experiment(experiment, f"--config {p}: [experiment]")
    if variants is not None:
        if not isinstance(variants, list) or not all(isinstance(v, dict) for v in variants) or not variants:
            raise InputError(f"--config {p}: 'compare' must be an array of tables ([[compare]])")
        out["compare"] = []
        for i, v in enumerate(variants, start=1):
            v = dict(v)
            label = v.pop("label", None)
            entry = parse_options(v, f"--config {p}: [[compare]] #{i}")
            entry["label"] = str(label) if label is not None else f"variant {i}"
            out["compare"].append(entry)
    return out


def parse_options(raw: dict[str, Any], where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for key, value in raw.items():
        name = key.replace("-", "_")
        if name not in _FIELDS:
            raise InputError(f"{where}: unknown option '{key}'")
        if name in spelled:
            raise InputError(f"{where}: '{spelled[name]}' and '{key}' are the same option; give it once")
        spelled[name] = key
        out[name] = check_value(name, coerce(name, value, f"{where}: '{key}'"), f"{where}: '{key}' {value!r}")
    return out


def coerce(name: str, value: Any, where: str) -> Any:
    """Check the type of one option value read from a file."""
    if name in _BOOL:
        if not isinstance(value, bool):
            raise InputError(f"{where} must be true or false, got {value!r}")
        return value
    if name in _INT:
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(f"{where} must be an integer, got {value!r}")
        return value
    if name in _FLOAT:
        if OPTIONS[name].vector and isinstance(value, list):
            return [coerce(name, v, where) for v in value]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InputError(f"{where} must be a number, got {value!r}")
        return float(value)
    if not isinstance(value, str):
        raise InputError(f"{where} must be a string, got {value!r}")
    return value


def resolve(explicit: dict[str, Any]) -> RunConfig:
    """Fill the options the user did not set and validate the result."""
    from signsim import methods, problems

    explicit = {k: v for k, v in explicit.items() if v is not None}
    unknown = set(explicit) - set(_FIELDS)
    if unknown:
        raise InputError(f"unknown option {option_name(sorted(unknown)[0])}")
    for name, value in explicit.items():  # what the user gave, before anything derived from it
        explicit[name] = check_value(name, value, f"{option_name(name)} {_shown(value)}")
    spec = problems.get(explicit.get("problem", RunConfig.problem))
    not_applicable = sorted(set(explicit) - COMMON - spec.options)
    if not_applicable:
        raise InputError(f"{option_name(not_applicable[0])} does not apply to problem '{spec.name}'")
    method = methods.get(explicit.get("method", RunConfig.method))
    values = {**spec.defaults, **explicit}
    values.setdefault("aggregate", method.default_aggregate)
    values.setdefault("momentum", method.default_momentum)
    values.setdefault("compressor", method.compressor)
    values.setdefault("error_feedback", method.error_feedback)
    if method.default_momentum2 is not None:
        values.setdefault("momentum2", method.default_momentum2)
    if method.default_lr is not None:
        values.setdefault("lr", method.default_lr)
    cfg = RunConfig(**values)
    if cfg.plugin is not None:  # absolute paths: sweep workers (Dask ones too) load the same files
        from signsim.stages import plugins

        cfg.plugin = plugins.absolute(cfg.plugin)
    cap = os.environ.get("SIGNSIM_MAX_ITERS")
    if cap:  # a testing aid: every run stops after at most this many iterations
        try:
            cfg.iters = min(cfg.iters, int(cap))
        except ValueError:
            raise InputError(f"SIGNSIM_MAX_ITERS={cap}: must be an integer") from None
    if cfg.eval_every is None:
        cfg.eval_every = max(1, cfg.iters // 100)
    validate(cfg)
    return cfg


def _check(ok: bool, field: str, value: Any, what: str) -> None:
    if not ok:
        raise InputError(f"{option_name(field)} {value}: {what}")


INT_LIMITS = {k: int(d.hi) for k, d in OPTIONS.items() if d.kind is int and d.hi is not None and d.hi != MAX_SIZE}


def validate(cfg: RunConfig) -> None:
    from signsim import methods, stages
    from signsim.codes import Schedule, SignZero, Tie, names

    for field in sorted(_INT):
        value = getattr(cfg, field)
        limit = INT_LIMITS.get(field, MAX_SIZE)
        if value is not None:
            _check(value <= limit, field, value, f"too large (at most {limit})")

    for field, enum in (("lr_schedule", Schedule), ("sign_zero", SignZero), ("tie", Tie)):
        value = getattr(cfg, field)
        _check(value in names(enum), field, value, f"unknown value; choose from {', '.join(names(enum))}")
    _check(cfg.workers >= 1, "workers", cfg.workers, "must be at least 1")
    _check(cfg.batch_size >= 1, "batch_size", cfg.batch_size, "must be at least 1")
    _check(cfg.iters >= 0, "iters", cfg.iters, "must be >= 0")
    _check(cfg.eval_every >= 1, "eval_every", cfg.eval_every, "must be at least 1")
    _check(math.isfinite(cfg.lr) and cfg.lr > 0, "lr", cfg.lr, "the step size must be a finite number > 0")
    _check(0 <= cfg.momentum < 1, "momentum", cfg.momentum, "must lie in [0, 1)")
    _check(0 <= cfg.byzantine <= cfg.workers, "byzantine", cfg.byzantine,
           f"must lie between 0 and the number of workers ({cfg.workers})")
    _check(cfg.seed >= 0, "seed", cfg.seed, "must be >= 0")
    for field in ("track_spb", "track_diversity"):
        value = getattr(cfg, field)
        if value is not None:
            _check(value >= 1, field, value, "must be at least 1")
    for field in ("x0", "positive_class", "stop_loss"):
        value = getattr(cfg, field)
        if value is not None:
            _check(all(math.isfinite(v) for v in (value if isinstance(value, list) else [value])), field, value,
                   "must be finite")
    if cfg.l2 is not None:
        _check(math.isfinite(cfg.l2) and cfg.l2 >= 0, "l2", cfg.l2, "must be a finite number >= 0")
    for name in OPTIONS:  # every resolved value, defaults included, against its declaration
        value = getattr(cfg, name, None)
        if value is not None:
            check_value(name, value, f"{option_name(name)} {_shown(value)}")
    if cfg.noise is not None:
        from signsim import noise

        noise.parse(cfg.noise)
    if cfg.split is not None:
        from signsim.data.splits import check_syntax

        check_syntax(cfg.split)
    method = methods.get(cfg.method)
    if cfg.plugin is not None:
        from signsim.stages import plugins

        plugins.load(cfg.plugin)
    stages.parse_aggregate(cfg.aggregate)
    stages.parse_attack(cfg.attack)
    stages.parse_compressor(cfg.compressor)
    stages.parse_error_feedback(cfg.error_feedback)
    if cfg.momentum2 is not None:
        _check(method.momentum_kind == "lion", "momentum2", cfg.momentum2, "applies only to Lion momentum")
        _check(0 <= cfg.momentum2 < 1, "momentum2", cfg.momentum2, "must lie in [0, 1)")
    _check(math.isfinite(cfg.weight_decay) and cfg.weight_decay >= 0, "weight_decay", cfg.weight_decay,
           "must be a finite number >= 0")
    stages.check_composition(cfg, cfg.method)
    _check(cfg.votes in ("per-worker", "binomial"), "votes", cfg.votes, "unknown value; choose from per-worker, "
           "binomial")
    _check(cfg.dtype in DTYPES, "dtype", cfg.dtype, f"unknown value; choose from {', '.join(DTYPES)}")
    if cfg.dtype != "float64":
        _check(cfg.votes != "binomial", "dtype", cfg.dtype, "does not apply with --votes binomial (its O(d) state "
               "stays float64); drop one of --dtype and --votes binomial")
        from signsim import problems

        if "data" in problems.get(cfg.problem).options:  # the trackers of a data problem read its data matrix
            for field in ("track_spb", "track_diversity"):
                _check(getattr(cfg, field) is None, "dtype", cfg.dtype, f"does not apply with {option_name(field)} "
                       f"on {cfg.problem} (its estimators compute from float64 data); drop one of the two")
    if cfg.noise_scales is not None:
        _check(isinstance(cfg.noise_scales, str) and cfg.noise_scales.strip() != "", "noise_scales",
               cfg.noise_scales, "expected first:K, power:A or a FILE.npy")
        _check((cfg.noise or "none") != "none", "noise_scales", cfg.noise_scales, "needs a --noise model to scale")
