"""``signsim sweep FILE``: expand a grid, run what is not finished yet, keep tidy results (issue #7)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

from signsim import __version__


def plan(path: str | Path, plugin: str | None = None) -> tuple[Any, list[dict[str, Any]]]:
    """The sweep file's spec and its runs; ``plugin`` (``--plugin``) joins every run's own plugins."""
    from signsim.sweep.spec import expand, load

    spec = load(path)
    if plugin:
        spec.base["plugin"] = ",".join(p for p in (spec.base.get("plugin"), plugin) if p)
    return spec, [_as_dict(t) for t in expand(spec)]


def _as_dict(task) -> dict[str, Any]:
    """A ``RunTask`` as a dict, its fields as they are (``dataclasses.asdict`` deep-copies every config: most of
    the time of a 100,000-run plan); each task's dicts are its own already."""
    return {f.name: getattr(task, f.name) for f in fields(task)}


#: run options that no problem reads (nor its dimension): runs that differ only in these share one problem
#: instance when their options are checked before a sweep starts
NOT_PROBLEM_OPTIONS = frozenset({
    "method", "aggregate", "batch_size", "iters", "lr", "lr_schedule", "momentum", "byzantine", "attack",
    "sign_zero", "tie", "eval_every", "seed", "stop_loss", "track_spb", "track_diversity", "monotone",
    "compressor", "error_feedback", "momentum2", "weight_decay", "votes", "noise_scales",
})


def check_runs(spec, tasks: list[dict[str, Any]]) -> None:
    """Before the first run starts: every run's options checked as the run itself checks them before it
    allocates anything (``signsim.engine.build.prepare``: the stages against the dimension, the noise scales, the
    binomial votes, the data), so that an invalid run exits 2 naming it and its grid values instead of failing
    among the others. One problem instance per distinct problem options. A run whose memory estimate exceeds
    the memory available is left to its turn, where it is recorded as failed (docs/reference.md)."""
    from signsim.engine.build import prepare
    from signsim.errors import InputError, MemoryLimit
    from signsim.interface.config import resolve

    built: dict[str, Any] = {}
    checked: set[str] = set()
    for t in tasks:
        # the run's grid point: its repeats' configs differ in the seed only, which changes no check
        same = repr(sorted((k, v) for k, v in t["params"].items() if k not in ("seed", "repeat")))
        if same in checked:
            continue
        checked.add(same)
        cfg = resolve(t["config"])
        key = repr(sorted((k, v) for k, v in t["config"].items() if k not in NOT_PROBLEM_OPTIONS))
        try:
            _, built[key], _, _, settings = prepare(cfg, built.get(key))
            if spec.robustness is not None:
                recordable(spec.robustness["metric"], settings, built[key])
        except MemoryLimit:
            continue
        except InputError as e:
            point = ", ".join(f"{k} = {v!r}" for k, v in t["params"].items() if k not in ("seed", "repeat"))
            raise InputError(f"sweep file {spec.path}: run {t['index']} ({point or 'the base options'}): {e}") \
                from None


def recordable(metric: str, settings, problem) -> None:
    """InputError when a run with ``settings`` (its stages, ``signsim.engine.driver.Settings``) on ``problem`` does
    not record the ``[robustness]`` metric in its history (the accuracies: a classifier; the test loss: a data
    problem), found before the first run rather than after the last (``signsim.history``: which runs record which
    column)."""
    from signsim import history
    from signsim.errors import InputError

    fields = {c.field for c in history.recorded(settings.error_feedback.module.TRACK_ERROR, problem.classifier,
                                                problem.finite_sum is not None)}
    if metric not in fields:
        raise InputError(f"[robustness] metric '{metric}': a run on the problem '{problem.name}' does not record it "
                         f"(it records {', '.join(sorted(fields & {'loss', 'train_acc', 'test_acc', 'test_loss'}))})")


def summarize(spec, tasks: list[dict[str, Any]], docs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Final loss per grid point (mean and std over repeats) and the best point per method."""
    from signsim.sweep.store import FINISHED

    groups: dict[tuple, list[float]] = defaultdict(list)
    targets: dict[tuple, list[dict[str, Any]]] = defaultdict(list)  # the runs' --target reports (§14.4)
    statuses: dict[str, int] = defaultdict(int)
    for t in tasks:
        d = docs.get(t["run_id"])
        status = d.get("status", "missing") if d else "missing"
        statuses[status] += 1
        key = tuple((k, t["params"][k]) for k in spec.parameters if k != "seed")
        # only finished runs count: an interrupted run's last loss is not its final loss
        loss = d.get("final", {}).get("loss") if d and status in FINISHED else None
        groups[key].append(np.nan if loss is None else float(loss))
        if d and d.get("target") is not None and status in FINISHED:
            targets[key].append(d["target"])
    rows = []
    for key, losses in groups.items():
        arr = np.array(losses, dtype=float)
        ok = arr[np.isfinite(arr)]
        params = dict(key)
        rows.append({"params": params, "method": params.get("method", spec.base.get("method", "ssdm")),
                     "runs": len(arr), "finite": int(ok.size),
                     "mean_final_loss": float(ok.mean()) if ok.size else None,
                     "std_final_loss": float(ok.std(ddof=1)) if ok.size > 1 else (0.0 if ok.size else None),
                     **target_summary(targets.get(key))})
    best: dict[str, dict[str, Any]] = {}
    for r in rows:
        m = r["method"]
        if r["mean_final_loss"] is not None and (m not in best or r["mean_final_loss"] < best[m]["mean_final_loss"]):
            best[m] = r
    return {"statuses": dict(statuses), "groups": rows, "best_per_method": best,
            "best_per_configuration": per_configuration(spec, rows)}


def target_summary(reports: list[dict[str, Any]] | None) -> dict[str, Any]:
    """A grid point's runs to their ``--target`` (docs/theory.md §14.4): how many reached it, and the mean over those
    of the simulated time (None without a clock) and of the bits up + down at the first row that reached it; {}
    when its runs had no target."""
    if not reports:
        return {}
    hit = [r for r in reports if r.get("reached")]
    times = [r["time"] for r in hit if r.get("time") is not None]
    return {"target_reached": len(hit),
            "mean_target_time": float(np.mean(times)) if times and len(times) == len(hit) else None,
            "mean_target_bits": float(np.mean([r["bits_up"] + r["bits_down"] for r in hit])) if hit else None}


#: options a sweep tunes rather than compares: the summary keeps the best of their values per configuration
TUNED = ("lr", "local_lr", "server_lr", "lr_schedule", "momentum", "momentum2", "weight_decay")


def per_configuration(spec, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per configuration: the method and every varying option that is not tuned (``TUNED``: step sizes,
    momentum, weight decay), each with its best grid point over the tuned options (lowest mean final loss; a
    configuration none of whose points has a finite loss keeps its first point). In the grid's order."""
    keys = [k for k in spec.parameters if k not in TUNED and k not in ("seed", "method")]
    best: dict[tuple, dict[str, Any]] = {}
    for r in rows:
        config = (r["method"], *(repr(r["params"].get(k)) for k in keys))
        tuned = {k: v for k, v in r["params"].items() if k in TUNED}
        entry = {"method": r["method"], "configuration": {k: r["params"].get(k) for k in keys}, "tuned": tuned,
                 **{k: r[k] for k in ("runs", "finite", "mean_final_loss", "std_final_loss", "target_reached",
                                      "mean_target_time", "mean_target_bits") if k in r}}
        old = best.get(config)
        if old is None or (r["mean_final_loss"] is not None and (old["mean_final_loss"] is None
                                                                 or r["mean_final_loss"] < old["mean_final_loss"])):
            best[config] = entry
    return list(best.values())


def robustness_report(info: dict[str, Any], out: str | Path) -> dict[str, Any]:
    """The worst-case report of a ``[robustness]`` sweep, computed from its results.csv and written next to it
    (robustness.json, robustness.csv)."""
    from signsim.interface import interrupts
    from signsim.sweep import robustness

    report = robustness.worst_case(robustness.read_rows(Path(out) / "results.csv"), info)
    with interrupts.deferred():
        robustness.write(out, report)
    return report


def sweep(path: str | Path, out: str | Path, executor, progress: Callable[[int, int], None] | None = None,
          log: Callable[[str], None] | None = None, plugin: str | None = None) -> dict[str, Any]:
    from signsim.commands.run import run
    from signsim.interface import interrupts
    from signsim.sweep.executors import ExecutorStopped
    from signsim.sweep.store import Store, manifest

    spec, tasks = plan(path, plugin)
    store = Store(out)
    store.check([t["run_id"] for t in tasks])
    todo = [t for t in tasks if not store.finished(t["run_id"])]
    check_runs(spec, todo)
    if log:
        for w in store.warnings:
            log(f"warning: {w}")
    skipped = len(tasks) - len(todo)
    done = 0
    interrupted = False
    stopped = None
    if progress:
        progress(skipped, len(tasks))
    by_index = {t["index"]: t for t in tasks}
    try:
        try:
            if todo:
                for index, doc in executor.run(todo, run):
                    task = by_index[index]
                    with interrupts.deferred():
                        store.write_run(task, doc)
                    done += 1
                    if log and doc.get("status") == "failed":
                        log(f"run {task['index']} ({task['run_id']}) failed: {doc.get('error')}")
                    if progress:
                        progress(skipped + done, len(tasks))
        except ExecutorStopped as e:  # what finished is stored already; the rest stays missing
            stopped = str(e)
            executor.close()
        except KeyboardInterrupt:
            interrupts.acknowledge()
            interrupted = True
            try:  # the running runs' partial results, status interrupted
                for index, doc in executor.drain():
                    with interrupts.deferred():
                        store.write_run(by_index[index], doc)
                    done += 1
            except KeyboardInterrupt:  # a second Ctrl-C: stop waiting, still write the tables below
                interrupts.acknowledge()
                executor.close(kill=True)
    finally:
        with interrupts.deferred():  # results.csv and manifest.json are written on every exit path
            docs = {t["run_id"]: d for t in tasks if (d := store.load(t["run_id"])) is not None}
            statuses = {rid: d.get("status", "missing") for rid, d in docs.items()}
            store.write_csv([t for t in tasks if t["run_id"] in docs], spec.parameters)
            store.write_manifest(manifest(spec, tasks, executor.describe(), statuses))
    summary = summarize(spec, tasks, docs)
    if spec.robustness:
        summary["robustness"] = robustness_report(spec.robustness, out)
    return {"signsim_version": __version__, "command": "sweep", "out": str(out), "runs": len(tasks),
            "skipped": skipped, "ran": done, "interrupted": interrupted, "stopped": stopped, **summary}
