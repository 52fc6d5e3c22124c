"""Figures and tables of the batch-size experiments of Yin et al. (docs/theory.md §6.1-§6.3): stability and
generalization against B (``diversity-stability``), and iterations to a target against B on the worst-case
problem (``diversity-lower-bound``). B_S is marked on every batch axis."""

from __future__ import annotations

from typing import Any

import numpy as np

from signsim.render.figures import legend_below, styled, subplots


def _mark_bound(ax, B_S: dict[str, float | None]) -> None:
    """Vertical lines at the values of B_S (``{label: value}``) on a batch-size axis."""
    for (label, value), style in zip(B_S.items(), (":", "--", "-."), strict=False):
        if value is not None and np.isfinite(value):
            ax.axvline(value, color="black", linestyle=style, linewidth=0.9, label=f"B_S {label} = {value:.3g}")


def _stability_marks(doc: dict[str, Any]) -> dict[str, float | None]:
    return {"at the start": doc["B_S"]["init"], "at the end of serial SGD": doc["B_S"]["end_of_serial_run"]}


@styled
def stability_figure(doc: dict[str, Any]):
    """Left: ||w_S - w_S'|| against gradient computations, one line per B (mean over the pairs). Middle: the
    final mean held-out loss difference against B. Right: the generalization gap (test - training loss) against
    B, mean +- one sd over the pairs' runs on S. B_S marked on the batch axes."""
    fig, axes = subplots(1, 3, figsize=(14, 4.2))
    ax = axes[0]
    for i, s in enumerate(doc["rows"]):
        rows = [r for r in doc["curves"] if r["B"] == s["B"]]
        grads = sorted({r["gradients"] for r in rows})
        mean = [np.mean([r["distance"] for r in rows if r["gradients"] == g]) for g in grads]
        ax.plot(grads, mean, color=f"C{i % 10}", label=f"B = {s['B']} (lr {s['lr']:.3g})")
    ax.set_xlabel("gradient computations")
    ax.set_ylabel("||w_S - w_S'||_2 (mean over pairs)")
    ax.set_title("coupled runs, S and S' differ in one sample", fontsize=10)
    B = np.array([s["B"] for s in doc["rows"]], dtype=float)
    for ax, key, label in ((axes[1], "loss_diff_mean", "final mean |f_z(w_S) - f_z(w_S')|, held-out z"),
                           (axes[2], "gap", "final test loss - training loss")):
        y = np.array([np.nan if s[key] is None else s[key] for s in doc["rows"]])
        sd = np.array([np.nan if s[f"{key}_sd"] is None else s[f"{key}_sd"] for s in doc["rows"]])
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


@styled
def conflicts_figure(doc: dict[str, Any]):
    """B_S against conflict + 1 on log-log axes, one marker per value kind (every seed a point), beside the
    sparse-conflict bound n / (conflict + 1) (docs/theory.md §6.2)."""
    fig, ax = subplots(figsize=(6.4, 4.2))
    rows = [r for r in doc["rows"] if r["B_S"] is not None]
    for i, values in enumerate(doc["experiment"]["values"]):
        mine = [r for r in rows if r["values"] == values]
        ax.plot([r["conflict"] + 1 for r in mine], [r["B_S"] for r in mine], "os"[i % 2], color=f"C{i % 10}",
                alpha=0.7, label=f"B_S, {values} values (one point per seed)")
    c = np.array(sorted({r["conflict"] for r in doc["rows"]}), dtype=float)
    n = doc["experiment"]["samples"]
    ax.plot(c + 1, n / (c + 1), "-", color="black", label="bound n / (conflict + 1) [reconstructed]")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("conflict + 1 (samples sharing a coordinate with each sample, itself included)")
    ax.set_ylabel("batch-size bound B_S at the point")
    e = doc["experiment"]
    ax.set_title(f"synthetic:sparse, n = {n}, s = {e['s']}, {e['labels']} labels, at {e['at']}", fontsize=10)
    legend_below(fig)
    return fig


@styled
def lower_bound_figure(doc: dict[str, Any]):
    """Left: iterations to the target against B (the fewest over the step factors, mean over seeds), the
    iterations at which E f_k reaches it with the optimal step (closed form), and linear speedup from B = 1.
    Right: gradient computations B T_B. B_S marked on both."""
    fig, axes = subplots(1, 2, figsize=(11, 4.2))
    rows = doc["rows"]
    B = np.array([r["B"] for r in rows], dtype=float)
    best = np.array([np.nan if r["best_iters"] is None else r["best_iters"] for r in rows])
    pred = np.array([np.nan if r["predicted_optimal"] is None else r["predicted_optimal"] for r in rows])
    ax = axes[0]
    ax.plot(B, best, "o-", color="C0", label="measured: fewest iterations over the step factors")
    ax.plot(B, pred, "--", color="C1", label="closed form: E f_k reaches the target, optimal step")
    if rows and rows[0]["B"] == 1 and np.isfinite(best[0]):
        ax.plot(B, best[0] / B, ":", color="grey", label="linear speedup from B = 1")
    ax.set_ylabel("iterations to the target")
    axes[1].plot(B, best * B, "o-", color="C0", label="measured: fewest iterations over the step factors")
    axes[1].plot(B, pred * B, "--", color="C1", label="closed form: E f_k reaches the target, optimal step")
    axes[1].set_ylabel("gradient computations B x iterations")
    for ax in axes:
        _mark_bound(ax, {"": doc["B_S"]})
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlabel("batch size B")
    fig.suptitle(f"least squares, {doc['groups']} groups of identical samples (n = {doc['n']}): target "
                 f"f <= {doc['experiment']['target_ratio']:g} f(x_0)", fontsize=10)
    legend_below(fig)
    return fig
