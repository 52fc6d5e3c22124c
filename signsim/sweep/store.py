"""The sweep's output directory: one JSON per run (``runs/<run id>.json``), a long-format ``results.csv``
(one row per run and recorded iteration, every varying option a column) and ``manifest.json``.
Every file is written atomically; a run counts as finished when its file holds status ok or diverged."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path
from typing import Any

from signsim import __version__
from signsim.results import dumps, write_atomic

FINISHED = ("ok", "diverged")
HISTORY_COLUMNS = ["iter", "loss", "grad_norm", "grad_norm_l1", "distance", "bits_up", "bits_down", "train_acc",
                   "test_acc", "ef_error_norm"]


class Store:
    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.runs = self.root / "runs"

    def path(self, run_id: str) -> Path:
        return self.runs / f"{run_id}.json"

    def load(self, run_id: str) -> dict[str, Any] | None:
        p = self.path(run_id)
        if not p.is_file():
            return None
        try:
            return json.loads(p.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None  # a damaged file counts as not finished

    def finished(self, run_id: str) -> bool:
        doc = self.load(run_id)
        return doc is not None and doc.get("status") in FINISHED

    def write_run(self, task: dict[str, Any], doc: dict[str, Any]) -> None:
        doc = {**doc, "sweep": {"index": task["index"], "run_id": task["run_id"], "params": task["params"]}}
        write_atomic(self.path(task["run_id"]), dumps(doc) + "\n")

    def write_csv(self, tasks: list[dict[str, Any]], parameters: list[str]) -> None:
        docs = [self.load(t["run_id"]) for t in tasks]
        present = [c for c in HISTORY_COLUMNS if any(c in row for d in docs if d for row in d.get("history", []))]
        header = ["run_id", "index", "status", *parameters, "seed", "repeat", *present]
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(header)
        for t, d in zip(tasks, docs, strict=True):
            if d is None:
                continue
            lead = [t["run_id"], t["index"], d.get("status"), *[t["params"].get(p) for p in parameters],
                    t["config"].get("seed"), t["params"].get("repeat")]
            history = d.get("history") or [{}]
            for row in history:
                w.writerow(lead + ["" if row.get(c) is None else row.get(c) for c in present])
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
        "grid": spec.grid, "zip": spec.zips, "repeats": spec.repeats, "seed": spec.seed,
        "seeds": repeat_seeds(spec.seed, spec.repeats), "git_revision": git_revision(), "executor": executor,
        "runs": [{"index": t["index"], "run_id": t["run_id"], "params": t["params"],
                  "status": statuses.get(t["run_id"], "missing")} for t in tasks],
    }
