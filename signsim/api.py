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

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

from signsim.errors import InputError

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
            from signsim.results import dumps

            self._json = json.loads(dumps(self._doc))
        return json.loads(json.dumps(self._json))

    def to_json(self) -> str:
        from signsim.results import dumps

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
# options: the CLI's names and coercions


def _run_kinds() -> dict[str, str]:
    """RunConfig field -> int | float | bool | str, read from its annotations."""
    from signsim.config import RunConfig

    kinds = {}
    for f in fields(RunConfig):
        t = str(f.type)
        kinds[f.name] = next((k for k in ("bool", "int", "float") if k in t.replace("|", " ").split()), "str")
    return kinds


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def coerce(name: str, value: Any, kind: str) -> Any:
    """A Python value -> what the CLI's flag of this type would give, or InputError naming the option."""
    opt = _flag(name)
    if value is None:
        return None
    if kind == "bool":
        if isinstance(value, bool | np.bool_):
            return bool(value)
        raise InputError(f"{opt} {value!r}: must be True or False")
    if kind == "int":
        if isinstance(value, bool | np.bool_):
            raise InputError(f"{opt} {value!r}: not a valid integer")
        if isinstance(value, int | np.integer):
            return int(value)
        if isinstance(value, float | np.floating) and math.isfinite(value) and float(value).is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                pass
        raise InputError(f"{opt} {value!r}: not a valid integer")
    if kind == "float":
        if isinstance(value, bool | np.bool_):
            raise InputError(f"{opt} {value!r}: not a valid number")
        if isinstance(value, int | float | np.integer | np.floating):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                pass
        raise InputError(f"{opt} {value!r}: not a valid number")
    if isinstance(value, Path):
        return str(value)
    if not isinstance(value, str):
        raise InputError(f"{opt} {value!r}: must be a string")
    return value


def _names(options: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in options.items():
        name = str(key).replace("-", "_")
        if name in out:
            raise InputError(f"{_flag(name)} given twice (as '{key}' and with the other spelling)")
        out[name] = value
    return out


def _file_values(config: Any) -> dict[str, Any]:
    """``config``: None, a TOML file (str or Path), or a dict of options (TOML spellings allowed)."""
    from signsim import config as cfgmod

    if config is None:
        return {}
    if isinstance(config, str | Path):
        return cfgmod.load_toml(config)
    if isinstance(config, Mapping):
        return _names(config)
    raise InputError(f"config: expected a TOML file name or a dict of options, got {type(config).__name__}")


def _split(config: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """config < options, by RunConfig field, coerced; unknown names raise InputError."""
    return _coerced({**_file_values(config), **_names(options)})


def _coerced(merged: dict[str, Any]) -> dict[str, Any]:
    kinds = _run_kinds()
    out: dict[str, Any] = {}
    for name, value in merged.items():
        if name == "compare":
            out[name] = _variants(value)
            continue
        if name == "experiment":
            if isinstance(value, Mapping):
                from signsim.experiment_config import parse as parse_experiment

                value = parse_experiment(dict(value), "config: [experiment]")
            out[name] = value
            continue
        if name not in kinds:
            raise InputError(f"unknown option {_flag(name)}")
        if name == "data" and value is not None and not isinstance(value, str | Path):
            out[name] = _memory_data(value)
        elif name == "x0" and value is not None and not isinstance(value, str) and np.ndim(value) > 0:
            out[name] = _vector(value)
        else:
            out[name] = coerce(name, value, kinds[name])
    return {k: v for k, v in out.items() if v is not None}


def _variants(value: Any) -> list[dict[str, Any]]:
    """``[[compare]]`` variants: each a dict of options and an optional label."""
    if not isinstance(value, list | tuple) or not value or not all(isinstance(v, Mapping) for v in value):
        raise InputError("config: 'compare' must be a list of dicts of options ([[compare]])")
    out = []
    for i, v in enumerate(value, start=1):
        v = dict(v)
        label = v.pop("label", None)
        entry = _coerced(_names(v))
        entry.pop("compare", None)
        entry["label"] = str(label) if label is not None else f"variant {i}"
        out.append(entry)
    return out


def _memory_data(value: Any) -> str:
    from signsim.data.memory import register

    if isinstance(value, tuple | list) and len(value) == 2:
        return register(value[0], value[1], "data")
    raise InputError("data: expected a data set name or file, or a pair (X, y) of arrays")


def _vector(value: Any) -> np.ndarray:
    try:
        v = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError("--x0: expected a number or a numeric vector") from None
    if v.ndim != 1 or v.size == 0:
        raise InputError(f"--x0: expected a number or a vector, got shape {v.shape}")
    if not np.isfinite(v).all():
        raise InputError("--x0: the vector contains non-finite values")
    return v


def _resolve(values: dict[str, Any]):
    """config.resolve, with a vector x0 checked against the problem's dimension and stored as a list."""
    from signsim import config as cfgmod

    vec = values.get("x0")
    if isinstance(vec, np.ndarray):
        values = {**values, "x0": float(vec[0]) if vec.size == 1 else 0.0}
    try:
        cfg = cfgmod.resolve(values)
    except TypeError as e:  # a value of the wrong type that the checks above let through
        raise InputError(f"invalid option value ({e})") from None
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
        if self.at is None or isinstance(self.at, str | Path):
            return None if self.at is None else str(self.at)
        import tempfile

        try:
            v = np.asarray(self.at, dtype=np.float64)
        except (TypeError, ValueError):
            raise InputError("--at: expected init, optimum, run:K, a .npy file or a vector") from None
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


def _extras(given: dict[str, Any], kinds: dict[str, str]) -> dict[str, Any]:
    return {k: coerce(k, v, kinds[k]) for k, v in given.items() if v is not None}


def _pop(values: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    return {k: values.pop(k) for k in list(values) if k in names}


def _write(doc: dict[str, Any], out: str | Path | None) -> None:
    if out is not None:
        from signsim.results import dumps, write_atomic

        write_atomic(Path(out), dumps(doc) + "\n")


# ----------------------------------------------------------------------------------------------------------
# the commands


def run(config: Any = None, *, out: str | Path | None = None,
        progress: Callable[[int, int], None] | None = None, **options: Any) -> Result:
    """``signsim run``: simulate one run (or the ``[[compare]]`` variants of a config file).

    ``data=(X, y)`` takes arrays (NumPy, or a SciPy sparse X) instead of a file; ``x0`` a number or a vector
    of length d. ``progress(done, total)`` is called as the run advances; ``out`` writes the results JSON.
    A run stopped by Ctrl-C returns its partial history with status ``interrupted``. The warnings the
    command line prints (``result["warnings"]``) are also issued as ``UserWarning``."""
    from signsim.commands.run import run as run_command

    file_values = _coerced(_file_values(config))
    given = _coerced(_names(options))
    values = {**file_values, **given}
    values.pop("experiment", None)
    variants = values.pop("compare", None)
    if variants is not None:
        from signsim.commands.compare import compare

        file_values.pop("compare", None)
        file_values.pop("experiment", None)
        given.pop("compare", None)  # keyword options override every variant, as flags do on the command line
        doc = compare(file_values, variants, given, (lambda label: progress) if progress else None)
    else:
        doc = run_command(_resolve(values), progress)
    _write(doc, out)
    import warnings

    for w in sorted({w for d in doc.get("runs", [doc]) for w in d.get("warnings", [])}):
        warnings.warn(w, UserWarning, stacklevel=2)  # what the command line prints as "warning:"
    return Result(doc)


SPB_OPTIONS = {"at": "str", "estimator": "str", "samples": "int", "confidence": "float", "interval": "str",
               "correction": "str", "top": "int"}


def check_spb(config: Any = None, *, out: str | Path | None = None, **options: Any) -> Result:
    """``signsim check-spb``: per-coordinate success probabilities at a point, the SPB verdict and ρ-norms
    (docs/theory.md §1). Takes the run options and ``at``, ``estimator``, ``samples``, ``confidence``,
    ``interval``, ``correction``, ``top``; the problem defaults to logistic on a bundled data set, as on the
    command line. The verdict is ``result["verdict"]`` (the CLI's exit code 1 is not an exception here)."""
    from signsim.commands.check_spb import SpbOptions
    from signsim.commands.check_spb import check_spb as check_command

    opts = _names(options)
    point = _Point(opts.pop("at", None))
    extra = _extras(_pop(opts, SPB_OPTIONS), SPB_OPTIONS)
    values = _split(config, opts)
    values.pop("compare", None)
    values.pop("experiment", None)
    values.setdefault("problem", "logistic")
    values.setdefault("batch_size", 1)
    cfg = _resolve(values)
    with point as at:
        doc = check_command(cfg, SpbOptions.build(workers_given="workers" in values, at=at, **extra))
    doc["point"] = point.name(doc["point"])
    doc["options"]["at"] = point.name(doc["options"]["at"])
    _write(doc, out)
    return Result(doc)


DIVERSITY_OPTIONS = {"at": "str", "delta": "float", "estimator": "str", "pairs": "int", "small_batch": "int",
                     "big_batch": "int"}


def diversity(config: Any = None, *, out: str | Path | None = None, **options: Any) -> Result:
    """``signsim diversity``: gradient diversity Δ_S, the batch-size bound B_S, B_simple and the predicted
    speedup at a point (docs/theory.md §6); a config with an ``[experiment]`` table runs the replicated-data
    experiment. Takes the run options and ``at``, ``delta``, ``estimator``, ``pairs``, ``small_batch``,
    ``big_batch``; the problem defaults to logistic, as on the command line."""
    from signsim.commands.diversity import DiversityOptions
    from signsim.commands.diversity import diversity as diversity_command

    opts = _names(options)
    point = _Point(opts.pop("at", None))
    extra = _extras(_pop(opts, DIVERSITY_OPTIONS), DIVERSITY_OPTIONS)
    values = _split(config, opts)
    values.pop("compare", None)
    experiment = values.pop("experiment", None)
    values.setdefault("problem", "logistic")
    if experiment is not None:
        from signsim.commands.experiments import run as run_experiment

        doc = run_experiment(values, experiment, lambda label: None)
    else:
        cfg = _resolve(values)
        with point as at:
            doc = diversity_command(cfg, DiversityOptions.build(at=at, **extra))
        doc["point"] = point.name(doc["point"])
        doc["options"]["at"] = point.name(doc["options"]["at"])
    _write(doc, out)
    return Result(doc)


def bound(config: Any = None, *, overlay: Any = None, constant: Any = None, box: Any = None, at: Any = None,
          out: str | Path | None = None, **options: Any) -> Result:
    """``signsim bound``: the theorems' bounds for a problem's constants and the majority-vote table; with
    ``overlay`` (a run's results file, its ``Result`` or its dict) the run's observations beside them.
    ``constant`` overrides constants: a dict ``{"L1": 2.0}`` or a list of ``"NAME=VALUE"``."""
    from signsim.commands.bound import BoundOptions
    from signsim.commands.bound import bound as bound_command

    values = _split(config, options)
    values.pop("compare", None)
    values.pop("experiment", None)
    run_doc = None
    if overlay is not None:
        if isinstance(overlay, Result):
            run_doc = overlay.to_dict()
        elif isinstance(overlay, Mapping):
            run_doc = json.loads(json.dumps(overlay, default=_plain))
        elif isinstance(overlay, str | Path):
            from signsim.results import load_results

            run_doc = load_results(overlay, "run", "--overlay")
        else:
            raise InputError(f"--overlay: expected a results file, a Result or a dict, got {type(overlay).__name__}")
        if run_doc.get("command") != "run" or "comparison" in run_doc or not isinstance(run_doc.get("config"), dict):
            raise InputError("--overlay: expected the results of one 'signsim run'")
        try:
            base = _coerced({k: v for k, v in run_doc["config"].items() if v is not None})
            _resolve(dict(base))
        except (InputError, TypeError) as e:
            raise InputError(f"--overlay: its config is not a valid run config ({e})") from None
        values = {**base, **values}
    if constant is None:
        constants: list[str] = []
    elif isinstance(constant, Mapping):
        constants = [f"{k}={v}" for k, v in constant.items()]
    elif isinstance(constant, str):
        constants = [constant]
    else:
        constants = [str(c) for c in constant]
    box_v = coerce("box", box, "float")
    point = _Point(at)
    cfg = _resolve(values)
    with point as at_:
        o = BoundOptions(constants=constants, box=2.0 if box_v is None else box_v, at=at_ or "init")
        doc = bound_command(cfg, o, run_doc)
    doc["majority_table"]["point"] = point.name(doc["majority_table"]["point"])
    _write(doc, out)
    return Result(doc)


def _plain(obj: Any) -> Any:
    from signsim.results import jsonable

    return jsonable(obj)


def sweep(path: str | Path, *, out: str | Path | None = None, executor: str = "local", jobs: int | None = None,
          scheduler: str | None = None, dry_run: bool = False,
          progress: Callable[[int, int], None] | None = None) -> Result:
    """``signsim sweep FILE``: run a grid of runs into ``out`` (default ``results/<file stem>``), skipping
    runs already finished there. ``to_dict()`` is the summary document, ``history`` the rows of
    ``results.csv``; ``dry_run=True`` only expands and checks the grid."""
    from signsim.commands.sweep import plan
    from signsim.commands.sweep import sweep as sweep_command
    from signsim.sweep.executors import make
    from signsim.sweep.store import Store

    path = Path(path)
    target = Path(out) if out is not None else Path("results") / path.stem
    if dry_run:
        spec, tasks = plan(path)
        store = Store(target)
        rows = [{"index": t["index"], "run_id": t["run_id"], "params": t["params"],
                 "finished": store.finished(t["run_id"]), "error": t["error"]} for t in tasks]
        return Result({"command": "sweep", "dry_run": True, "runs": rows},
                      [{"index": r["index"], "run_id": r["run_id"], **r["params"], "finished": r["finished"],
                        "error": r["error"]} for r in rows])
    ex = make(executor, coerce("jobs", jobs, "int"), scheduler)
    doc = sweep_command(path, target, ex, progress, None)
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

    kinds = {"workers": "int", "batch_size": "int", "sign_zero": "str", "tie": "str", "confidence": "float",
             "interval": "str", "correction": "str", "samples": "int", "seed": "int", "top": "int"}
    given = dict(workers=workers, batch_size=batch_size, sign_zero=sign_zero, tie=tie, confidence=confidence,
                 interval=interval, correction=correction, samples=samples, seed=seed, top=top)
    o = {k: coerce(k, v, kinds[k]) for k, v in given.items()}
    return Result(spb_document(G, **o))


def diversity_from_samples(G: Any, *, delta: float = 1.0) -> Result:
    """Gradient diversity of the user's own per-sample gradients (docs/theory.md §6): Δ_S, B_S, B_simple and
    the predicted speedup table, exactly, in one pass over ``G`` (an n x d array or an iterable of row
    blocks)."""
    from signsim.diagnostics.samples import diversity_document

    return Result(diversity_document(G, coerce("delta", delta, "float")))

