"""The sweep's output directory: one JSON per run (``runs/<run id>.json``), a long-format ``results.csv``
(one row per run and recorded iteration, every varying option a column) and ``manifest.json``.
Every file is written atomically; a run counts as finished when its file holds status ok, diverged or budget."""

from __future__ import annotations

import csv
import io
import subprocess
from pathlib import Path
from typing import Any

from signsim import __version__
from signsim.errors import InputError
from signsim.history import CSV_FIELDS
from signsim.interface.results import dumps, read_json, write_atomic

FINISHED = ("ok", "diverged", "budget")


def complete(doc: Any) -> str | None:
    """Why ``doc`` is not a run's results document (None when it is one)."""
    if not isinstance(doc, dict):
        return f"holds a JSON {type(doc).__name__}, not a results document"
    status = doc.get("status")
    if status not in (*FINISHED, "interrupted", "failed"):
        return f"unknown status {status!r}"
    if status == "failed":
        return None if isinstance(doc.get("error"), str) else "a failed run without its error"
    if not isinstance(doc.get("config"), dict) or not isinstance(doc.get("final"), dict) \
            or not isinstance(doc.get("history"), list) or not all(isinstance(r, dict) for r in doc["history"]):
        return f"status {status!r} but no complete results (config, history, final)"
    return None


class Store:
    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.runs = self.root / "runs"
        self.warnings: list[str] = []  # run files that were found damaged or incomplete (they are rerun)
        self._warned: set[str] = set()

    def check(self, run_ids: list[str]) -> None:
        """Before any run: every file the sweep will write is a regular file or absent, and ``runs`` a directory
        or absent (a FIFO, a device, a directory where a file belongs, a file where ``runs`` belongs: InputError
        naming it, nothing run, nothing removed)."""
        import os
        import stat

        from signsim.paths import kind

        def what(p: Path) -> int | None:
            try:
                return os.stat(p).st_mode
            except FileNotFoundError:
                return None
            except OSError as e:
                raise InputError(f"sweep directory {self.root}: {p.name}: cannot use it ({e.strerror})") from None

        mode = what(self.runs)
        if mode is not None and not stat.S_ISDIR(mode):
            what_ = "a regular file" if stat.S_ISREG(mode) else kind(mode)
            raise InputError(f"sweep directory {self.root}: {self.runs} is {what_}, where the sweep keeps its "
                             "run files (a directory); move it away or choose another --out")
        for p in [self.root / "results.csv", self.root / "manifest.json",
                  *([self.path(r) for r in run_ids] if mode is not None else [])]:
            m = what(p)
            if m is not None and not stat.S_ISREG(m):
                raise InputError(f"sweep directory {self.root}: {p} is {kind(m)}, not a regular file; remove it or "
                                 "choose another --out")

    def path(self, run_id: str) -> Path:
        return self.runs / f"{run_id}.json"

    def _warn(self, run_id: str, what: str) -> None:
        if run_id not in self._warned:
            self._warned.add(run_id)
            self.warnings.append(f"{self.path(run_id)}: {what}; the run is done again")

    def load(self, run_id: str) -> dict[str, Any] | None:
        """The run's results document, or None when there is none or it is not a results document (damaged,
        not a JSON object, or finished-looking but incomplete: such a run is rerun, with a warning)."""
        p = self.path(run_id)
        if not p.is_file():
            return None
        try:
            doc = read_json(p, str(p), per_byte=0)  # (a run's own file: a memory check would make it "damaged")
        except InputError as e:  # the reason, without the file name the warning starts with
            self._warn(run_id, str(e).removeprefix(f"{p}: "))
            return None
        problem = complete(doc)
        if problem:
            self._warn(run_id, problem)
            return None
        return doc

    def finished(self, run_id: str) -> bool:
        doc = self.load(run_id)
        return doc is not None and doc.get("status") in FINISHED

    def write_run(self, task: dict[str, Any], doc: dict[str, Any]) -> None:
        doc = {**doc, "sweep": {"index": task["index"], "run_id": task["run_id"], "params": task["params"]}}
        write_atomic(self.path(task["run_id"]), dumps(doc) + "\n")

    def write_csv(self, tasks: list[dict[str, Any]], parameters: list[str]) -> None:
        """One row per run and recorded iteration: the run's varying options, then every other option of its
        config, then the history columns, then every tracked value (``spb.rho_min``, ``diversity.B_S``, ...)
        on the rows of the iterations where it was recorded."""
        docs = [self.load(t["run_id"]) for t in tasks]
        parameters = [p for p in parameters if p != "seed"]  # (a grid over seeds: the seed column says it once)
        present = [c for c in CSV_FIELDS if any(c in row for d in docs if d for row in d.get("history", []))]
        options = sorted({k for t in tasks for k in t["config"]} - set(parameters) - {"seed"})
        tracked: list[str] = []
        for d in docs:
            for name, rows in ((d or {}).get("tracks") or {}).items():
                for row in rows if isinstance(rows, list) else []:
                    for key, value in row.items() if isinstance(row, dict) else []:
                        col = f"{name}.{key}"
                        if key != "iter" and col not in tracked and not isinstance(value, dict | list):
                            tracked.append(col)
        header = ["run_id", "index", "status", *parameters, "seed", "repeat", *options, *present, *tracked]
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(header)
        for t, d in zip(tasks, docs, strict=True):
            if d is None:
                continue
            lead = [t["run_id"], t["index"], d.get("status"), *[t["params"].get(p) for p in parameters],
                    t["config"].get("seed"), t["params"].get("repeat"),
                    *["" if t["config"].get(o) is None else t["config"].get(o) for o in options]]
            rows: dict[Any, dict[str, Any]] = {}
            for row in d.get("history") or []:
                rows.setdefault(row.get("iter"), {}).update(row)
            for name, track in (d.get("tracks") or {}).items():
                for row in track if isinstance(track, list) else []:
                    if isinstance(row, dict):
                        rows.setdefault(row.get("iter"), {"iter": row.get("iter")}).update(
                            {f"{name}.{k}": v for k, v in row.items() if k != "iter"})
            ordered = [rows[k] for k in sorted(rows, key=lambda k: (k is None, k if k is not None else 0))] or [{}]
            for row in ordered:
                w.writerow(lead + ["" if row.get(c) is None else row.get(c) for c in [*present, *tracked]])
        write_atomic(self.root / "results.csv", buf.getvalue())

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        write_atomic(self.root / "manifest.json", dumps(manifest) + "\n")


def git_revision() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def manifest(spec, tasks: list[dict[str, Any]], executor: dict[str, Any], statuses: dict[str, str]) -> dict:
    from signsim.sweep.spec import repeat_seeds

    return {
        "signsim_version": __version__, "command": "sweep", "sweep_file": spec.path, "base": spec.base,
        "grid": spec.grid, "zip": spec.zips, **({"robustness": spec.robustness} if spec.robustness else {}),
        "repeats": spec.repeats, "seed": spec.seed,
        "seeds": repeat_seeds(spec.seed, spec.repeats), "git_revision": git_revision(), "executor": executor,
        "runs": [{"index": t["index"], "run_id": t["run_id"], "params": t["params"],
                  "status": statuses.get(t["run_id"], "missing")} for t in tasks],
    }
