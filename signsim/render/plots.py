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
