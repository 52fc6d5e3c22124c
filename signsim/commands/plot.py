"""``signsim plot RESULTS...``: a figure chosen by what it is given (issue #8).

* run results (one or more files, or a ``[[compare]]`` document): loss (or test accuracy) against
  iterations and megabytes, plus SPB fraction and ||g||_rho/||g||_1 when the runs tracked SPB; with --y/--x
  one panel of that quantity;
* a sweep directory: --y against --x, one line per value of --group-by, mean and a one-sd band over the rest;
* check-spb results: the sorted per-coordinate rho with intervals and the 1/2 line;
* diversity results: the predicted speedup against B; the replicated-data experiment: measured and
  predicted speedup against B per replication;
* bound results: the bounds against K with the run's observations, and the majority-vote noise reduction.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from signsim.errors import InputError
from signsim.render import figures
from signsim.results import read_json

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
        return "sweep", (rows, params)
    doc = read_json(path, str(path))
    kind = doc.get("command") if isinstance(doc, dict) else None
    if kind == "run" and "comparison" in doc:
        return "runs", doc["runs"]
    if kind == "run" and "history" in doc:
        return "runs", [doc]
    if kind in ("check-spb", "diversity", "diversity-replication", "bound"):
        return kind, doc
    raise InputError(f"{path}: not signsim results (command {kind!r})")


def build(paths: list[Path], x: str | None, y: str | None, group_by: str | None):
    """The figure for these results; a results file with missing or mistyped fields raises InputError."""
    try:
        return _build(paths, x, y, group_by)
    except InputError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        raise InputError(f"{paths[0]}: malformed results ({type(e).__name__}: {e})") from None


def _build(paths: list[Path], x: str | None, y: str | None, group_by: str | None):
    if x is not None and x not in figures.X_AXES and x != "workers":
        raise InputError(f"--x {x}: choose from {', '.join(figures.X_AXES)}, workers (runs that differ by M)")
    if y is not None and y not in figures.Y_AXES:
        raise InputError(f"--y {y}: choose from {', '.join(figures.Y_AXES)}")
    loaded = [load_any(p) for p in paths]
    kinds = {k for k, _ in loaded}
    if len(kinds) > 1:
        raise InputError(f"cannot plot {' and '.join(sorted(kinds))} results in one figure")
    kind = kinds.pop()
    if kind == "runs":
        docs = [d for _, ds in loaded for d in ds]
        if y is None and x is None:
            return figures.runs_overview(docs)
        if x == "workers":
            return figures.majority_from_docs(docs, y or "loss")
        return figures.convergence(docs, x or "iter", y or "loss")
    if len(loaded) > 1:
        raise InputError(f"{kind} results: give one file")
    _, data = loaded[0]
    if x == "workers":
        raise InputError("--x workers: applies to run results only")
    if kind == "sweep":
        rows, params = data
        return figures.sweep_lines(rows, params, group_by, x or "iter", y or "loss")
    if kind == "check-spb":
        return figures.rho_sorted(data)
    if kind == "diversity":
        return figures.speedup_predicted(data)
    if kind == "diversity-replication":
        return figures.speedup_measured(data)
    return figures.bound_overview(data)


def plot(paths: list[Path], out: Path, x: str | None = None, y: str | None = None,
         group_by: str | None = None) -> Path:
    if out.suffix.lower() not in FORMATS:
        raise InputError(f"--out {out}: use a .png, .pdf or .svg file name")
    figures.save(build(paths, x, y, group_by), out)
    return out
