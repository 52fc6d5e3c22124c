"""``signsim run --config FILE`` with ``[[compare]]`` variants: several runs side by side, compared at equal
communication (the seed paper plots accuracy against megabytes communicated; docs/theory.md §5)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from signsim.accounting import budget_bits
from signsim.commands.run import run
from signsim.interface.config import resolve


def value_at_budget(history: list[dict[str, Any]], key: str, budget_bits: int) -> float | None:
    """The last recorded value of ``key`` whose cumulative bits (up + down) stay within the budget."""
    best = None
    for row in history:
        if row["bits_up"] + row["bits_down"] <= budget_bits:
            best = row.get(key)
    return best


def stopped_at(doc: dict[str, Any]) -> str:
    """Why a run ended: ``budget`` (its bits reached the communication budget), ``iters`` (it ran all its
    iterations), ``stop_loss`` (the loss reached --stop-loss), else its status (diverged, interrupted, failed)."""
    if doc["status"] == "budget":
        return "budget"
    if doc["status"] != "ok":
        return doc["status"]
    return "stop_loss" if doc["final"].get("reached_stop_loss") else "iters"


def compare(base: dict[str, Any], variants: list[dict[str, Any]], overrides: dict[str, Any],
            progress: Callable[[str], Callable[[int, int], None] | None] | None = None) -> dict[str, Any]:
    """Run every variant (file options < variant options < command-line flags). With one communication budget
    for all (``--budget-mb`` / ``--budget-bits``), each run stops at the first iteration whose bits reach it (or
    at its ``iters``, having sent less) and reports its final values; without one, the budget is the smallest
    total communication among the runs, and each run reports its loss and accuracy there (docs/theory.md §7)."""
    runs = []
    for v in variants:
        label = v["label"]
        cfg = resolve({**base, **{k: x for k, x in v.items() if k != "label"}, **overrides})
        doc = run(cfg, progress(label) if progress else None)
        doc["label"] = label
        runs.append(doc)
        if doc["status"] in ("interrupted", "failed"):
            break  # Ctrl-C or SIGTERM, or a plugin stage's fault, stops the whole comparison, not just this variant
    given = {budget_bits(d["config"]) for d in runs}
    given_budget = given.pop() if len(given) == 1 and math.isfinite(next(iter(given))) else None
    if given_budget is not None:  # every run stopped at the budget (or at its iters, having sent less)
        budget = given_budget
    else:
        budget = min(d["final"]["bits_up"] + d["final"]["bits_down"] for d in runs)
    rows = []
    for d in runs:
        h = d["history"]
        fin = d["final"]
        rows.append({
            "label": d["label"], "method": d["config"]["method"], "status": d["status"],
            "iters": fin["iters_done"], "megabytes": (fin["bits_up"] + fin["bits_down"]) / 8e6,
            "final_loss": fin.get("loss"), "final_test_acc": fin.get("test_acc"),
            "loss_at_budget": fin.get("loss") if given_budget is not None else value_at_budget(h, "loss", budget),
            "test_acc_at_budget": fin.get("test_acc") if given_budget is not None
            else value_at_budget(h, "test_acc", budget),
            "stopped": stopped_at(d),
        })
    return {"command": "run", "comparison": {"budget_bits": budget, "budget_megabytes": budget / 8e6,
                                             "budget_given": given_budget is not None, "rows": rows},
            "runs": runs,
            "status": next((st for st in ("failed", "interrupted") if any(d["status"] == st for d in runs)), "ok"),
            "signsim_version": runs[0]["signsim_version"]}
