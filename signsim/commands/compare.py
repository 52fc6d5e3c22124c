"""``signsim run --config FILE`` with ``[[compare]]`` variants: several runs side by side, compared at equal
communication (the seed paper plots accuracy against megabytes communicated; docs/theory.md §5)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from signsim.commands.run import run
from signsim.config import resolve


def value_at_budget(history: list[dict[str, Any]], key: str, budget_bits: int) -> float | None:
    """The last recorded value of ``key`` whose cumulative bits (up + down) stay within the budget."""
    best = None
    for row in history:
        if row["bits_up"] + row["bits_down"] <= budget_bits:
            best = row.get(key)
    return best


def compare(base: dict[str, Any], variants: list[dict[str, Any]], overrides: dict[str, Any],
            progress: Callable[[str], Callable[[int, int], None] | None] | None = None) -> dict[str, Any]:
    """Run every variant (file options < variant options < command-line flags); the budget is the smallest
    total communication among the runs, and each run reports its loss and accuracy there."""
    runs = []
    for v in variants:
        label = v["label"]
        cfg = resolve({**base, **{k: x for k, x in v.items() if k != "label"}, **overrides})
        doc = run(cfg, progress(label) if progress else None)
        doc["label"] = label
        runs.append(doc)
        if doc["status"] == "interrupted":
            break  # Ctrl-C or SIGTERM stops the whole comparison, not just this variant
    budget = min(d["final"]["bits_up"] + d["final"]["bits_down"] for d in runs)
    rows = []
    for d in runs:
        h = d["history"]
        rows.append({
            "label": d["label"], "method": d["config"]["method"], "status": d["status"],
            "iters": d["final"]["iters_done"], "megabytes": (d["final"]["bits_up"] + d["final"]["bits_down"]) / 8e6,
            "final_loss": d["final"].get("loss"), "final_test_acc": d["final"].get("test_acc"),
            "loss_at_budget": value_at_budget(h, "loss", budget),
            "test_acc_at_budget": value_at_budget(h, "test_acc", budget),
        })
    return {"command": "run", "comparison": {"budget_bits": budget, "budget_megabytes": budget / 8e6, "rows": rows},
            "runs": runs, "status": "interrupted" if any(d["status"] == "interrupted" for d in runs) else "ok",
            "signsim_version": runs[0]["signsim_version"]}
