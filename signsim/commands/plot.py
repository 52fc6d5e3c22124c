"""``signsim plot RESULTS...``: a figure chosen by what it is given (issue #8).

* run results (one or more files, or a ``[[compare]]`` document): loss (or test accuracy) against
  iterations and megabytes, plus SPB fraction and E<g, sign g_hat>/||g||_1 when the runs tracked SPB; with
  --y/--x one panel of that quantity;
* a ``[robustness]`` sweep directory without --x, --y, --group-by, --where or --facet: the worst-case heatmap
  (f x heterogeneity, one panel per method; ``signsim.sweep.robustness``);
* a sweep directory: --y against --x, one line per value of --group-by, mean and a one-sd band over the rest
  (named in the title); ``--where KEY=VALUE`` keeps matching runs first, ``--facet KEY`` one panel per value;
* check-spb results: the sorted per-coordinate rho with intervals and the 1/2 line;
* diversity results: the predicted speedup against B; the replicated-data experiment: measured and
  predicted speedup against B per replication;
* bound results: the bounds against K with the run's observations, and the majority-vote noise reduction.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Any

from signsim.errors import InputError
from signsim.interface.results import read_json
from signsim.render import figures

FORMATS = {".png", ".pdf", ".svg"}


def load_any(path: Path) -> tuple[str, Any]:
    if path.is_dir():
        manifest, table = path / "manifest.json", path / "results.csv"
        if not (manifest.is_file() and table.is_file()):
            raise InputError(f"{path}: a directory but not a sweep (no manifest.json and results.csv)")
        m = read_json(manifest, str(manifest))
        with table.open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        params = list(m.get("grid", {})) + [k for z in m.get("zip", []) for k in z]
        if isinstance(m, dict) and isinstance(m.get("robustness"), dict):
            return "robustness", (rows, params, m["robustness"])
        return "sweep", (rows, params)
    return classify(read_json(path, str(path)), str(path))


def classify(doc: Any, name: str) -> tuple[str, Any]:
    """(kind, what the figure builders take) for one results document."""
    kind = doc.get("command") if isinstance(doc, dict) else None
    if kind == "run" and "comparison" in doc:
        return "runs", doc["runs"]
    if kind == "run" and "history" in doc:
        return "runs", [doc]
    if kind in ("check-spb", "diversity", "diversity-replication", "diversity-dimension", "diversity-heuristics",
                "diversity-stability", "diversity-conflicts", "diversity-lower-bound", "bound"):
        return kind, doc
    raise InputError(f"{name}: not signsim results (command {kind!r})")


def build(paths: list[Path], x: str | None, y: str | None, group_by: str | None, where: list[str] | None = None,
          facet: str | None = None, warn: Callable[[str], None] | None = None):
    """The figure for these results; a results file with missing or mistyped fields raises InputError.
    Things the figure does that the user may not expect (runs of different problems on one axis, averaging
    over problems) are reported to ``warn``."""
    try:
        return _build(paths, x, y, group_by, where or [], facet, warn or (lambda message: None))
    except InputError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        raise InputError(f"{paths[0]}: malformed results ({type(e).__name__}: {e})") from None


def _lacking(named: list[tuple[str, dict[str, Any]]], y: str) -> None:
    """--y that some runs do not hold: exit 2 naming those results and what they do hold."""
    missing = [(name, d) for name, d in named if y not in figures.available_y(d)]
    if not missing:
        return
    label = figures.Y_AXES[y][2]
    names = ", ".join(name for name, _ in missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3
                                                          else "")
    have = figures.available_y(missing[0][1])
    source, field = figures.Y_AXES[y][0], figures.Y_AXES[y][1]
    hint = " (track it with --track-spb / --track-diversity)" if source != "history" else ""
    rows = (missing[0][1].get("tracks") or {}).get(source) if source != "history" else None
    if rows and isinstance(rows, list) and all(isinstance(r, dict) and r.get(field) is None for r in rows):
        notes = [r["note"] for r in rows if r.get("note")]
        hint = f" (it was tracked, but every value is null{': ' + notes[0] if notes else ''})"
    raise InputError(f"--y {y}: {names} hold{'s' if len(missing) == 1 else ''} no {label}{hint}; "
                     f"{missing[0][0]} has: {', '.join(have) or 'nothing to plot'}")


def _build(paths: list[Path], x: str | None, y: str | None, group_by: str | None, where: list[str],
           facet: str | None, warn: Callable[[str], None]):
    return figure([load_any(p) for p in paths], [str(p) for p in paths], x, y, group_by, where, facet, warn)


def _check_axes(x: str | None, y: str | None, sweep: bool = False) -> None:
    if x is not None and x not in figures.X_AXES and x not in figures.FINAL_AXES and not sweep:
        raise InputError(f"--x {x}: choose from {', '.join(figures.X_AXES)}, {', '.join(figures.FINAL_AXES)} "
                         "(runs that differ by that option: their final values; for a sweep directory also an "
                         "option it varies)")
    if y is not None and y not in figures.Y_AXES:
        raise InputError(f"--y {y}: choose from {', '.join(figures.Y_AXES)}")


def figure(loaded: list[tuple[str, Any]], names: list[str], x: str | None = None, y: str | None = None,
           group_by: str | None = None, where: list[str] | None = None, facet: str | None = None,
           warn: Callable[[str], None] | None = None):
    """The figure for results already loaded (``load_any`` or ``classify``), each named for messages."""
    where = where or []
    warn = warn or (lambda message: None)
    if any(k == "robustness" for k, _ in loaded):
        if len(loaded) == 1 and x is None and y is None and not group_by and not where and not facet:
            from signsim.sweep.robustness import worst_case

            rows, _, info = loaded[0][1]
            return figures.robustness_heatmap(worst_case(rows, info), figures.sweep_subject(rows))
        # with --x, --y, --group-by, --where or --facet: the sweep's ordinary figures
        loaded = [("sweep", d[:2]) if k == "robustness" else (k, d) for k, d in loaded]
    kinds = {k for k, _ in loaded}
    _check_axes(x, y, sweep=kinds == {"sweep"})
    if len(kinds) > 1:
        raise InputError(f"cannot plot {' and '.join(sorted(kinds))} results in one figure")
    kind = kinds.pop()
    if kind != "sweep":
        for option, value in (("--group-by", group_by), ("--where", where), ("--facet", facet)):
            if value:
                raise InputError(f"{option}: applies to a sweep directory, not to {kind} results")
    if kind == "runs":
        named = [(p if len(ds) == 1 else f"{p} [{d.get('label', i + 1)}]", d)
                 for p, (_, ds) in zip(names, loaded, strict=True) for i, d in enumerate(ds)]
        docs = [d for _, d in named]
        if y is not None:
            _lacking(named, y)
        mixed = figures.mixed_problems_warning(docs)
        if mixed:
            warn(mixed)
        if y is None and x is None:
            return figures.runs_overview(docs)
        if x in figures.FINAL_AXES:
            return figures.final_against(docs, x, y or "loss")
        return figures.convergence(docs, x or "iter", y or "loss")
    if len(loaded) > 1:
        raise InputError(f"{kind} results: give one file")
    _, data = loaded[0]
    if x in figures.FINAL_AXES and kind != "sweep":
        raise InputError(f"--x {x}: applies to run results only")
    if kind == "sweep":
        rows, params = data
        if x is not None and x not in figures.X_AXES:
            if facet:
                raise InputError(f"--facet {facet}: not with --x {x} (a final-value figure has one panel)")
            return figures.sweep_final(rows, params, x, group_by, y or "loss", where, f"the sweep {names[0]}")
        return figures.sweep_lines(rows, params, group_by, x or "iter", y or "loss", where, facet,
                                   f"the sweep {names[0]}", warn)
    if y is not None or x is not None:
        raise InputError(f"--x/--y: apply to run and sweep results; {names[0]} holds {kind} results, which have "
                         "one figure")
    if kind == "check-spb":
        return figures.rho_sorted(data)
    if kind == "diversity":
        return figures.speedup_predicted(data)
    if kind == "diversity-replication":
        return figures.speedup_measured(data)
    if kind == "diversity-dimension":
        return figures.diversity_dimension(data)
    if kind == "diversity-heuristics":
        return figures.diversity_heuristics(data)
    if kind == "diversity-stability":
        from signsim.render import batch_figures

        return batch_figures.stability_figure(data)
    if kind == "diversity-conflicts":
        from signsim.render import batch_figures

        return batch_figures.conflicts_figure(data)
    if kind == "diversity-lower-bound":
        from signsim.render import batch_figures

        return batch_figures.lower_bound_figure(data)
    return figures.bound_overview(data)


def plot(paths: list[Path], out: Path, x: str | None = None, y: str | None = None, group_by: str | None = None,
         where: list[str] | None = None, facet: str | None = None,
         warn: Callable[[str], None] | None = None) -> Path:
    if out.suffix.lower() not in FORMATS:
        raise InputError(f"--out {out}: use a .png, .pdf or .svg file name")
    figures.save(build(paths, x, y, group_by, where, facet, warn), out)
    return out
