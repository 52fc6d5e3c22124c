"""The Python API: the commands as functions, for notebooks and scripts (docs/api.md).

Every function takes the command line's option names as keyword arguments, with underscores or hyphens
(``batch_size=4`` or ``**{"batch-size": 4}``), optionally on top of a ``config`` (a TOML file or a dict of
options); the options go through the same resolution and checks as the CLI's, and bad input raises
``signsim.InputError`` (a ``ValueError``) with the CLI's one-line message. Values are coerced as the CLI
coerces its flags (``lr="0.1"`` is 0.1).

Each function returns a :class:`Result`: ``to_dict()`` is exactly the ``--json`` document, ``history`` the
result's table as NumPy columns and ``to_pandas()`` the same table as a DataFrame (when pandas is installed).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from signsim.errors import InputError
from signsim.interface.options import API_OF, RECORD, flag, of_command, of_function, range_text, unknown_option
from signsim.interface.options import value as checked

__all__ = ["Result", "run", "check_spb", "diversity", "bound", "sweep", "spb_from_samples",
           "diversity_from_samples"]


# ----------------------------------------------------------------------------------------------------------
# results


class Result:
    """One command's results.

    * ``to_dict()``: the ``--json`` document (plain JSON types; non-finite numbers are ``None``);
    * ``history``: the result's table as a dict of NumPy arrays: per recorded iteration for ``run``, per
      coordinate for ``check_spb``, per batch size for ``diversity``, per (bound, K) for ``bound``, per
      (run, iteration) row of ``results.csv`` for ``sweep``;
    * ``tracks`` (runs): the tracked SPB and diversity values, each a dict of NumPy arrays;
    * ``to_pandas()``: ``history`` as a ``pandas.DataFrame`` (pandas is optional);
    * ``figure(x=..., y=..., ...)``: the figure ``signsim plot`` draws from these results;
    * ``result["key"]``: a field of ``to_dict()``.
    """

    def __init__(self, doc: dict[str, Any], table: list[dict[str, Any]] | None = None):
        self._doc = doc
        self._json: dict[str, Any] | None = None
        self._table = table

    @property
    def command(self) -> str:
        return self._doc.get("command", "")

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` document of the same command (a fresh copy each call)."""
        if self._json is None:
            from signsim.interface.results import dumps

            self._json = json.loads(dumps(self._doc))
        return json.loads(json.dumps(self._json))

    def to_json(self) -> str:
        from signsim.interface.results import dumps

        return dumps(self._doc)

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def keys(self):
        return self.to_dict().keys()

    @property
    def status(self) -> str | None:
        return self._doc.get("status") or self._doc.get("verdict")

    @property
    def history(self) -> dict[str, np.ndarray]:
        return columns(self._rows())

    @property
    def tracks(self) -> dict[str, dict[str, np.ndarray]]:
        return {k: columns(v) for k, v in self.to_dict().get("tracks", {}).items()}

    @property
    def runs(self) -> list[Result]:
        """The runs of a ``[[compare]]`` config, each a Result."""
        return [Result(d) for d in self._doc.get("runs", [])]

    def figure(self, *, x: str | None = None, y: str | None = None, group_by: str | None = None,
               where: list[str] | str | None = None, facet: str | None = None, out: str | Path | None = None):
        """The figure ``signsim plot`` draws from these results (a matplotlib Figure), with the same options
        and rules: a ``y`` the results lack raises InputError; what the figure does silently (runs of
        different problems on one axis, averaging over problems) is a ``UserWarning``. ``out`` also saves it."""
        import warnings

        from signsim.commands import plot

        doc = self.to_dict()
        if self.command == "sweep" and not doc.get("dry_run"):
            name = doc["out"]
            loaded = [plot.load_any(Path(name))]
        else:
            name = "this Result"
            loaded = [plot.classify(doc, name)]
        fig = plot.figure(loaded, [name], x, y, group_by, [where] if isinstance(where, str) else where, facet,
                          lambda message: warnings.warn(message, UserWarning, stacklevel=4))
        if out is not None:
            if Path(out).suffix.lower() not in plot.FORMATS:
                raise InputError(f"--out {out}: use a .png, .pdf or .svg file name")
            fig.savefig(out)
        return fig

    def to_pandas(self):
        """``history`` as a pandas DataFrame; pandas is an optional dependency."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("Result.to_pandas() needs pandas, which is optional and not installed: "
                              "pip install pandas (Result.history has the same columns as NumPy arrays)") from None
        return pd.DataFrame(self.history)

    def _rows(self) -> list[dict[str, Any]]:
        if self._table is not None:
            return self._table
        d = self.to_dict()
        kind = d.get("command")
        if kind == "run" and "comparison" in d:
            return d["comparison"]["rows"]
        if kind == "run":
            return d.get("history", [])
        if kind == "check-spb":
            return [{"coordinate": i, "grad": g, "rho": r, "rho_low": lo, "rho_high": hi, "sigma": s,
                     "status": st} for i, (g, r, lo, hi, s, st) in
                    enumerate(zip(d["grad"], d["rho"], d["rho_low"], d["rho_high"], d["sigma"], d["status"],
                                  strict=True))]
        if kind == "diversity":
            return d.get("speedup", [])
        if kind == "diversity-replication":
            return d.get("rows", [])
        if kind == "bound":
            return [{"key": b["key"], "K": v["K"], "bound": v["bound"]} for b in d["bounds"] for v in b["values"]]
        return []

    def __repr__(self) -> str:
        d = self._doc
        bits = [self.command or "result"]
        for key in ("status", "verdict", "B_S", "runs"):
            v = d.get(key)
            if isinstance(v, str | int | float) and not isinstance(v, bool):
                bits.append(f"{key}={v:.4g}" if isinstance(v, float) else f"{key}={v}")
        return f"<signsim.Result {' '.join(bits)}>"


def columns(rows: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    """Rows of plain values -> one NumPy array per key (missing values and None become NaN; text stays text)."""
    keys: list[str] = []
    for r in rows:
        keys.extend(k for k in r if k not in keys)
    out = {}
    for k in keys:
        vals = [r.get(k) for r in rows]
        present = [v for v in vals if v is not None]
        if present and all(isinstance(v, bool) for v in present) and len(present) == len(vals):
            out[k] = np.array(vals, dtype=bool)
        elif all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
            if len(present) == len(vals) and all(isinstance(v, int) for v in present):
                out[k] = np.array(vals, dtype=np.int64) if vals else np.zeros(0, dtype=np.int64)
            else:
                out[k] = np.array([np.nan if v is None else v for v in vals], dtype=float)
        else:
            out[k] = np.array(["" if v is None else v for v in vals], dtype=object)
    return out


# ----------------------------------------------------------------------------------------------------------
# options: the names, types and ranges of signsim.interface.options, one path for the command line and Python


def _names(options: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in options.items():
        name = str(key).replace("-", "_")
        if name in out:
            raise InputError(f"{flag(name)} given twice (as '{key}' and with the other spelling)")
        out[name] = value
    return out


def _unknown(name: str, known: Mapping[str, Any]) -> InputError:
    return unknown_option(name, known)


def _is_path(value: Any) -> bool:
    return isinstance(value, str | os.PathLike)


def _given(function: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword options of ``function`` -> their values, coerced and checked by ``signsim.interface.options`` (None:
    not given, dropped); an unknown name raises InputError naming the close ones. Python values the command
    line cannot give keep their own checks: ``data=(X, y)``, a vector ``x0`` or ``at``, a Result or dict
    ``overlay``, a dict ``constant``."""
    table = of_function(function)
    out: dict[str, Any] = {}
    for name, raw in _names(options).items():
        o = table.get(name)
        if o is None:
            raise _unknown(name, table)
        if raw is None:
            continue
        if name == "data" and not _is_path(raw):
            out[name] = _memory_data(raw)
        elif name == "x0" and not isinstance(raw, str) and np.ndim(raw) > 0:
            out[name] = _vector(raw)
        elif (name == "at" and not _is_path(raw)) or (name == "overlay" and isinstance(raw, Result | Mapping)):
            out[name] = raw  # a vector (_Point), a run's results (_overlay)
        elif name == "constant" and isinstance(raw, Mapping):
            out[name] = [f"{k}={v}" for k, v in raw.items()]
        else:
            out[name] = checked(o, raw)
    return out


def _record(values: Mapping[str, Any], where: str = "") -> dict[str, Any]:
    """A dict of run options (a ``config`` dict, a ``[[compare]]`` variant, a run's recorded config): coerced
    and checked as keywords are."""
    raw = _names(values)
    unknown = [k for k in raw if k not in RECORD]
    if unknown:
        raise InputError(f"{where + ': ' if where else ''}{_unknown(unknown[0], RECORD)}")
    return _given("run", raw)


def _file_values(config: Any) -> dict[str, Any]:
    """``config``: None, a TOML file (str or Path), or a dict of options (TOML spellings allowed)."""
    from signsim.interface import config as cfgmod

    if config is None:
        return {}
    if _is_path(config):
        return cfgmod.load_toml(checked(of_command("run")["config"], config))
    if not isinstance(config, Mapping):
        raise InputError(f"config: expected a TOML file name or a dict of options, got {type(config).__name__}")
    raw = _names(config)
    out: dict[str, Any] = {}
    if "compare" in raw:
        out["compare"] = _variants(raw.pop("compare"))
    if "experiment" in raw:
        experiment = raw.pop("experiment")
        if isinstance(experiment, Mapping):
            from signsim.interface.experiment_config import parse as parse_experiment

            experiment = parse_experiment(dict(experiment), "config: [experiment]")
        out["experiment"] = experiment
    return {**_record(raw, "config"), **out}


def _variants(value: Any) -> list[dict[str, Any]]:
    """``[[compare]]`` variants: each a dict of options and an optional label."""
    if not isinstance(value, list | tuple) or not value or not all(isinstance(v, Mapping) for v in value):
        raise InputError("config: 'compare' must be a list of dicts of options ([[compare]])")
    out = []
    for i, v in enumerate(value, start=1):
        v = dict(v)
        label = v.pop("label", None)
        entry = _record(v, f"config: [[compare]] #{i}")
        entry["label"] = str(label) if label is not None else f"variant {i}"
        out.append(entry)
    return out


def _real(a: Any, where: str) -> np.ndarray:
    """A real numeric array (a complex one is refused, not cut to its real part)."""
    try:
        arr = np.asarray(a)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise InputError(f"{where}: expected real numbers")
    if np.iscomplexobj(arr):
        raise InputError(f"{where}: expected real numbers, got complex values (dtype {arr.dtype})")
    return arr.astype(np.float64)


def _memory_data(value: Any) -> str:
    from signsim.data.memory import register

    if isinstance(value, tuple | list) and len(value) == 2:
        X, y = value
        for name, a in (("X", X), ("y", y)):
            dtype = getattr(a, "dtype", None)
            if (dtype is not None and np.issubdtype(dtype, np.complexfloating)) or \
                    (dtype is None and np.iscomplexobj(np.asarray(a, dtype=object).tolist())):
                raise InputError(f"data: {name} holds complex values; expected real numbers")
        return register(X, y, "data")
    raise InputError("data: expected a data set name or file, or a pair (X, y) of arrays")


def _vector(value: Any) -> np.ndarray:
    v = _real(value, "--x0")
    if v.ndim != 1 or v.size == 0:
        raise InputError(f"--x0: expected a number or a vector, got shape {v.shape}")
    if not np.isfinite(v).all():
        raise InputError("--x0: the vector contains non-finite values")
    return v


def check_given(values: dict[str, Any]) -> None:
    """``config.check_given``: options the user gave that would have no effect with the others."""
    from signsim.interface.config import check_given as check

    check(values)


def _resolve(values: dict[str, Any]):
    """config.resolve, with a vector x0 checked against the problem's dimension and stored as a list."""
    from signsim.interface import config as cfgmod

    vec = values.get("x0")
    if isinstance(vec, np.ndarray):
        values = {**values, "x0": float(vec[0]) if vec.size == 1 else 0.0}
    cfg = cfgmod.resolve(values)
    if isinstance(vec, np.ndarray) and vec.size > 1:
        from signsim import problems

        dim = problems.build(cfg, simulated=True).dim  # only its dimension: the checks of --dtype come later
        if vec.size != dim:
            raise InputError(f"--x0: a vector of length {vec.size}, but {cfg.problem} has dimension {dim}")
        cfg.x0 = vec.tolist()
    return cfg


class _Point:
    """``at`` as the command line takes it (init, optimum, run:K, FILE.npy) or, in Python, a vector: written
    to a temporary .npy for the command's own checks, and named "the given vector" in the results."""

    NAME = "the given vector"

    def __init__(self, at: Any):
        self.at, self.tmp = at, None

    def __enter__(self) -> str | None:
        if self.at is None or _is_path(self.at):
            return None if self.at is None else os.fspath(self.at)
        import tempfile

        v = _real(self.at, "--at")
        self.tmp = tempfile.TemporaryDirectory(prefix="signsim-at-")
        path = Path(self.tmp.name) / "x.npy"
        np.save(path, v)
        return str(path)

    def __exit__(self, kind, error, tb):
        if self.tmp is None:
            return False
        path = str(Path(self.tmp.name) / "x.npy")
        self.tmp.cleanup()
        if isinstance(error, InputError) and path in str(error):
            raise InputError(str(error).replace(path, f"({self.NAME})")) from None
        return False

    def name(self, where: str) -> str:
        return self.NAME if self.tmp is not None else where


def _out(out: str | None) -> Path | None:
    """--out checked before any work (a bad path is an error, not a lost run)."""
    if out is None:
        return None
    from signsim.paths import output_file

    output_file(out, "--out")
    return Path(out)


def _write(doc: dict[str, Any], out: Path | None) -> None:
    if out is not None:
        from signsim.interface.interrupts import deferred
        from signsim.interface.results import dumps, write_atomic

        with deferred():  # a further Ctrl-C while the results are written acts once they are written
            write_atomic(out, dumps(doc) + "\n")


def _command_defaults(command: str, values: dict[str, Any]) -> dict[str, Any]:
    """The command's own defaults (check-spb and diversity: the logistic problem) under the given values."""
    own = {name: d for name, o in RECORD.items() if (d := o.command_default(command)) is not None}
    if values.get("model") is not None:  # --model FILE.py: the model is the problem (``config.resolve``)
        own.pop("problem", None)
    return {**own, **values}


def _take(given: dict[str, Any], names: Mapping[str, Any]) -> dict[str, Any]:
    """The command's own options (not run options), removed from ``given``."""
    return {k: given.pop(k, None) for k in names if k not in RECORD}


# ----------------------------------------------------------------------------------------------------------
# the commands: the one path from options to a results document, for the command line and for Python

Progress = Callable[[int, int], None]
ProgressFor = Callable[[str], Progress | None]


def execute(command: str, config: Any = None, options: Mapping[str, Any] | None = None, *,
            progress_for: ProgressFor | None = None, on_start: Callable[[Any], None] | None = None) -> dict[str, Any]:
    """Run ``command`` (run, check-spb, diversity, bound) with ``config`` (a TOML file or a dict) under
    ``options`` (its keywords, by the names of ``signsim.interface.options``; text is parsed, as flags are): merge
    (config < options), check, run, write ``out``; return the results document. ``progress_for(label)`` gives
    the progress callback of each run; ``on_start(cfg)`` is called with the command's resolved config (one
    run, or the point a diagnostic computes at) just before its work starts: for ``run``, once its engine is
    built and checked, before the first iteration."""
    given = _given(API_OF[command], _model_objects(options or {}))
    progress = given.pop("progress", None)
    if progress is not None and progress_for is None:
        progress_for = lambda label: progress  # noqa: E731
    out = _out(given.pop("out", None))
    file_values = _file_values(config)
    log = _log(given.pop("log", None))
    from signsim.commands.compile import clear
    from signsim.interface.kernel_cache import repairing
    from signsim.interface.memory import collecting_less

    with _torch_threads_kept(), collecting_less():  # (a damaged kernel cache file is compiled again, as a deleted one)
        doc = repairing(lambda: RUNNERS[command](file_values, given, progress_for, on_start), empty=clear)
    doc.setdefault("warnings", [])  # every results document has the list (docs/api.md), empty when none
    _write(doc, out)
    if log:
        from signsim.interface.interrupts import deferred
        from signsim.render.loggers import send

        with deferred():  # as the results file: a further Ctrl-C acts once the trackers have them
            send(doc, log)
    return doc


@contextlib.contextmanager
def _torch_threads_kept():
    """The caller's PyTorch thread count, as it was when the call began, when it ends, whatever changed it during
    the call (a user saw ``torch.set_num_threads(1)`` become 2 after a run, and their own torch code far slower
    under load; Numba's OpenMP threading layer and torch can share libgomp, and a model file may set it). A caller
    that had not imported torch has no count of its own to keep."""
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    try:
        yield
    finally:
        if before is not None and torch.get_num_threads() != before:
            torch.set_num_threads(before)


def _log(values: Any) -> list:
    """--log's targets, checked before any work."""
    if values is None:
        return []
    from signsim.render.loggers import parse

    return parse(values)


def _model_objects(options: Mapping[str, Any]) -> Mapping[str, Any]:
    """``model=signsim.torch.Model(...)`` (your model as objects of this process) as the ``model`` option's value that
    names it (``signsim.torch.model_file.register``); a file name passes as it is."""
    value = options.get("model")
    if value is None or isinstance(value, (str, Path)):
        return options
    from signsim.torch import Model

    if not isinstance(value, Model):
        raise InputError(f"model: a model file's name or a signsim.torch.Model, got {type(value).__name__}")
    from signsim.torch.model_file import register

    return {**options, "model": register(value)}


def _run(file_values: dict[str, Any], given: dict[str, Any], progress_for, on_start) -> dict[str, Any]:
    from signsim.commands.run import run as run_command

    if "experiment" in file_values:
        raise InputError("config: an [experiment] table runs with 'signsim diversity' (signsim.diversity), not run")
    variants = file_values.pop("compare", None)
    given.pop("compare", None)  # options override every variant, as flags do on the command line
    if variants is not None:
        from signsim.commands.compare import compare

        return compare(file_values, variants, given, progress_for)
    check_given({**file_values, **given})
    cfg = _resolve({**file_values, **given})
    progress = progress_for(f"{cfg.method} on {cfg.problem}") if progress_for else None
    return run_command(cfg, progress, (lambda: on_start(cfg)) if on_start else None)


def _check_spb(file_values: dict[str, Any], given: dict[str, Any], progress_for, on_start) -> dict[str, Any]:
    from signsim.commands.check_spb import SpbOptions
    from signsim.commands.check_spb import check_spb as check_command

    own = _take(given, of_command("check-spb"))
    grads = own.pop("grads")
    file_values.pop("compare", None)
    file_values.pop("experiment", None)
    own = {k: v for k, v in own.items() if k not in OUTPUTS}
    if grads is not None:
        from signsim.commands import grads as from_grads

        return from_grads.check_spb(Path(grads), {**file_values, **given}, own)
    values = _command_defaults("check-spb", {**file_values, **given})
    check_given(values)
    cfg = _resolve(values)
    if on_start:
        on_start(cfg)
    point = _Point(own.pop("at"))
    with point as at:
        doc = check_command(cfg, SpbOptions.build(workers_given="workers" in values,
                                                  samples_given=own.get("samples") is not None, at=at, **own))
    doc["point"] = point.name(doc["point"])
    doc["options"]["at"] = point.name(doc["options"]["at"])
    return doc


def _diversity(file_values: dict[str, Any], given: dict[str, Any], progress_for, on_start) -> dict[str, Any]:
    from signsim.commands.diversity import DiversityOptions
    from signsim.commands.diversity import diversity as diversity_command

    own = _take(given, of_command("diversity"))
    grads = own.pop("grads")
    own = {k: v for k, v in own.items() if k not in OUTPUTS}
    file_values.pop("compare", None)
    experiment = file_values.pop("experiment", None)
    if grads is not None:
        from signsim.commands import grads as from_grads

        return from_grads.diversity(Path(grads), {**file_values, **given}, own)
    values = _command_defaults("diversity", {**file_values, **given})
    if experiment is not None:
        from signsim.commands.experiments import run as run_experiment

        at = own.get("at")
        if at not in (None, "init"):  # --at names the experiment's point (it was silently ignored)
            if not hasattr(experiment.options, "at"):
                raise InputError(f"--at {at}: the {experiment.kind} experiment has no point to compute at")
            experiment.options.at = str(at)

        return run_experiment(values, experiment, progress_for or (lambda label: None))
    check_given(values)
    cfg = _resolve(values)
    if on_start:
        on_start(cfg)
    point = _Point(own.pop("at"))
    with point as at:
        doc = diversity_command(cfg, DiversityOptions.build(at=at, pairs_given=own.get("pairs") is not None, **own))
    doc["point"] = point.name(doc["point"])
    doc["options"]["at"] = point.name(doc["options"]["at"])
    return doc


def _bound(file_values: dict[str, Any], given: dict[str, Any], progress_for, on_start) -> dict[str, Any]:
    from signsim.commands.bound import BoundOptions
    from signsim.commands.bound import bound as bound_command

    own = _take(given, of_command("bound"))
    file_values.pop("compare", None)
    file_values.pop("experiment", None)
    values = {**file_values, **given}
    check_given(values)
    run_doc = None
    if own["overlay"] is not None:
        run_doc, base = _overlay(own["overlay"])
        values = {**base, **values}  # the run's config < the config file < the options
    point = _Point(own["at"])
    cfg = _resolve(values)
    if on_start:
        on_start(cfg)
    with point as at:
        o = BoundOptions(constants=own["constant"] or [], box=own["box"] if own["box"] is not None else 2.0,
                         at=at or "init")
        doc = bound_command(cfg, o, run_doc)
    doc["majority_table"]["point"] = point.name(doc["majority_table"]["point"])
    return doc


def _overlay(overlay: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run's results (a file, a Result or a dict) and its config as options."""
    where = "--overlay"
    if isinstance(overlay, Result):
        run_doc = overlay.to_dict()
    elif isinstance(overlay, Mapping):
        run_doc = json.loads(json.dumps(overlay, default=_plain))
    else:
        from signsim.interface.results import load_results

        where = f"--overlay {overlay}"
        run_doc = load_results(overlay, "run", "--overlay")
    if run_doc.get("command") != "run" or "comparison" in run_doc or not isinstance(run_doc.get("config"), dict):
        raise InputError(f"{where}: expected the results of one 'signsim run'")
    try:
        base = _record({k: v for k, v in run_doc["config"].items() if v is not None})
        _resolve(dict(base))
    except (InputError, TypeError) as e:
        raise InputError(f"{where}: its config is not a valid run config ({e})") from None
    return run_doc, base


RUNNERS = {"run": _run, "check-spb": _check_spb, "diversity": _diversity, "bound": _bound}
#: the options every results command takes that are not its own computation's
OUTPUTS = ("out", "json", "quiet", "plot", "config", "progress")


def run(config: Any = None, *, out: str | Path | None = None,
        progress: Callable[[int, int], None] | None = None, plugins: Any = None, **options: Any) -> Result:
    """``signsim run``: simulate one run (or the ``[[compare]]`` variants of a config file).

    ``data=(X, y)`` takes arrays (NumPy, or a SciPy sparse X) instead of a file; ``x0`` a number or a vector
    of length d. ``progress(done, total)`` is called as the run advances; ``out`` writes the results JSON.
    A run stopped by Ctrl-C returns its partial history with status ``interrupted``; one stopped by a plugin
    stage that broke its contract (an index outside an array, bits or rows it may not return) returns its history
    up to the round before with status ``failed`` and the reason as ``result["error"]``, also issued as a
    ``UserWarning``. The warnings the command line prints (``result["warnings"]``) are also issued as
    ``UserWarning``. ``plugins``: files of your own
    stages, a path or a list (the ``plugin`` option, docs/api.md)."""
    if plugins is not None:
        from signsim.stages.plugins import paths

        files = paths(plugins)
        if files:
            options["plugin"] = ",".join(files)
        elif isinstance(plugins, (str, Path)):  # an empty list: no plugins
            raise InputError(f"plugins {str(plugins)!r}: an empty value is not allowed")
    return _warned(execute("run", config, {**options, "out": out, "progress": progress}))


def _warned(doc: dict[str, Any]) -> Result:
    """``doc`` as a Result, once its warnings (the command line's "warning:" lines: ``doc["warnings"]``, and each
    compared run's) are issued as ``UserWarning``."""
    import warnings

    doc.setdefault("warnings", [])
    for w in sorted({w for d in [doc, *doc.get("runs", [])] for w in d.get("warnings", None) or []}):
        warnings.warn(w, UserWarning, stacklevel=3)
    for d in [doc, *doc.get("runs", [])]:
        if d.get("status") == "failed" and d.get("error"):  # a plugin stage's fault: the results up to it
            warnings.warn(f"the run failed: {d['error']}", UserWarning, stacklevel=3)
    return Result(doc)


def check_spb(config: Any = None, *, out: str | Path | None = None, **options: Any) -> Result:
    """``signsim check-spb``: per-coordinate success probabilities at a point, the SPB verdict and ρ-norms
    (docs/theory.md §1). Takes the run options and ``at`` (also a vector), ``estimator``, ``samples``,
    ``confidence``, ``interval``, ``correction``, ``top``, ``grads`` (a .npy file of per-sample gradients); the
    problem defaults to logistic on a bundled data set, as on the command line. The verdict is
    ``result["verdict"]`` (the CLI's exit code 1 is not an exception here)."""
    return _warned(execute("check-spb", config, {**options, "out": out}))


def diversity(config: Any = None, *, out: str | Path | None = None, **options: Any) -> Result:
    """``signsim diversity``: gradient diversity Δ_S, the batch-size bound B_S, B_simple and the predicted
    speedup at a point (docs/theory.md §6); a config with an ``[experiment]`` table runs the experiment its
    ``kind`` names (replication, dimension, heuristics, stability, conflicts, lower-bound). Takes the run
    options and ``at`` (also a vector), ``delta``, ``estimator``, ``pairs``, ``small_batch``, ``big_batch``,
    ``transform`` (a spec or a list of them: dropout, langevin or any compressor, docs/theory.md §10.4),
    ``transform_draws``, ``grads``; the problem defaults to logistic, as on the command line."""
    return _warned(execute("diversity", config, {**options, "out": out}))


def bound(config: Any = None, *, out: str | Path | None = None, **options: Any) -> Result:
    """``signsim bound``: the theorems' bounds for a problem's constants and the majority-vote table. Takes the
    run options and ``overlay`` (a run's results file, its ``Result`` or its dict: the run's observations beside
    the bounds, its config under the others), ``constant`` (a dict ``{"L1": 2.0}`` or a list of
    ``"NAME=VALUE"``), ``box`` and ``at`` (also a vector)."""
    return _warned(execute("bound", config, {**options, "out": out}))


def _plain(obj: Any) -> Any:
    from signsim.interface.results import jsonable

    return jsonable(obj)


def sweep_document(path: Any, *, out: Any = None, executor: Any = "local", jobs: Any = None, scheduler: Any = None,
                   dask_timeout: Any = None, dry_run: Any = False, force: Any = False, progress: Any = None,
                   log: Callable[[str], None] | None = None, plugin: Any = None,
                   before: Callable[[], None] | None = None) -> tuple[dict[str, Any], Any, Path]:
    """The sweep's document (the summary, or the dry run's list of runs), its spec and its directory: the one
    path of ``signsim sweep`` and ``signsim.sweep``. ``before()`` is called once every option is checked, before the
    first run (the CLI's compile notices: a bad option is then one line, with no notice before it)."""
    from signsim.commands.sweep import plan
    from signsim.commands.sweep import sweep as sweep_command
    from signsim.paths import output_dir
    from signsim.sweep.executors import make
    from signsim.sweep.store import Store

    if not _is_path(path):
        raise InputError(f"sweep file: expected a file name (a str or a path), got {path!r}")
    path = Path(path)
    o = _given("sweep", {"out": out, "executor": executor, "jobs": jobs, "scheduler": scheduler,
                         "dask_timeout": dask_timeout, "dry_run": dry_run, "force": force, "progress": progress,
                         "plugin": plugin})
    target = output_dir(o.get("out", str(Path("results") / path.stem)), "--out")
    if o.get("dry_run"):
        from signsim.commands.sweep import check_runs

        spec, tasks = plan(path, o.get("plugin"))
        store = Store(target)
        finished = [store.finished(t["run_id"]) for t in tasks]
        check_runs(spec, [t for t, done in zip(tasks, finished, strict=True) if not done])  # as the sweep would
        rows = [{"index": t["index"], "run_id": t["run_id"], "params": t["params"], "finished": done,
                 "error": t["error"]} for t, done in zip(tasks, finished, strict=True)]
        return {"command": "sweep", "dry_run": True, "runs": rows}, spec, target
    ex = make(o.get("executor", "local"), o.get("jobs"), o.get("scheduler"), o.get("force", False),
              o.get("dask_timeout"))
    if before is not None:
        before()
    return sweep_command(path, target, ex, o.get("progress"), log, o.get("plugin")), None, target


def sweep(path: str | Path, *, out: str | Path | None = None, executor: str = "local", jobs: int | None = None,
          scheduler: str | None = None, dask_timeout: float | None = None, dry_run: bool = False, force: bool = False,
          progress: Callable[[int, int], None] | None = None, plugin: str | None = None) -> Result:
    """``signsim sweep FILE``: run a grid of runs into ``out`` (default ``results/<file stem>``), skipping
    runs already finished there. ``to_dict()`` is the summary document, ``history`` the rows of
    ``results.csv``; ``dry_run=True`` only expands and checks the grid."""
    doc, _, target = sweep_document(path, out=out, executor=executor, jobs=jobs, scheduler=scheduler,
                                    dask_timeout=dask_timeout, dry_run=dry_run, force=force, progress=progress,
                                    plugin=plugin)
    if doc.get("dry_run"):
        return Result(doc, [{"index": r["index"], "run_id": r["run_id"], **r["params"], "finished": r["finished"],
                             "error": r["error"]} for r in doc["runs"]])
    return Result(doc, _csv_rows(target / "results.csv"))


def _csv_rows(path: Path) -> list[dict[str, Any]]:
    import csv

    if not path.is_file():
        return []
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    out = []
    for r in rows:
        row: dict[str, Any] = {}
        for k, v in r.items():
            if v == "":
                row[k] = None
                continue
            try:
                row[k] = int(v)
            except ValueError:
                try:
                    row[k] = float(v)
                except ValueError:
                    row[k] = v
        out.append(row)
    return out


# ----------------------------------------------------------------------------------------------------------
# the user's own per-sample gradients


def spb_from_samples(G: Any, *, workers: int | None = None, batch_size: int = 1, sign_zero: str = "random",
                     tie: str = "random", confidence: float = 0.95, interval: str = "wilson", correction: str = "holm",
                     samples: int = 2000, seed: int = 0, top: int = 10) -> Result:
    """Success probabilities of the user's own per-sample gradients (docs/theory.md §1,
    docs/theory.md §9.1-§9.3).

    ``G`` is an n x d array (a NumPy array or a memory map) or an iterable of row blocks (each k x d), so
    that the whole n x d matrix never has to be in memory; the true gradient is their mean and every worker
    samples the rows uniformly. With ``batch_size = 1`` the sign law is exact: P(agree), P(zero),
    P(disagree) are the fractions of samples whose coordinate i has the sign of g_i, is 0, has the other
    sign; ``sign_zero`` (random: a fair ±1, plus: +1, zero: 0) makes it the message's law, ρ_i = P(message
    agrees), and SPB holds on i when the message agrees more often than it disagrees. With ``batch_size > 1``
    (an array G only) the law is estimated from ``samples`` minibatches drawn with replacement, with
    ``interval`` intervals and ``correction`` over coordinates. ``rho_norm`` is E⟨g, sign ĝ⟩;
    ``workers=M`` adds E⟨g, vote⟩ (``rho_M_norm``) from the law of the vote of M such workers, ties broken
    by ``tie`` (random | zero). The document has the same fields and numbers as ``check-spb --json`` for a
    finite sum with these per-sample gradients: ``rho``, ``p_agree``, ``p_zero``, ``p_disagree``,
    ``verdict``, ``rho_norm``, ``rho_M_norm``, ``vote_agree``, ``sigma``, ``sufficient``, ..."""
    from signsim.diagnostics.samples import spb_document

    o = _sample_options(spb_from_samples, dict(workers=workers, batch_size=batch_size, sign_zero=sign_zero,
                                                 tie=tie, confidence=confidence, interval=interval,
                                                 correction=correction, samples=samples, seed=seed, top=top))
    return _warned(spb_document(G, **o))


def diversity_from_samples(G: Any, *, delta: float = 1.0) -> Result:
    """Gradient diversity of the user's own per-sample gradients (docs/theory.md §6): Δ_S, B_S, B_simple and
    the predicted speedup table, exactly, in one pass over ``G`` (an n x d array or an iterable of row
    blocks)."""
    from signsim.diagnostics.samples import diversity_document

    return _warned(diversity_document(G, **_sample_options(diversity_from_samples, {"delta": delta})))


def _sample_options(function: Callable[..., Any], given: dict[str, Any]) -> dict[str, Any]:
    """The keywords of a ``*_from_samples`` function checked by ``signsim.interface.options``; None is refused where the
    signature has a value by default (None is not "not given" here: the signature shows the default)."""
    import inspect

    table = of_function(function.__name__)
    defaults = inspect.signature(function).parameters
    for name, raw in given.items():
        if raw is None and defaults[name].default is not None:
            o = table[name]
            wanted = range_text(o) if o.kind in ("int", "float") else "one of " + ", ".join(o.choices)
            raise InputError(f"{o.flag} None: expected {wanted} (default {defaults[name].default})")
    out = _given(function.__name__, given)
    return {name: out.get(name) for name in given}
