"""Run options: defaults, TOML files, command-line overrides and validation.

Precedence, highest first: command-line flags, the ``--config`` TOML file, the problem's preferred defaults
(e.g. vote-trap runs 3 workers with gamma_k = 0.5/sqrt(k+1)), the method's defaults (momentum, server rule),
then the global defaults below. Every problem names the problem-specific options it reads; setting one that
does not apply is an error. All failures raise ``InputError`` with one line naming the option or file.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import asdict, field, fields, make_dataclass
from pathlib import Path
from typing import Any

from signsim.errors import InputError
from signsim.errors import shown as _shown
from signsim.interface import options as _options
from signsim.interface.options import COMMON, RECORD
from signsim.numbers import to_int
from signsim.suggest import hint

#: the values of --dtype: the floating-point type of a run's state and data (docs/reference.md)
DTYPES = RECORD["dtype"].choices
#: the word ``--lr`` takes for the step size of the method's theorem (``signsim.interface.step_sizes``)
THEORY = RECORD["lr"].words[0]

_TYPES = {"int": int, "float": float, "bool": bool, "str": str}


def _annotation(o: _options.Option) -> Any:
    t = _TYPES[o.kind]
    if o.words:  # a number or one of its words (--batch-size full; --lr theory becomes a number in resolve)
        t = t | str
    if o.vector:
        t = t | list[t]
    return t if o.default is not None else t | None


def _to_dict(self) -> dict[str, Any]:
    return asdict(self)


#: Every option of ``signsim run`` once resolved (names as in docs/reference.md, with _ for -): the rows of
#: ``signsim.interface.options.TABLE`` marked ``record``, with their defaults, in RECORD_ORDER.
RunConfig = make_dataclass(
    "RunConfig", [(name, _annotation(o), field(default=o.default)) for name, o in RECORD.items()],
    namespace={"to_dict": _to_dict, "__doc__": "Every option of ``signsim run`` once resolved (generated from "
               "signsim.interface.options.TABLE)."},
)
RunConfig.__module__ = __name__  # pickled by name (sweep workers, Dask)

_FIELDS = {f.name: f for f in fields(RunConfig)}


def check_value(name: str, value: Any, where: str) -> Any:
    """``value`` checked against the option's declaration in ``signsim.interface.options`` (type, range, choices);
    ``where`` names it as the user wrote it (``--batch-size 0`` or ``sweep file s.toml: [grid]: 'lr' -1``)."""
    o = RECORD.get(name)
    return value if o is None else _options.check(o, value, where)




def _dashed(name: str) -> str:
    """An option's name as a config file writes it (``batch-size``)."""
    return name.replace("_", "-")


def option_name(field: str) -> str:
    o = RECORD.get(field)
    return o.flag if o is not None else "--" + field.replace("_", "-")


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


#: the keys of a sweep file that a run config does not take
SWEEP_KEYS = ("grid", "zip", "repeats")


def load_toml(path: str | Path) -> dict[str, Any]:
    """Read a run config file: top-level keys are option names (``batch-size`` or ``batch_size``).

    An optional array of tables ``[[compare]]`` lists variants (each a ``label`` and option overrides) to run
    side by side; it is returned under the key ``compare`` as a list of checked dicts."""
    p = Path(path)
    raw = read_toml(p, f"--config {p}")
    sweep_key = next((k for k in SWEEP_KEYS if k in raw), None)
    if sweep_key is not None:
        raise InputError(f"--config {p}: '{sweep_key}' belongs to a sweep file; run it with 'signsim sweep {p}'")
    variants = raw.pop("compare", None)
    experiment = raw.pop("experiment", None)
    out = parse_options(raw, f"--config {p}")
    if experiment is not None:
        from signsim.interface.experiment_config import parse as parse_experiment

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
    """Options read from a file (TOML types), each checked against its declaration in ``signsim.interface.options``."""
    out: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for key, value in _flat_system(raw, where).items():
        name = key.replace("-", "_")
        o = RECORD.get(name)
        if o is None:
            raise InputError(f"{where}: unknown option '{key}'{hint(name, RECORD, _dashed)}")
        if name in spelled:
            raise InputError(f"{where}: '{spelled[name]}' and '{key}' are the same option; give it once")
        spelled[name] = key
        typed = _options.check_type(o, value, f"{where}: '{key}'")
        out[name] = _options.check(o, typed, f"{where}: '{key}' {value!r}")
    return out


def _flat_system(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """``raw`` with its ``[system]`` table's keys (the system model's options, docs/theory.md §14) among the
    top-level ones."""
    if "system" not in raw:
        return raw
    from signsim.interface.options import P_SYSTEM

    table = raw["system"]
    if not isinstance(table, dict):
        raise InputError(f"{where}: 'system' must be a table ([system]) of the system model's options")
    out = {k: v for k, v in raw.items() if k != "system"}
    for key, value in table.items():
        o = RECORD.get(key.replace("-", "_"))
        if o is None or o.panel != P_SYSTEM:
            names = [n for n, opt in RECORD.items() if opt.panel == P_SYSTEM]
            raise InputError(f"{where}: [system] has no option '{key}'{hint(key.replace('-', '_'), names, _dashed)}")
        if key in out or key.replace("_", "-") in out or key.replace("-", "_") in out:
            raise InputError(f"{where}: '{key}' is given both in [system] and at the top level; give it once")
        out[key] = value
    return out


def unknown_option(name: str, known=RECORD) -> InputError:
    return _options.unknown_option(name, known)


def _torch_first() -> None:
    """A PyTorch model's run imports torch before Numba's threading layer loads (``signsim.engine.dispatch``).
    Numba's layer loads the system's libgomp (``OMP_WAIT_POLICY=passive``), whose soname, libgomp.so.1, is the
    name torch links: loaded first, it serves torch too, and a small model's gradient step ran 3x slower (FLUTE's
    logistic regression: 5.3 ms against 1.6 ms, 6 December 2026). Loaded first, torch's own libgomp serves torch
    with torch's defaults, and Numba's layer still loads its own copy. Without torch nothing happens here (the
    problem says what is missing)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        pass


def resolve(explicit: dict[str, Any]) -> RunConfig:
    """Fill the options the user did not set and validate the result."""
    if explicit.get("model") is not None or explicit.get("problem") == "model":
        _torch_first()
    from signsim import methods, problems

    explicit = {k: v for k, v in explicit.items() if v is not None}
    unknown = set(explicit) - set(_FIELDS)
    if unknown:
        raise unknown_option(sorted(unknown)[0])
    for name, value in explicit.items():  # what the user gave, before anything derived from it
        explicit[name] = check_value(name, value, f"{option_name(name)} {_shown(value)}")
    if "model" in explicit and "problem" not in explicit:  # --model FILE.py alone: the model is the problem
        explicit["problem"] = "model"
    spec = problems.get(explicit.get("problem", RunConfig.problem))
    not_applicable = sorted(set(explicit) - COMMON - spec.options)
    if not_applicable:
        raise InputError(f"{option_name(not_applicable[0])} does not apply to problem '{spec.name}'")
    method = methods.get(explicit.get("method", RunConfig.method))
    values = {**spec.defaults, **explicit}
    theory = explicit.get("lr") == THEORY
    if theory and "lr_schedule" not in explicit:  # a problem's preferred schedule (vote-trap's sqrt) goes with its lr
        values["lr_schedule"] = "constant"
    values.setdefault("aggregate", method.default_aggregate)
    values.setdefault("momentum", method.default_momentum)
    values.setdefault("compressor", method.compressor)
    values.setdefault("error_feedback", method.error_feedback)
    if method.default_momentum2 is not None:
        values.setdefault("momentum2", method.default_momentum2)
    if method.default_lr is not None:
        values.setdefault("lr", method.default_lr)
    for name, value in method.presets:  # the method's estimator, server optimizer, downlink (DIANA, EF21-BC, ...):
        if name not in explicit:  # over the problem's defaults (MARINA's exact gradients: no noise)
            values[name] = value
    cfg = RunConfig(**values)
    if explicit.get("prox_mu") and cfg.local_steps == 1:
        raise InputError(f"--prox-mu {_shown(cfg.prox_mu)}: no effect with --local-steps 1 (the proximal term "
                         "mu (y - x) is zero at a round's first step); give --local-steps H > 1")
    if cfg.plugin is not None:  # absolute paths: sweep workers (Dask ones too) load the same files
        from signsim.stages import plugins

        check_plugin_paths(cfg.plugin)
        cfg.plugin = plugins.absolute(cfg.plugin)
    from signsim.torch.model_file import PREFIX  # (pure Python: torch is imported by a model, not here)

    if cfg.model is not None and not str(cfg.model).startswith(PREFIX):  # an absolute path: sweep workers (Dask
        from signsim.paths import resolved  # ones too) load the same file; python:NAME is in memory

        cfg.model = str(resolved(cfg.model, "--model"))
    check_system(cfg)
    from signsim import rounds

    if cfg.catch_up is None and rounds.clients_per_round(cfg.workers, cfg.participation, cfg.clients_per_round) \
            < cfg.workers:  # the catch-up rule applies (and is recorded) where clients are sampled (§12)
        cfg.catch_up = "full"
    cap = os.environ.get("SIGNSIM_MAX_ITERS")
    if cap:  # a testing aid: every run stops after at most this many iterations
        try:
            limit = to_int(cap)
        except ValueError:
            limit = -1
        if limit < 0:
            raise InputError(f"SIGNSIM_MAX_ITERS={cap}: must be an integer >= 0")
        cfg.iters = min(cfg.iters, limit)
    if cfg.eval_every is None:  # derived, never blamed on the user: within --eval-every's range for any --iters
        cfg.eval_every = default_eval_every(cfg.iters)
        mark_eval_every_derived(cfg)
    validate(cfg)
    if theory:  # --lr theory: the step of the method's theorem, from the problem's constants (docs/theory.md §3.6)
        from signsim.interface.step_sizes import theory_step

        step = theory_step(cfg)
        cfg.lr = step.gamma
        mark_lr_theory(cfg, {"record": step.record(), "warnings": step.warnings})
    return cfg


def check_system(cfg: RunConfig) -> None:
    """The system model's laws and the target parsed (InputError naming a bad one); a trace file's path made
    absolute, so that a sweep's workers (Dask ones too) read the same file (docs/theory.md §14)."""
    if cfg.target is not None:
        from signsim import targets

        targets.parse(cfg.target)
    from signsim.system import laws

    for prop in laws.PROPERTIES:
        spec = getattr(cfg, prop)
        if spec is not None:
            law = laws.parse(prop, spec)
            if law.kind == "trace":  # its rows read now, so that a sweep refuses a bad one before any run
                laws.read_trace(prop, law.path, cfg.workers)
                setattr(cfg, prop, law.spec)


def mark_lr_theory(cfg: RunConfig, theory: dict[str, Any]) -> None:
    """Mark ``cfg.lr`` as computed by ``--lr theory``: ``theory`` is {"record": the results' ``lr_theory``,
    "warnings": [...]}. An attribute of this config object, as ``mark_eval_every_derived``: the config records the
    number, the results record where it came from."""
    cfg._lr_theory = theory


def lr_theory(cfg: RunConfig) -> dict[str, Any] | None:
    """What ``mark_lr_theory`` recorded, or None when ``cfg.lr`` is the user's (or a default)."""
    return getattr(cfg, "_lr_theory", None)


def mark_eval_every_derived(cfg: RunConfig) -> None:
    """Mark ``cfg.eval_every`` as signsim's default, not the user's: a run with a budget may then record its
    history by the budget instead (``signsim.commands.run.budget_eval_every``). The mark is an attribute of
    this config object, not a field: results, run ids and ``to_dict`` do not change."""
    cfg._eval_every_derived = True


def eval_every_derived(cfg: RunConfig) -> bool:
    """Was ``cfg.eval_every`` derived (not given by the user)? See ``mark_eval_every_derived``."""
    return bool(getattr(cfg, "_eval_every_derived", False))


def check_plugin_paths(plugin: str | None, option: str = "--plugin") -> None:
    """Every file of the ``plugin`` option is named (no empty item: ``''``, ``a.py,``) and can have its ``~user``
    expanded (else one line naming it, exit 2)."""
    from signsim.paths import home_expanded
    from signsim.stages import plugins

    if isinstance(plugin, str) and any(not p.strip() for p in plugin.split(",")):
        raise InputError(f"{option} {plugin!r}: an empty file name")

    for p in plugins.paths(plugin):
        home_expanded(p, option)


def check_given(values: dict[str, Any]) -> None:
    """Options the user gave (a command's options and config file, not a recorded configuration) that would have
    no effect with the others: one line, exit 2. ``--attack`` without Byzantine workers (a sweep grid or a
    ``[[compare]]`` table may still pair it with ``byzantine = 0`` as its baseline)."""
    attack = values.get("attack")
    if attack is not None and not values.get("byzantine"):
        raise InputError(f"--attack {attack}: has no effect without Byzantine workers (--byzantine is 0); give "
                         "--byzantine K or drop --attack")


def default_eval_every(iters: int) -> int:
    """--eval-every's default: about 100 recorded points, max(1, K // 100), within the option's range."""
    return min(max(1, iters // 100), int(RECORD["eval_every"].hi))


def _check(ok: bool, field: str, value: Any, what: str) -> None:
    if not ok:
        raise InputError(f"{option_name(field)} {value}: {what}")


def validate(cfg: RunConfig) -> None:
    """The checks that involve several options or a registry; each value's own type, range and choices come
    from ``signsim.interface.options`` (checked for every resolved value, defaults included)."""
    from signsim import methods
    from signsim.stages import plan

    for name in RECORD:
        value = getattr(cfg, name, None)
        if value is not None:
            check_value(name, value, f"{option_name(name)} {_shown(value)}")
    _check(0 <= cfg.byzantine <= cfg.workers, "byzantine", cfg.byzantine,
           f"must lie between 0 and the number of workers ({cfg.workers})")
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
    from signsim.stages.registry import stage_spec

    for kind, spec in (("aggregation", cfg.aggregate), ("attack", cfg.attack), ("compressor", cfg.compressor),
                       ("error_feedback", cfg.error_feedback), ("server_optimizer", cfg.server_opt),
                       ("estimator", cfg.grad_estimator), ("down_error_feedback", cfg.down_feedback)):
        stage_spec(kind, spec)  # an unknown name, with the closest one ("did you mean 'top-k'?")
    if cfg.down_compressor != "none":
        stage_spec("down_compressor", cfg.down_compressor)
    chosen = plan.of_config(cfg, method)  # every stage spec parsed, once (the layers below read these)
    from signsim.interface import composition

    composition.check(cfg, method, chosen)
    if cfg.dtype != "float64":
        _check(cfg.votes != "binomial", "dtype", cfg.dtype, "does not apply with --votes binomial (its O(d) state "
               "stays float64); drop one of --dtype and --votes binomial")
        from signsim import problems

        if "data" in problems.get(cfg.problem).options:  # the trackers of a data problem read its data matrix
            for field in ("track_spb", "track_diversity"):
                _check(getattr(cfg, field) is None, "dtype", cfg.dtype, f"does not apply with {option_name(field)} "
                       f"on {cfg.problem} (its estimators compute from float64 data); drop one of the two")
    if cfg.noise_scales is not None:
        _check((cfg.noise or "none") != "none", "noise_scales", cfg.noise_scales, "needs a --noise model to scale")
    if cfg.budget_bits is not None:
        _check(float(cfg.budget_bits).is_integer(), "budget_bits", _shown(cfg.budget_bits), "must be a whole number "
               "of bits")
    if cfg.budget_mb is not None:
        _check(cfg.budget_bits is None, "budget_mb", _shown(cfg.budget_mb),
               f"and --budget-bits {_shown(cfg.budget_bits)} are the same budget; give one of them")
