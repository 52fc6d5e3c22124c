"""Figures and tables of the batch-size experiments of Yin et al. (docs/theory.md §6.1-§6.3): stability and
generalization against B (``diversity-stability``), and iterations to a target against B on the worst-case
problem (``diversity-lower-bound``). B_S is marked on every batch axis."""

from __future__ import annotations

from typing import Any

import numpy as np
from rich.table import Table

from signsim.render.figures import legend_below, pyplot
from signsim.render.tables import fmt


def _mark_bound(ax, B_S: dict[str, float | None]) -> None:
    """Vertical lines at the values of B_S (``{label: value}``) on a batch-size axis."""
    for (label, value), style in zip(B_S.items(), (":", "--", "-."), strict=False):
        if value is not None and np.isfinite(value):
            ax.axvline(value, color="black", linestyle=style, linewidth=0.9, label=f"B_S {label} = {value:.3g}")


def _stability_marks(doc: dict[str, Any]) -> dict[str, float | None]:
    return {"at the start": doc["B_S"]["init"], "at the end of serial SGD": doc["B_S"]["end_of_serial_run"]}


def stability_figure(doc: dict[str, Any]):
    """Left: ||w_S - w_S'|| against gradient computations, one line per B (mean over the pairs). Middle: the
    final mean held-out loss difference against B. Right: the generalization gap (test - training loss) against
    B, mean +- one sd over the pairs' runs on S. B_S marked on the batch axes."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2), constrained_layout=True)
    ax = axes[0]
    for i, s in enumerate(doc["summary"]):
        rows = [r for r in doc["curves"] if r["B"] == s["B"]]
        grads = sorted({r["gradients"] for r in rows})
        mean = [np.mean([r["distance"] for r in rows if r["gradients"] == g]) for g in grads]
        ax.plot(grads, mean, color=f"C{i % 10}", label=f"B = {s['B']} (lr {s['lr']:.3g})")
    ax.set_xlabel("gradient computations")
    ax.set_ylabel("||w_S - w_S'||_2 (mean over pairs)")
    ax.set_title("coupled runs, S and S' differ in one sample", fontsize=10)
    B = np.array([s["B"] for s in doc["summary"]], dtype=float)
    for ax, key, label in ((axes[1], "loss_diff_mean", "mean over held-out z of |f_z(w_S) - f_z(w_S')|, at the end"),
                           (axes[2], "gap", "generalization gap: test loss - training loss")):
        y = np.array([np.nan if s[key] is None else s[key] for s in doc["summary"]])
        sd = np.array([np.nan if s[f"{key}_sd"] is None else s[f"{key}_sd"] for s in doc["summary"]])
        ax.errorbar(B, y, yerr=sd, marker="o", color="C0", capsize=3, label="mean +- sd over pairs")
        _mark_bound(ax, _stability_marks(doc))
        ax.set_xscale("log", base=2)
        ax.set_xlabel("batch size B (same number of gradient computations)")
        ax.set_ylabel(label, fontsize=9)
    e = doc["experiment"]
    fig.suptitle(f"{doc['problem']}: n = {doc['n']}, {e['passes']} passes, {e['pairs']} pairs, lr scaling "
                 f"{e['lr_scaling']}", fontsize=10)
    legend_below(fig)
    return fig


def stability_table(doc: dict[str, Any]) -> list[Any]:
    e = doc["experiment"]
    t = Table(title=f"stability and generalization at {e['passes']} passes over n = {doc['n']} samples (mean of "
                    f"{e['pairs']} pairs); B_S {fmt(doc['B_S']['init'])} at the start, "
                    f"{fmt(doc['B_S']['end_of_serial_run'])} at the end of serial SGD",
              header_style="bold", title_justify="left")
    for col in ("B", "lr", "iters", "||w_S - w_S'||", "|loss diff|", "train loss", "test loss", "gap"):
        t.add_column(col, justify="right")
    for s in doc["summary"]:
        t.add_row(str(s["B"]), fmt(s["lr"]), fmt(s["iters"]), fmt(s["distance"]), fmt(s["loss_diff_mean"]),
                  fmt(s["loss"]), fmt(s["test_loss"]), fmt(s["gap"]))
    return [t]
