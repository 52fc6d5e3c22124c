"""Figure builders: each takes results documents and returns a matplotlib Figure (Agg backend); the CLI saves
it. One style throughout: labelled axes with units, legends naming the method and its options, log scales
where the quantity spans decades."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from signsim.errors import InputError

#: --x choices: (label, function of a history row and the run's document)
X_AXES = {
    "iter": "iteration k",
    "bits": "bits communicated (up + down)",
    "megabytes": "communicated (MB, up + down)",
    "time": "wall time (s, proportional to iterations)",
}
#: --y choices: (source, key, label, log scale)
Y_AXES = {
    "loss": ("history", "loss", "loss f(x_k)", True),
    "grad-norm": ("history", "grad_norm", "||grad f(x_k)||_2", True),
    "grad-norm-l1": ("history", "grad_norm_l1", "||grad f(x_k)||_1", True),
    "distance": ("history", "distance", "||x_k - x*||_2", True),
    "accuracy": ("history", "test_acc", "test accuracy", False),
    "train-accuracy": ("history", "train_acc", "training accuracy", False),
    "spb-fraction": ("spb", "spb_fraction", "fraction of coordinates with SPB", False),
    "rho-min": ("spb", "rho_min", "min_i rho_i", False),
    "rho-norm": ("spb", "rho_norm", "||g||_rho", True),
    "B_S": ("diversity", "B_S", "batch-size bound B_S", True),
}


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"figure.dpi": 100, "axes.grid": True, "grid.alpha": 0.3, "legend.fontsize": 8,
                         "axes.titlesize": 10, "axes.labelsize": 9})
    return plt


def save(fig, path) -> None:
    """Write the figure atomically (a temporary file renamed over the target) and release it."""
    from signsim.paths import atomic_path

    try:
        with atomic_path(path, "--plot") as tmp:
            fig.savefig(tmp, format=tmp.suffix.lstrip(".").lower() or None)
    finally:
        pyplot().close(fig)


def run_label(doc: dict[str, Any]) -> str:
    if doc.get("label"):
        return doc["label"]
    c = doc["config"]
    parts = [f"{c['method']} ({c['aggregate']})", f"M = {c['workers']}", f"lr = {c['lr']:g}"]
    if c.get("momentum"):
        parts.append(f"beta = {c['momentum']:g}")
    if c.get("byzantine"):
        parts.append(f"{c['byzantine']} byzantine ({c['attack']})")
    if c.get("noise") and c["noise"] != "none":
        parts.append(c["noise"])
    return ", ".join(parts)


def _x_values(rows: list[dict[str, Any]], doc: dict[str, Any], x: str) -> np.ndarray:
    it = np.array([r["iter"] for r in rows], dtype=float)
    if x == "iter":
        return it
    if x == "time":
        done = max(doc["final"].get("iters_done") or 1, 1)
        return it / done * doc["final"].get("wall_time", 0.0)
    per = doc.get("bits_per_iter") or {"up": 0, "down": 0}
    bits = it * (per["up"] + per["down"])
    return bits if x == "bits" else bits / 8e6


def series(doc: dict[str, Any], x: str, y: str) -> tuple[np.ndarray, np.ndarray]:
    source, key, _, _ = Y_AXES[y]
    rows = doc["history"] if source == "history" else doc.get("tracks", {}).get(source, [])
    vals = np.array([np.nan if r.get(key) is None else r[key] for r in rows], dtype=float)
    return _x_values(rows, doc, x), vals


def _finish_axis(ax, x: str, y: str, values: list[np.ndarray]) -> None:
    ax.set_xlabel(X_AXES[x])
    ax.set_ylabel(Y_AXES[y][2])
    allv = np.concatenate([v[np.isfinite(v)] for v in values]) if values else np.array([])
    if Y_AXES[y][3] and allv.size and np.all(allv > 0) and allv.max() / allv.min() > 20:
        ax.set_yscale("log")
    if y == "spb-fraction" or y.endswith("accuracy"):
        ax.set_ylim(-0.02, 1.02)


def convergence(docs: list[dict[str, Any]], x: str, y: str, ax=None):
    plt = pyplot()
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 4.2), constrained_layout=True)
    values = []
    for d in docs:
        xs, ys = series(d, x, y)
        if xs.size == 0:
            continue
        ax.plot(xs, ys, label=run_label(d) + ("" if d["status"] == "ok" else f" [{d['status']}]"))
        values.append(ys)
    if not values:
        raise InputError(f"--y {y}: the results hold no such values (track them with --track-spb / "
                         "--track-diversity)")
    _finish_axis(ax, x, y, values)
    ax.legend()
    return fig


def runs_overview(docs: list[dict[str, Any]]):
    """Loss against iterations and against megabytes; with SPB tracks, also SPB fraction and rho-norm/l1."""
    plt = pyplot()
    tracked = any(d.get("tracks", {}).get("spb") for d in docs)
    acc = all(d["history"] and "test_acc" in d["history"][0] for d in docs)
    rows = 2 if tracked else 1
    fig, axes = plt.subplots(rows, 2, figsize=(11, 4 * rows), constrained_layout=True, squeeze=False)
    y = "accuracy" if acc else "loss"
    convergence(docs, "iter", y, axes[0][0])
    convergence(docs, "megabytes", y, axes[0][1])
    if tracked:
        convergence(docs, "iter", "spb-fraction", axes[1][0])
        ax = axes[1][1]
        low = 0.0
        for d in docs:
            t = d.get("tracks", {}).get("spb")
            if not t:
                continue
            ratio = np.array([r["rho_norm"] / r["l1_norm"] if r["l1_norm"] else np.nan for r in t])
            ax.plot([r["iter"] for r in t], ratio, label=run_label(d))
            low = min(low, np.nanmin(ratio) if np.isfinite(ratio).any() else 0.0)
        ax.axhline(0, color="grey", linewidth=0.8)
        ax.set_xlabel(X_AXES["iter"])
        ax.set_ylabel("||g||_rho / ||g||_1 (< 0: SPB violated on average)")
        ax.set_ylim(low - 0.02, 1.02)
        ax.legend()
    first = docs[0]
    fig.suptitle(f"{first['problem']['name']} (d = {first['problem']['dim']})")
    return fig


def sweep_lines(rows: list[dict[str, str]], parameters: list[str], group_by: str | None, x: str, y: str):
    """One line per value of ``group_by`` (other parameters pooled): the mean over runs at each recorded
    iteration, with a band of one standard deviation."""
    plt = pyplot()
    if group_by is None:
        group_by = parameters[0] if parameters else None
    if group_by is not None and group_by not in parameters:
        raise InputError(f"--group-by {group_by}: not a sweep parameter (parameters: {', '.join(parameters)})")
    source, key, _, _ = Y_AXES[y]
    if source != "history":
        raise InputError(f"--y {y}: sweep plots use the history columns (loss, grad-norm, accuracy, ...)")
    if x not in ("iter", "bits", "megabytes"):
        raise InputError(f"--x {x}: sweep plots use iter, bits or megabytes")
    fig, ax = plt.subplots(figsize=(6.4, 4.2), constrained_layout=True)
    groups: dict[str, dict[float, list[float]]] = {}
    for r in rows:
        if r.get(key, "") == "" or r["status"] == "failed":
            continue
        g = r.get(group_by, "all") if group_by else "all"
        xv = float(r["iter"]) if x == "iter" else float(r["bits_up"]) + float(r["bits_down"])
        if x == "megabytes":
            xv /= 8e6
        groups.setdefault(g, {}).setdefault(xv, []).append(float(r[key]))
    values = []
    for g, by_x in groups.items():
        xs = np.array(sorted(by_x))
        mean = np.array([np.mean(by_x[v]) for v in xs])
        std = np.array([np.std(by_x[v]) for v in xs])
        ax.plot(xs, mean, label=f"{group_by} = {g}" if group_by else "all runs")
        ax.fill_between(xs, mean - std, mean + std, alpha=0.2)
        values.append(mean)
    if not values:
        raise InputError("the sweep has no recorded values to plot")
    _finish_axis(ax, x, y, values)
    ax.legend()
    ax.set_title("mean over runs, band: one standard deviation")
    return fig


def rho_sorted(doc: dict[str, Any]):
    """Per-coordinate success probabilities, sorted, with their intervals and the 1/2 line."""
    plt = pyplot()
    rho = np.array([np.nan if v is None else v for v in doc["rho"]], dtype=float)
    lo = np.array([np.nan if v is None else v for v in doc["rho_low"]], dtype=float)
    hi = np.array([np.nan if v is None else v for v in doc["rho_high"]], dtype=float)
    keep = np.isfinite(rho)
    order = np.argsort(rho[keep], kind="stable")
    r, l_, h = rho[keep][order], lo[keep][order], hi[keep][order]
    fig, ax = plt.subplots(figsize=(6.4, 4.2), constrained_layout=True)
    ranks = np.arange(r.size)
    ax.fill_between(ranks, l_, h, alpha=0.3, step="mid", label="interval")
    ax.plot(ranks, r, drawstyle="steps-mid", label=f"rho_i ({doc['method_of_estimate']})")
    ax.axhline(0.5, color="red", linestyle="--", linewidth=1, label="1/2 (SPB needs rho_i > 1/2)")
    ax.set_xlabel("coordinates, sorted by rho_i")
    ax.set_ylabel("success probability rho_i")
    ax.set_ylim(min(0.0, np.nanmin(l_) if l_.size else 0) - 0.02, 1.02)
    ax.set_title(f"{doc['problem']['name']} at {doc['point']}, tau = {doc['tau']}: SPB {doc['verdict']}")
    ax.legend()
    return fig


def speedup_predicted(doc: dict[str, Any]):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2), constrained_layout=True)
    B = np.array([r["B"] for r in doc["speedup"]], dtype=float)
    ax.plot(B, B, ":", color="grey", label="linear speedup")
    B_S = doc["B_S"]
    name = "inf" if B_S is None else f"{B_S:.3g}"
    ax.plot(B, [r["predicted"] for r in doc["speedup"]], marker="o", label=f"predicted, B_S = {name}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("batch size B")
    ax.set_ylabel("speedup over B = 1")
    ax.set_title(f"{doc['problem']['name']} at {doc['point']} ({doc['method_of_estimate']})")
    ax.legend()
    return fig


def speedup_measured(doc: dict[str, Any]):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2), constrained_layout=True)
    reps = sorted({r["replicate"] for r in doc["rows"]})
    all_B = sorted({r["B"] for r in doc["rows"]})
    ax.plot(all_B, all_B, ":", color="grey", label="linear speedup")
    for rep in reps:
        rows = [r for r in doc["rows"] if r["replicate"] == rep]
        B = [r["B"] for r in rows]
        line = ax.plot(B, [np.nan if r["measured_speedup"] is None else r["measured_speedup"] for r in rows],
                       marker="o", label=f"measured, replicate {rep}")[0]
        ax.plot(B, [np.nan if r["predicted_speedup"] is None else r["predicted_speedup"] for r in rows], "--",
                color=line.get_color(), label=f"predicted, replicate {rep}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("batch size B")
    ax.set_ylabel("speedup T_1 / T_B (iterations to target)")
    ax.set_title(f"target loss {doc['experiment']['target_loss']:g}")
    ax.legend(ncol=2)
    return fig


def bound_overview(doc: dict[str, Any]):
    """Left: each bound against K (matching bounds solid), the run's observations as markers at its K.
    Right: ||g||_rho_M / ||g||_1 against M beside the exponential lower bound."""
    plt = pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    for r in doc["bounds"]:
        line = a1.plot([v["K"] for v in r["values"]], [v["bound"] for v in r["values"]],
                       "-" if r["matches_run"] else ":", label=r["label"] + (" *" if r["derived"] else ""))[0]
        if r.get("observed") is not None and r["matches_run"]:
            a1.plot([doc["overlay"]["iters_done"]], [r["observed"]], "x" if r["exceeded"] else "o",
                    color=line.get_color(), markersize=8)
    a1.set_xscale("log")
    a1.set_yscale("log")
    a1.set_xlabel("iterations K")
    a1.set_ylabel("bound on its left-hand side")
    a1.set_title("bounds (solid: match the run; markers: observed)")
    a1.legend(fontsize=6)
    mt = doc["majority_table"]["rows"]
    M = [r["M"] for r in mt]
    a2.plot(M, [np.nan if r["ratio"] is None else r["ratio"] for r in mt], drawstyle="steps-post", marker=".",
            label="||g||_rho_M / ||g||_1")
    a2.plot(M, [np.nan if r["lower_bound"] is None else r["lower_bound"] for r in mt], "--",
            label="1 - exp(-(2 rho - 1)^2 l)")
    a2.set_xlabel("workers M")
    a2.set_ylabel("noise reduction")
    a2.set_ylim(0, 1.02)
    a2.set_title("majority vote: 2l - 1 and 2l workers are equal")
    a2.legend()
    return fig


def majority_from_docs(docs: list[dict[str, Any]], y: str):
    """Final value of ``y`` against the number of workers (for runs that differ by M)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2), constrained_layout=True)
    pts = sorted((d["config"]["workers"], series(d, "iter", y)[1][-1]) for d in docs)
    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o")
    ax.set_xlabel("workers M")
    ax.set_ylabel("final " + Y_AXES[y][2])
    if all(p[1] > 0 for p in pts if math.isfinite(p[1])):
        ax.set_yscale("log")
    return fig
