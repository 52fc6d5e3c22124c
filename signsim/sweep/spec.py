"""The sweep file and its expansion into runs.

A sweep file is a run config (top-level option keys, the base of every run) plus:

* ``[grid]``: option -> list of values; every combination is run;
* ``[[zip]]``: groups of options whose lists (of equal length) vary together, combined with the grid;
* ``[robustness]``: a worst-case benchmark (``signsim.sweep.robustness``), expanded into one ``[[zip]]`` group;
* ``repeats = R``: each combination runs R times with seeds derived from the sweep's ``seed`` by
  ``SeedSequence(seed).spawn(R)`` (repeat r gets the same seed at every grid point: common random numbers).
  Put ``seed`` in the grid instead to choose seeds by hand (then repeats must be 1).

A run's id is a stable hash of its resolved config, so the same run keeps its file across reruns.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from signsim.errors import InputError


@dataclass
class SweepSpec:
    base: dict[str, Any]
    grid: dict[str, list[Any]]
    zips: list[dict[str, list[Any]]]
    repeats: int
    seed: int
    path: str = ""
    robustness: dict[str, Any] | None = None  # the [robustness] table's benchmark (sweep/robustness.py)

    @property
    def parameters(self) -> list[str]:
        """The options that vary, in a stable order: grid keys, then zip keys (seed and repeat are added by
        the results table)."""
        return list(self.grid) + [k for z in self.zips for k in z]


@dataclass
class RunTask:
    index: int
    run_id: str
    params: dict[str, Any]  # the varying options, plus repeat
    config: dict[str, Any]  # every resolved option
    error: str | None = None  # the config itself is invalid: the run fails without running
    extra: dict[str, Any] = field(default_factory=dict)


#: the most runs one sweep file may expand to (each run is a file and a row group of results.csv)
MAX_RUNS = 100_000


def _values(raw: Any, key: str, where: str) -> list[Any]:
    if not isinstance(raw, list) or not raw:
        raise InputError(f"{where}: '{key}' must be a non-empty list of values")
    return raw


def _distinct(values: list, where: str) -> None:
    """The values of a grid key (or a zip group's tuples) are distinct: a repeated one would run twice into one
    run's file (the same run id), to be averaged with itself; one line naming it."""
    seen: list = []
    for v in values:
        if v in seen:
            raise InputError(f"{where}: {v!r} is listed twice; use 'repeats' for several seeds")
        seen.append(v)


def load(path: str | Path) -> SweepSpec:
    from signsim.interface.config import parse_options, read_toml

    p = Path(path)
    where = f"sweep file {p}"
    raw = read_toml(p, where)
    grid_raw = raw.pop("grid", {})
    zip_raw = raw.pop("zip", [])
    robust_raw = raw.pop("robustness", None)
    if robust_raw is not None and (grid_raw or zip_raw):
        raise InputError(f"{where}: [robustness] is the sweep's only axis here; drop [grid] and [[zip]] (the "
                         "benchmark does not select hyperparameters: run one file per setting)")
    repeats = raw.pop("repeats", 1)
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
        raise InputError(f"{where}: 'repeats' must be a positive integer")
    if repeats > MAX_RUNS:
        raise InputError(f"{where}: 'repeats' {repeats}: at most {MAX_RUNS} runs per sweep")
    if not isinstance(grid_raw, dict):
        raise InputError(f"{where}: [grid] must be a table of lists")
    if isinstance(zip_raw, dict):
        zip_raw = [zip_raw]
    if not isinstance(zip_raw, list) or not all(isinstance(z, dict) for z in zip_raw):
        raise InputError(f"{where}: [[zip]] must be tables of lists")
    base = parse_options(raw, where)
    base.pop("compare", None)
    grid = {}
    for key, values in grid_raw.items():
        name = key.replace("-", "_")
        if name in grid:
            raise InputError(f"{where}: [grid]: '{key}' is given twice (as - and as _); give it once")
        grid[name] = [parse_options({key: v}, f"{where}: [grid]")[name]
                      for v in _values(values, key, f"{where}: [grid]")]
        _distinct(grid[name], f"{where}: [grid] {key}")
    zips = []
    for i, z in enumerate(zip_raw, start=1):
        group = {}
        for key, values in z.items():
            name = key.replace("-", "_")
            if name in group:
                raise InputError(f"{where}: [[zip]] #{i}: '{key}' is given twice (as - and as _); give it once")
            group[name] = [parse_options({key: v}, f"{where}: [[zip]] #{i}")[name]
                           for v in _values(values, key, f"{where}: [[zip]] #{i}")]
        lengths = {len(v) for v in group.values()}
        if len(lengths) > 1:
            raise InputError(f"{where}: [[zip]] #{i}: lists must have equal lengths, got {sorted(lengths)}")
        _distinct(list(zip(*group.values(), strict=True)), f"{where}: [[zip]] #{i}")
        zips.append(group)
    robustness = None
    if robust_raw is not None:
        from signsim.sweep import robustness as robust

        group, robustness = robust.expand(robust_raw, base, where)
        zips.append(group)
    keys = list(grid) + [k for z in zips for k in z]
    dup = {k for k in keys if keys.count(k) > 1}
    if dup:
        raise InputError(f"{where}: option '{sorted(dup)[0]}' varies in more than one place")
    both = sorted(set(keys) & set(base))
    if both:  # the grid would silently override the file's value
        raise InputError(f"{where}: '{both[0]}' is both a top-level option and varied by [grid] or [[zip]]; give it "
                         "once")
    if "seed" in keys and repeats > 1:
        raise InputError(f"{where}: 'seed' varies in the grid, so 'repeats' must be 1")
    seed = base.pop("seed", 0)
    runs = repeats
    for values in grid.values():
        runs *= len(values)
    for z in zips:
        runs *= len(next(iter(z.values()))) if z else 1
    if runs > MAX_RUNS:
        raise InputError(f"{where}: expands to {runs} runs (at most {MAX_RUNS}); reduce 'repeats' or the grid")
    return SweepSpec(base, grid, zips, repeats, seed, str(p), robustness)


def run_id(config: dict[str, Any]) -> str:
    """Stable id: sha256 of the canonical JSON of the resolved config, without the options declared ``omit_unset``
    that are at their default (added after sweeps recorded ids without them)."""
    from signsim.interface.options import OMIT_UNSET

    text = json.dumps({k: v for k, v in config.items() if not (k in OMIT_UNSET and v == OMIT_UNSET[k])},
                      sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def repeat_seeds(seed: int, repeats: int) -> list[int]:
    return [int(s.generate_state(1, dtype=np.uint32)[0]) for s in np.random.SeedSequence(seed).spawn(repeats)]


def expand(spec: SweepSpec) -> list[RunTask]:
    """Every run of the sweep, in a fixed order (grid product, then zip groups, then repeats)."""
    from signsim.interface.config import THEORY, lr_theory, resolve

    grid_items = [[(k, v) for v in vals] for k, vals in spec.grid.items()]
    zip_items = [[tuple(zip(z.keys(), combo, strict=True)) for combo in zip(*z.values(), strict=True)]
                 for z in spec.zips]
    seeds = repeat_seeds(spec.seed, spec.repeats)
    tasks = []
    for combo in itertools.product(*grid_items, *zip_items):
        params: dict[str, Any] = {}
        for item in combo:
            if item and isinstance(item[0], tuple):
                params.update(dict(item))
            else:
                params[item[0]] = item[1]
        resolved = None  # the point's options resolved once: its repeats differ in their seed only
        for r in range(spec.repeats):
            run_params = dict(params)
            if "seed" not in run_params:
                run_params["seed"] = seeds[r]
            run_params["repeat"] = r
            options = {**spec.base, **{k: v for k, v in run_params.items() if k != "repeat"}}
            theory = None
            try:
                if resolved is None or "seed" in params or options.get("lr") == THEORY:
                    # (--lr theory again for every seed: a random split, and so the L_m, may change with it)
                    cfg = resolve(options)
                    config = resolved = cfg.to_dict()
                    theory = lr_theory(cfg)
                else:  # (a repeat's seed, drawn by repeat_seeds, is a valid --seed: nothing else changes)
                    config = {**resolved, "seed": run_params["seed"]}
            except InputError as e:
                point = ", ".join(f"{k} = {v!r}" for k, v in run_params.items() if k not in ("seed", "repeat")
                                  or k == "seed" and "seed" in params)
                raise InputError(f"sweep file {spec.path}: run {len(tasks)} ({point or 'the base options'}): {e}") \
                    from None
            # the history's --eval-every, when not given, is derived again by the run (by its budget, if any)
            extra = {} if "eval_every" in options else {"eval_every_derived": True}
            if theory is not None:  # the run records where its lr came from (``config.mark_lr_theory``)
                extra["lr_theory"] = theory
            tasks.append(RunTask(len(tasks), run_id(config), run_params, config, extra=extra))
    return tasks
