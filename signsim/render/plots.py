"""matplotlib figures (Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def run_figure(doc: dict[str, Any], path: str | Path) -> None:
    """Loss against iterations and against total bits communicated (up + down), log scale on loss."""
    plt = _pyplot()
    h = doc["history"]
    it = [r["iter"] for r in h]
    loss = [r["loss"] if r["loss"] is not None else float("nan") for r in h]
    mbytes = [(r["bits_up"] + r["bits_down"]) / 8e6 for r in h]
    cfg = doc["config"]
    label = f"{cfg['method']} ({cfg['aggregate']}), M = {cfg['workers']}, lr = {cfg['lr']:g}"
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    positive = all(v > 0 for v in loss if v == v)
    for ax, xs, xl in ((a1, it, "iteration k"), (a2, mbytes, "communicated (MB, up + down)")):
        ax.plot(xs, loss, label=label)
        ax.set_xlabel(xl)
        ax.set_ylabel("loss f(x_k)")
        if positive:
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
    a1.legend()
    fig.suptitle(f"{doc['problem']['name']} (d = {doc['problem']['dim']}): {doc['status']}")
    fig.savefig(path)
    plt.close(fig)


def comparison_figure(doc: dict[str, Any], path: str | Path) -> None:
    """Test accuracy (classifiers) or loss against megabytes communicated, one line per run."""
    plt = _pyplot()
    runs = doc["runs"]
    key = "test_acc" if all("test_acc" in (d["history"][0] if d["history"] else {}) for d in runs) else "loss"
    fig, ax = plt.subplots(figsize=(6, 4), constrained_layout=True)
    for d in runs:
        h = d["history"]
        ax.plot([(r["bits_up"] + r["bits_down"]) / 8e6 for r in h],
                [r[key] if r[key] is not None else float("nan") for r in h], label=d["label"])
    ax.axvline(doc["comparison"]["budget_megabytes"], color="grey", linestyle=":", label="equal communication")
    ax.set_xlabel("communicated (MB, up + down)")
    ax.set_ylabel("test accuracy" if key == "test_acc" else "loss f(x_k)")
    if key == "loss":
        ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.savefig(path)
    plt.close(fig)


def bound_figure(doc: dict[str, Any], run_doc: dict[str, Any] | None, path: str | Path) -> None:
    """Each bound against K (log-log); with a run, its running average (or running minimum) of the
    matching observation beside the bound it should stay under."""
    import numpy as np

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5), constrained_layout=True)
    for r in doc["bounds"]:
        xs = [v["K"] for v in r["values"]]
        ys = [v["bound"] for v in r["values"]]
        style = "-" if r["matches_run"] else ":"
        ax.plot(xs, ys, style, marker="o", markersize=3, label=f"bound: {r['label']}")
    if run_doc is not None:
        track = run_doc.get("tracks", {}).get("spb", [])
        hist = run_doc["history"]
        for r in doc["bounds"]:
            if not r["matches_run"]:
                continue
            if r["key"].startswith(("signsgd", "majority")) and track:
                key = "rho_M_norm" if r["key"].startswith("majority") else "rho_norm"
                it = np.array([t["iter"] for t in track])
                v = np.array([t[key] for t in track], dtype=float)
                if r["key"].endswith("constant"):
                    run = np.cumsum(v) / np.arange(1, v.size + 1)
                else:
                    run = np.minimum.accumulate(v)
                ax.plot(it + 1, run, "--", label=f"observed: {r['lhs']}")
            elif r["key"] == "ssdm":
                it = np.array([h["iter"] for h in hist])
                v = np.array([h["grad_norm"] for h in hist], dtype=float)
                ax.plot(it + 1, np.cumsum(v) / np.arange(1, v.size + 1), "--", label=f"observed: {r['lhs']}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("iterations K")
    ax.set_ylabel("bound / observed value")
    ax.grid(True, alpha=0.3, which="both")
    ax.legend(fontsize=7)
    ax.set_title(f"{doc['problem']['name']}: {doc['config']['method']}, M = {doc['config']['workers']}")
    fig.savefig(path)
    plt.close(fig)
