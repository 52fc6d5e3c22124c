"""The worst-case robustness benchmark (issue #32, item 5): a sweep file's ``[robustness]`` table and its report.

The table names methods (an aggregation, optionally after a pre-aggregation chain, or any variant of run options),
attacks, numbers of Byzantine workers f and one heterogeneity option. ``expand`` turns it into one ``[[zip]]``
group of the ordinary sweep (every method x heterogeneity level x f x attack; at f = 0 one run per method and
level, since no worker attacks), so the sweep's executors, store and results.csv are unchanged. A parameter
written ``f`` in a method's spec (``krum:f``, ``nnm:f``) stands for the run's number of Byzantine workers.

``worst_case`` reads results.csv's rows back and gives, per method and (f, heterogeneity) cell, the worst final
value of the metric over the attacks and the attack that caused it, and per method the worst over every cell.
Rules (docs/reference.md, "Robustness benchmark"):

* final value: the metric on a run's last row that records it; over repeats, the mean;
* a run that diverged or failed, or whose final value is not finite, counts as the worst (shown as its status);
  a run not finished (missing, interrupted) is left out and its cell marked incomplete;
* ties go to what the table lists first: the attack earlier in ``attack`` (then, overall, the smaller f in the
  table's order, then the earlier heterogeneity level).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

from signsim.errors import InputError

#: metric -> which end is worst
METRICS = {"loss": "highest", "test_loss": "highest", "train_acc": "lowest", "test_acc": "lowest"}
#: the table's own keys; any other key is the heterogeneity option
KEYS = ("aggregate", "pre_aggregate", "methods", "attack", "byzantine", "metric")
#: the options a method may not set: they are the benchmark's axes
AXES = ("attack", "byzantine")
#: a run's status that counts as the worst (it did not reach a final value)
BROKEN = ("diverged", "failed")


def substitute(value: Any, f: int) -> Any:
    """``value`` with every spec parameter written ``f`` replaced by the number f (``nnm:f,clip:2`` at f = 3:
    ``nnm:3,clip:2``); other values unchanged."""
    if not isinstance(value, str):
        return value
    return ",".join(":".join([parts[0], *(str(f) if p.strip() == "f" else p for p in parts[1:])])
                    for parts in (link.split(":") for link in value.split(",")))


def method_name(options: dict[str, Any]) -> str:
    """A method's label: ``PRE + AGG`` for a pre-aggregated aggregation, after the method's name and its other
    options as ``key=value`` (``signsgd lr=0.01 majority``)."""
    agg = options.get("aggregate")
    pre = options.get("pre_aggregate")
    core = agg if pre in (None, "none") else f"{pre} + {agg}"
    rest = [f"{v}" if k == "method" else f"{k.replace('_', '-')}={v}" for k, v in options.items()
            if k not in ("aggregate", "pre_aggregate", "name")]
    return " ".join([*rest, *([core] if core is not None else [])]) or "base"


def _list(raw: dict[str, Any], key: str, where: str) -> list[Any]:
    v = raw[key]
    if not isinstance(v, list) or not v:
        raise InputError(f"{where}: '{key}' must be a non-empty list")
    seen: list[Any] = []
    for x in v:
        if x in seen:
            raise InputError(f"{where}: '{key}' lists {x!r} twice")
        seen.append(x)
    return v


def _parsed(key: str, value: Any, where: str) -> Any:
    from signsim.interface.config import parse_options

    return parse_options({key: value}, where)[key.replace("-", "_")]


def expand(raw: Any, base: dict[str, Any], where: str) -> tuple[dict[str, list[Any]], dict[str, Any]]:
    """The ``[robustness]`` table as one zip group (option -> list, one entry per run) and the benchmark's
    description (stored in the manifest; what ``worst_case`` reads). Method options that are also top-level
    options are taken out of ``base`` (they are the default of the methods that do not set them)."""
    where = f"{where}: [robustness]"
    if not isinstance(raw, dict):
        raise InputError(f"{where} must be a table")
    raw = {k.replace("-", "_"): v for k, v in raw.items()}
    for key in ("attack", "byzantine"):
        if key not in raw:
            raise InputError(f"{where}: '{key}' is required (a list)")
    if "aggregate" not in raw and "methods" not in raw:
        raise InputError(f"{where}: give the methods: 'aggregate' (a list, crossed with 'pre_aggregate') and/or "
                         "'methods' (a list of inline tables of run options)")
    metric = raw.get("metric", "loss")
    if not isinstance(metric, str) or metric not in METRICS:
        raise InputError(f"{where}: 'metric' {metric!r}: choose from {', '.join(METRICS)}")
    extra = [k for k in raw if k not in KEYS]
    if len(extra) > 1:
        raise InputError(f"{where}: one heterogeneity option at most, got {', '.join(extra)}")
    het = extra[0] if extra else None
    for key in [*AXES, *([het] if het else [])]:
        if key in base:
            raise InputError(f"{where}: '{key}' is both a top-level option and an axis of [robustness]; give it once")
    attacks = [_parsed("attack", a, where) for a in _list(raw, "attack", where)]
    fs = [_parsed("byzantine", f, where) for f in _list(raw, "byzantine", where)]
    levels = [_parsed(het, v, where) for v in _list(raw, het, where)] if het else [None]

    templates: list[dict[str, Any]] = []
    if "aggregate" in raw:
        pres = _list(raw, "pre_aggregate", where) if "pre_aggregate" in raw else ["none"]
        for agg in _list(raw, "aggregate", where):
            for pre in pres:
                if not isinstance(agg, str) or not isinstance(pre, str):
                    raise InputError(f"{where}: 'aggregate' and 'pre_aggregate' list strings (specs)")
                templates.append({"aggregate": agg} if pre == "none" else {"pre_aggregate": pre, "aggregate": agg})
    elif "pre_aggregate" in raw:
        raise InputError(f"{where}: 'pre_aggregate' needs 'aggregate' (the two lists are crossed)")
    methods_raw = raw.get("methods", [])
    if not isinstance(methods_raw, list) or not all(isinstance(m, dict) and m for m in methods_raw) \
            or ("methods" in raw and not methods_raw):
        raise InputError(f"{where}: 'methods' must be a non-empty list of inline tables of run options, e.g. "
                         "{ method = \"signsgd\", aggregate = \"majority\" }")
    templates += [{k.replace("-", "_"): v for k, v in m.items()} for m in methods_raw]

    methods: list[dict[str, Any]] = []
    for m in templates:
        name = m.pop("name", None)
        if name is not None and not isinstance(name, str):
            raise InputError(f"{where}: a method's 'name' must be a string")
        bad = [k for k in m if k in AXES or k == het]
        if bad:
            raise InputError(f"{where}: a method may not set '{bad[0]}', an axis of the benchmark")
        for k, v in m.items():  # each value checked as at the first f (a parameter 'f' is a number then)
            _parsed(k, substitute(v, fs[0]), f"{where}: method {name or method_name(m)}")
        label = name or method_name(m)
        if any(label == x["name"] for x in methods):
            raise InputError(f"{where}: method '{label}' is listed twice (give a 'name' to tell them apart)")
        methods.append({"name": label, "options": m})
    keys = list(dict.fromkeys(k for m in methods for k in m["options"]))
    from signsim.interface.options import RECORD

    defaults = {k: base.pop(k) for k in keys if k in base}
    for k in keys:
        missing = [m["name"] for m in methods if k not in m["options"]]
        if missing and k not in defaults:
            if RECORD[k].default is None:
                raise InputError(f"{where}: method '{missing[0]}' does not set '{k}' and the file has no top-level "
                                 f"'{k}' to default to; set it in every method or at the top level")
            defaults[k] = RECORD[k].default
    spelled = [tuple(repr(m["options"].get(k, defaults.get(k))) for k in keys) for m in methods]
    same = next((i for i, s in enumerate(spelled) if s in spelled[:i]), None)
    if same is not None:
        raise InputError(f"{where}: method '{methods[same]['name']}' runs the same options as "
                         f"'{methods[spelled.index(spelled[same])]['name']}'")

    group: dict[str, list[Any]] = {k: [] for k in [*keys, "byzantine", "attack", *([het] if het else [])]}
    for m in methods:
        for level in levels:
            for f in fs:
                for attack in attacks[:1] if f == 0 else attacks:
                    for k in keys:
                        group[k].append(_parsed(k, substitute(m["options"].get(k, defaults.get(k)), f), where))
                    group["byzantine"].append(f)
                    group["attack"].append(attack)
                    if het:
                        group[het].append(level)
    info = {"metric": metric, "worst": METRICS[metric], "methods": methods, "defaults": defaults,
            "method_keys": keys, "attacks": attacks, "byzantine": fs,
            "heterogeneity": {"option": het, "values": levels}}
    return group, info


# -------------------------------------------------------------------------------------------------------------
# the report


def _cell(v: Any) -> str:
    """A value as results.csv spells it."""
    return "" if v is None else str(v)


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


def read_rows(path: str | Path) -> list[dict[str, str]]:
    with Path(path).open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def worst_case(rows: list[dict[str, str]], info: dict[str, Any]) -> dict[str, Any]:
    """The worst-case report from results.csv's rows (``read_rows``) and the benchmark's description (the
    manifest's ``robustness``): per method and (f, heterogeneity) cell the worst final metric over the attacks
    and its attack, and per method the worst overall (the rules are the module's docstring)."""
    metric, worst = info["metric"], info["worst"]
    het, levels = info["heterogeneity"]["option"], info["heterogeneity"]["values"]
    keys, defaults = info["method_keys"], info["defaults"]
    attacks, fs = info["attacks"], info["byzantine"]
    if rows and metric not in rows[0] and any(r.get("status") in ("ok", "budget") for r in rows):
        raise InputError(f"robustness: results.csv has no column '{metric}' (the metric of [robustness]); the runs "
                         "did not record it")

    # each run: its status and final metric
    runs: dict[str, dict[str, Any]] = {}
    for r in rows:
        run = runs.setdefault(r["run_id"], {"row": r, "status": r.get("status"), "iter": None, "value": None})
        v, it = _number(r.get(metric)), _number(r.get("iter"))
        if r.get(metric, "") != "" and (run["iter"] is None or (it is not None and it >= run["iter"])):
            run["iter"], run["value"] = it, v
    # each run -> (method, f, level, attack)
    lookup: dict[tuple, tuple[int, int, int]] = {}
    for mi, m in enumerate(info["methods"]):
        for fi, f in enumerate(fs):
            spelled = tuple(_cell(substitute(m["options"].get(k, defaults.get(k)), f)) for k in keys)
            lookup[(spelled, _cell(f))] = (mi, fi, 0)
    entries: dict[tuple[int, int, int, int], list[dict[str, Any]]] = {}
    for run in runs.values():
        r = run["row"]
        hit = lookup.get((tuple(r.get(k, "") for k in keys), r.get("byzantine", "")))
        li = next((i for i, v in enumerate(levels) if het is None or _cell(v) == r.get(het, "")), None)
        ai = next((i for i, a in enumerate(attacks) if _cell(a) == r.get("attack", "")), None)
        if hit is None or li is None or ai is None:
            continue
        entries.setdefault((hit[0], hit[1], li, 0 if fs[hit[1]] == 0 else ai), []).append(run)

    def entry(runs_: list[dict[str, Any]] | None) -> dict[str, Any]:
        if not runs_:
            return {"status": "missing", "value": None}
        broken = [x["status"] for x in runs_ if x["status"] in BROKEN]
        if broken:
            return {"status": broken[0], "value": None}
        if any(x["status"] not in ("ok", "budget") for x in runs_):
            return {"status": "missing", "value": None}
        values = [x["value"] for x in runs_]
        if any(v is None or not math.isfinite(v) for v in values):
            return {"status": "diverged", "value": None}
        return {"status": "ok", "value": sum(values) / len(values), "repeats": len(values)}

    def badness(e: dict[str, Any]) -> float:
        if e["status"] in BROKEN or e["status"] == "diverged":
            return math.inf
        return e["value"] if worst == "highest" else -e["value"]

    cells, overall = [], []
    for mi, m in enumerate(info["methods"]):
        top: dict[str, Any] | None = None
        for fi, f in enumerate(fs):
            for li, level in enumerate(levels):
                names = ["none"] if f == 0 else attacks
                per = {a: entry(entries.get((mi, fi, li, ai))) for ai, a in enumerate(names)}
                counted = [(a, e) for a, e in per.items() if e["status"] != "missing"]
                pick = None
                for a, e in counted:  # strict >: ties keep the attack listed first
                    if pick is None or badness(e) > badness(pick[1]):
                        pick = (a, e)
                cell = {"method": m["name"], "byzantine": f, "heterogeneity": level,
                        "worst": pick[1]["value"] if pick else None, "attack": pick[0] if pick else None,
                        "status": pick[1]["status"] if pick else "missing", "complete": len(counted) == len(per),
                        "per_attack": {a: e["value"] if e["status"] == "ok" else e["status"] for a, e in per.items()}}
                cells.append(cell)
                if pick and (top is None or badness(pick[1]) > top["badness"]):
                    top = {"badness": badness(pick[1]), "cell": cell}
        c = top["cell"] if top else None
        overall.append({"method": m["name"], "worst": c["worst"] if c else None, "attack": c["attack"] if c else None,
                        "status": c["status"] if c else "missing", "byzantine": c["byzantine"] if c else None,
                        "heterogeneity": c["heterogeneity"] if c else None,
                        "complete": all(x["complete"] for x in cells if x["method"] == m["name"])})
    return {"metric": metric, "worst": worst, "methods": [m["name"] for m in info["methods"]], "attacks": attacks,
            "byzantine": fs, "heterogeneity": info["heterogeneity"], "cells": cells, "overall": overall}


def to_csv(report: dict[str, Any]) -> str:
    """``robustness.csv``: one row per method and cell, then one per method with ``byzantine`` and the
    heterogeneity column ``all`` (the overall worst; its cell in ``worst_byzantine``, ``worst_heterogeneity``)."""
    import io

    het = report["heterogeneity"]["option"] or "heterogeneity"
    attacks = ["none", *report["attacks"]]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    metric = report["metric"]
    w.writerow(["method", "byzantine", het, f"worst_{metric}", "attack", "status", "complete",
                "worst_byzantine", f"worst_{het}", *[f"{metric}[{a}]" for a in attacks]])
    for c in report["cells"]:
        w.writerow([c["method"], c["byzantine"], _cell(c["heterogeneity"]), _cell(c["worst"]), _cell(c["attack"]),
                    c["status"], c["complete"], "", "", *[_cell(c["per_attack"].get(a)) for a in attacks]])
    for o in report["overall"]:
        w.writerow([o["method"], "all", "all", _cell(o["worst"]), _cell(o["attack"]), o["status"], o["complete"],
                    _cell(o["byzantine"]), _cell(o["heterogeneity"]), *[""] * len(attacks)])
    return buf.getvalue()


def write(root: str | Path, report: dict[str, Any]) -> None:
    """``robustness.json`` and ``robustness.csv`` next to results.csv (atomically)."""
    from signsim.interface.results import dumps, write_atomic

    root = Path(root)
    write_atomic(root / "robustness.json", dumps({"command": "sweep-robustness", **report}) + "\n")
    write_atomic(root / "robustness.csv", to_csv(report))
