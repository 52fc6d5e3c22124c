"""Figure builders: each takes results documents and returns a matplotlib Figure outside pyplot
(``signsim.render.canvas``: no backend is selected or changed); the CLI saves it. One style throughout:
labelled axes with units, legends naming the method and its options, log scales where the quantity spans
decades."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any

import numpy as np

from signsim import history
from signsim.diagnostics import tracking
from signsim.errors import InputError
from signsim.render import where as point_words

#: the line styles and markers lines cycle through beside their colours, so that a line drawn exactly over another
#: (two runs or sweep groups with the same values) still shows as dashes over it
LINESTYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P")


def line_style(i: int) -> str:
    return LINESTYLES[i % len(LINESTYLES)]


def _history(field: str, log: bool) -> tuple[str, str, str, bool]:
    """A --y axis for a history column (``signsim.history``): its field and label."""
    c = history.column(field)
    return "history", c.field, c.label, log


def _tracked(quantity: str, name: str, log: bool) -> tuple[str, str, str, bool]:
    """A --y axis for a field of a tracked quantity (``signsim.diagnostics.tracking``): its name and label."""
    f = tracking.field(quantity, name)
    return quantity, f.name, f.label, log


#: --x choices: (label, function of a history row and the run's document)
X_AXES = {
    "iter": history.column("iter").label,
    "bits": "bits communicated (up + down)",
    "megabytes": "communicated (MB, up + down)",
    "time": "time (s): simulated with a system model, else wall time (proportional to iterations)",
}
#: --y choices: (source, key, label, log scale)
Y_AXES = {
    "loss": _history("loss", True),
    "test-loss": _history("test_loss", True),
    "grad-norm": _history("grad_norm", True),
    "grad-norm-l1": _history("grad_norm_l1", True),
    "distance": _history("distance", True),
    "accuracy": _history("test_acc", False),
    "train-accuracy": _history("train_acc", False),
    "spb-fraction": _tracked("spb", "spb_fraction", False),
    "rho-min": _tracked("spb", "rho_min", False),
    "rho-norm": _tracked("spb", "rho_norm", True),
    "B_S": _tracked("diversity", "B_S", True),
}


def styled(build: Callable) -> Callable:
    """A figure builder run with signsim's style in effect (``signsim.render.canvas``; matplotlib loads on the
    first figure, not with this module)."""

    @wraps(build)
    def inner(*args, **kwargs):
        from signsim.render import canvas
        from signsim.render.mathtext import typeset_figure

        with canvas.style():
            fig = build(*args, **kwargs)
            if fig is not None and hasattr(fig, "axes"):
                typeset_figure(fig)  # the labels' math as a paper sets it (rho_i: a Greek rho with subscript i)
            return fig

    return inner


def subplots(*args, **kwargs):
    """A new figure outside pyplot and its axes (``signsim.render.canvas.subplots``)."""
    from signsim.render import canvas

    return canvas.subplots(*args, **kwargs)


def save(fig, path) -> None:
    """Write the figure atomically (a temporary file renamed over the target)."""
    from signsim.paths import atomic_path

    with atomic_path(path, "--plot") as tmp:
        fig.savefig(tmp, format=tmp.suffix.lstrip(".").lower() or None)


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


def labels(docs: list[dict[str, Any]]) -> list[str]:
    """Legend labels of runs: method and options, the status when not ok, the problem when they differ."""
    mixed = len(problems_of(docs)) > 1
    out = []
    for d in docs:
        label = run_label(d) + ("" if d.get("status") == "ok" else f" [{d.get('status')}]")
        out.append(f"{problems_of([d])[0]}: {label}" if mixed else label)
    for label in set(out):  # runs that the label does not tell apart: add the options in which they differ
        same = [i for i, x in enumerate(out) if x == label]
        if len(same) < 2:
            continue
        configs = [docs[i].get("config", {}) for i in same]
        keys = sorted({k for c in configs for k in c if any(c.get(k) != o.get(k) for o in configs)})
        for n, i in enumerate(same):
            extra = ", ".join(f"{k.replace('_', '-')} = {configs[n].get(k)}" for k in keys)
            out[i] = f"{label}, {extra}" if extra else label
    seen: dict[str, int] = {}
    counts = {label: out.count(label) for label in out}
    for i, label in enumerate(out):  # the same run given twice
        if counts[label] > 1:
            seen[label] = seen.get(label, 0) + 1
            out[i] = f"{label} (#{seen[label]})"
    return out


def problems_of(docs: list[dict[str, Any]]) -> list[str]:
    """The distinct problems of these runs, in order, as "name (d = dim)"."""
    out: list[str] = []
    for d in docs:
        p = d.get("problem") or {}
        name = f"{p.get('name', d.get('config', {}).get('problem', '?'))} (d = {p.get('dim', '?')})"
        if p.get("model_file"):  # your own PyTorch model: its file's name
            name = f"model {Path(p['model_file']).name} (d = {p.get('dim', '?')})"
        if name not in out:
            out.append(name)
    return out


def mixed_problems_warning(docs: list[dict[str, Any]]) -> str | None:
    names = problems_of(docs)
    if len(names) > 1:
        return (f"the runs are of {len(names)} different problems ({', '.join(names)}): their values share one "
                "axis but are not comparable")
    return None


def available_y(doc: dict[str, Any]) -> list[str]:
    """The --y choices for which a run's results hold at least one finite value."""
    out = []
    for y in Y_AXES:
        _, vals = series(doc, "iter", y)
        if np.isfinite(vals).any():
            out.append(y)
    return out


def legend_below(fig, axes=None, fontsize: float = 8):
    """One legend for the figure, outside and below the axes (constrained layout makes room for it), so that
    it never covers data; entries named once; labels wrapped to the figure's width so that none is clipped.
    Only artists that draw something (some finite value) get an entry."""
    import textwrap

    handles, labels = [], []
    for ax in axes if axes is not None else fig.get_axes():
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label in labels or not _visible(h):
                continue
            handles.append(h)
            labels.append(label)
    if not handles:
        return None
    chars = int(fig.get_figwidth() * 72 / (0.55 * fontsize)) - 8  # characters across, less the handle
    labels = [textwrap.fill(label, max(chars, 20)) for label in labels]
    longest = max(len(line) for label in labels for line in label.splitlines()) + 8
    ncol = max(1, min(len(labels), (chars + 8) // longest))
    return fig.legend(handles, labels, loc="outside lower center", ncol=ncol, fontsize=fontsize, frameon=False)


def _visible(artist) -> bool:
    get = getattr(artist, "get_ydata", None)
    if get is None:
        return True
    try:
        y = np.asarray(get(), dtype=float)
    except (TypeError, ValueError):
        return True
    return bool(np.isfinite(y).any())


def _x_values(rows: list[dict[str, Any]], doc: dict[str, Any], x: str) -> np.ndarray:
    it = np.array([r["iter"] for r in rows], dtype=float)
    if x == "iter":
        return it
    if x == "time" and doc.get("system") is not None:  # the simulated clock (docs/theory.md §14)
        hist = doc["history"]
        return np.interp(it, [r["iter"] for r in hist], [r["time"] for r in hist])
    if x == "time":
        done = max(doc["final"].get("iters_done") or 1, 1)
        return it / done * doc["final"].get("wall_time", 0.0)
    if rows and all(r.get("bits_up") is not None and r.get("bits_down") is not None for r in rows):
        bits = np.array([r["bits_up"] + r["bits_down"] for r in rows], dtype=float)  # counted message by message
    else:
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
    if x == "bits":  # 20k, 1.5M, 2G bits: no "1e6" offset above a linear axis
        from matplotlib.ticker import EngFormatter

        ax.xaxis.set_major_formatter(EngFormatter(sep=""))
    ax.set_ylabel(Y_AXES[y][2])
    allv = np.concatenate([v[np.isfinite(v)] for v in values]) if values else np.array([])
    if Y_AXES[y][3] and allv.size and np.all(allv > 0) and allv.max() / allv.min() > 20:
        ax.set_yscale("log")
    if y == "spb-fraction" or y.endswith("accuracy"):
        ax.set_ylim(-0.02, 1.02)


@styled
def convergence(docs: list[dict[str, Any]], x: str, y: str, ax=None):
    fig = None
    if ax is None:
        fig, ax = subplots(figsize=(6.4, 4.2))
    values = []
    for i, (d, label) in enumerate(zip(docs, labels(docs), strict=True)):
        xs, ys = series(d, x, y)
        if xs.size == 0 or not np.isfinite(ys).any():
            continue
        ax.plot(xs, ys, color=f"C{i % 10}", linestyle=line_style(i), label=label)  # one colour per run everywhere
        values.append(ys)
    if not values:
        raise InputError(f"--y {y}: the results hold no such values (track them with --track-spb / "
                         "--track-diversity)")
    _finish_axis(ax, x, y, values)
    if fig is not None:
        ax.set_title(runs_subject(docs))
        legend_below(fig)
    return fig


@styled
def runs_overview(docs: list[dict[str, Any]]):
    """Loss against iterations and against megabytes; with SPB tracks, also SPB fraction and E<g, sign g_hat>/l1."""
    tracked = any(d.get("tracks", {}).get("spb") for d in docs)
    acc = all(d["history"] and "test_acc" in d["history"][0] for d in docs)
    rows = 2 if tracked else 1
    fig, axes = subplots(rows, 2, figsize=(11, 4 * rows), squeeze=False)
    y = "accuracy" if acc else "loss"
    convergence(docs, "iter", y, axes[0][0])
    convergence(docs, "megabytes", y, axes[0][1])
    if tracked:
        convergence(docs, "iter", "spb-fraction", axes[1][0])
        ax = axes[1][1]
        low = 0.0
        for i, (d, label) in enumerate(zip(docs, labels(docs), strict=True)):
            t = d.get("tracks", {}).get("spb")
            if not t:
                continue
            ratio = np.array([r["rho_norm"] / r["l1_norm"] if r["l1_norm"] else np.nan for r in t])
            ax.plot([r["iter"] for r in t], ratio, color=f"C{i % 10}", linestyle=line_style(i), label=label)
            low = min(low, np.nanmin(ratio) if np.isfinite(ratio).any() else 0.0)
        ax.axhline(0, color="grey", linewidth=0.8)
        ax.set_xlabel(X_AXES["iter"])
        ax.set_ylabel("E<g, sign g_hat> / ||g||_1 (< 0: SPB violated on average)")
        ax.set_ylim(low - 0.02, 1.02)
    fig.suptitle(runs_subject(docs))
    legend_below(fig)
    return fig


#: results.csv columns that are not options of the run (the options: the run's, seed and repeat)
SWEEP_BOOKKEEPING = {"run_id", "index", "status"}


def _same(a: str, b: str) -> bool:
    """CSV text against a --where value: equal as text, or as numbers (9 = 9.0)."""
    if a == b:
        return True
    try:
        return float(a) == float(b)
    except ValueError:
        return a.lower() == b.lower() and a.lower() in ("true", "false")


def parse_where(where: list[str] | None, columns: list[str], name: str) -> list[tuple[str, str]]:
    out = []
    for w in where or []:
        key, sep, value = w.partition("=")
        key, value = key.strip().replace("-", "_"), value.strip()
        if not sep or not key or not value:
            raise InputError(f"--where {w}: expected KEY=VALUE (e.g. workers=9)")
        if key not in columns:
            raise InputError(f"--where {w}: {name} has no option '{key}' (options: {', '.join(columns)})")
        out.append((key, value))
    return out


@styled
def sweep_lines(rows: list[dict[str, str]], parameters: list[str], group_by: str | None, x: str, y: str,
                where: list[str] | None = None, facet: str | None = None, name: str = "the sweep", warn=None):
    """One line per value of ``group_by``: the mean over the runs at each recorded iteration, with a band of
    one standard deviation; the title names every option that varies within a line (averaged over).
    ``where`` (KEY=VALUE, all must hold) keeps only matching runs first; ``facet`` draws one panel per value.
    Averaging over different problems calls ``warn``."""
    from dataclasses import fields

    from signsim.interface.config import RunConfig

    header = list(rows[0]) if rows else []
    run_options = {f.name for f in fields(RunConfig)} | {"seed", "repeat"} | set(parameters)
    options = [c for c in header if c in run_options and c not in SWEEP_BOOKKEEPING]
    choices = ", ".join(options)
    if group_by is None:
        group_by = parameters[0] if parameters else None
    group_by = group_by.replace("-", "_") if group_by else None
    facet = facet.replace("-", "_") if facet else None
    if group_by is not None and group_by not in options:
        raise InputError(f"--group-by {group_by}: not an option of {name} (options: {choices})")
    if facet is not None and facet not in options:
        raise InputError(f"--facet {facet}: not an option of {name} (options: {choices})")
    if facet is not None and facet == group_by:
        raise InputError(f"--facet {facet}: already the --group-by option; choose another")
    filters = parse_where(where, options, name)
    source, key, label, _ = Y_AXES[y]
    if source != "history" and key not in header:
        raise InputError(f"--y {y}: {name} has no {label} column (sweep plots use the history columns: loss, "
                         "grad-norm, accuracy, ...)")
    if x not in ("iter", "bits", "megabytes"):
        raise InputError(f"--x {x}: sweep plots use iter, bits or megabytes")
    kept = [r for r in rows if r["status"] != "failed" and all(_same(r.get(k, ""), v) for k, v in filters)]
    if rows and not kept:
        raise InputError(f"--where {' '.join(where or [])}: no run of {name} matches")
    if not any(r.get(key, "") != "" for r in kept):
        have = [name_ for name_, (src, k, _, _) in Y_AXES.items() if src == "history"
                and any(r.get(k, "") != "" for r in kept)]
        raise InputError(f"--y {y}: {name} holds no {label} values (it has: {', '.join(have) or 'none'})")
    panels: dict[str, dict[str, dict[float, list[float]]]] = {}
    members: dict[tuple[str, str], list[dict[str, str]]] = {}
    split = _split_by(kept, parameters, lambda r: (r.get(facet, "") if facet else "",
                                                   r.get(group_by, "all") if group_by else "all"), (group_by, facet))

    def line_of(r: dict[str, str]) -> str:
        g = r.get(group_by, "all") if group_by else "all"
        return " | ".join([g, *(f"{c.replace('_', '-')} = {r.get(c, '')}" for c in split)])

    for r in kept:
        if r.get(key, "") == "":
            continue
        f = r.get(facet, "") if facet else ""
        g = line_of(r)
        xv = float(r["iter"]) if x == "iter" else float(r["bits_up"]) + float(r["bits_down"])
        if x == "megabytes":
            xv /= 8e6
        panels.setdefault(f, {}).setdefault(g, {}).setdefault(xv, []).append(float(r[key]))
        members.setdefault((f, g), []).append(r)
    averaged = []
    for c in options:
        if c in (group_by, facet):
            continue
        if any(len({r.get(c, "") for r in rs}) > 1 for rs in members.values()):
            averaged.append(c)
    if "seed" in averaged and "repeat" in averaged:
        averaged.remove("repeat")
    if "problem" in averaged and warn is not None:
        warn(f"{name}: the lines average runs of different problems "
             f"({', '.join(sorted({r.get('problem', '') for r in kept}))}); use --where problem=NAME or "
             "--facet problem")
    runs_per_line = {k: len({r["run_id"] for r in rs}) for k, rs in members.items()}
    fvals = sorted(panels, key=_sort_key)
    ncols = min(len(fvals), 3)
    nrows = math.ceil(len(fvals) / ncols)
    fig, axes = subplots(nrows, ncols, figsize=(max(6.4, 4.2 * ncols), 3.8 * nrows + 0.8), squeeze=False,
                         sharey=True)
    groups = sorted({g for f in fvals for g in panels[f]}, key=_lines_key)
    colour = {g: f"C{i % 10}" for i, g in enumerate(groups)}
    style = {g: line_style(i) for i, g in enumerate(groups)}

    def name(g: str) -> str:
        first, *rest = g.split(" | ")
        rs = [r for (_, gg), m in members.items() if gg == g for r in m]
        return ", ".join([_line_name(group_by, first, rs), *rest])

    for n_ax, f in enumerate(fvals):
        ax = axes[n_ax // ncols][n_ax % ncols]
        values = []
        for g in sorted(panels[f], key=_lines_key):
            by_x = panels[f][g]
            xs = np.array(sorted(by_x))
            mean = np.array([np.mean(by_x[v]) for v in xs])
            std = np.array([np.std(by_x[v]) for v in xs])
            ax.plot(xs, mean, color=colour[g], linestyle=style[g], label=name(g))
            ax.fill_between(xs, mean - std, mean + std, color=colour[g], alpha=0.2)
            values.append(mean)
        _finish_axis(ax, x, y, values)
        if facet:
            ax.set_title(f"{facet} = {f}")
    for n_ax in range(len(fvals), nrows * ncols):
        axes[n_ax // ncols][n_ax % ncols].set_visible(False)
    lo, hi = min(runs_per_line.values()), max(runs_per_line.values())
    count = f"{lo}" if lo == hi else f"{lo}-{hi}"
    if averaged:
        what = f"mean over {count} runs per line, averaged over {', '.join(averaged)}; band: one standard deviation"
    else:
        what = f"{count} run per line" if hi == 1 else f"mean over {count} runs per line; band: one standard deviation"
    if filters:
        what = f"{', '.join(f'{k} = {v}' for k, v in filters)}: {what}"
    fig.suptitle(f"{sweep_subject(kept)}\n{what}", fontsize=9)
    legend_below(fig)
    return fig


def _lines_key(g: str):
    return [_sort_key(part.rpartition(" = ")[2] if " = " in part else part) for part in g.split(" | ")]


@styled
def sweep_final(rows: list[dict[str, str]], parameters: list[str], option: str, group_by: str | None, y: str,
                where: list[str] | None = None, name: str = "the sweep"):
    """Each run's final value of ``y`` (its last recorded one) against the swept option ``option``: one line
    per value of ``group_by``, the mean over the runs at each value with an error bar of one standard
    deviation (the runs differ by the options averaged over, named in the title, e.g. the repeats). Numeric
    values go on a numeric axis (logarithmic when all are positive and span more than two decades); others,
    such as compressor specs, one tick each in the order the sweep ran them."""
    from dataclasses import fields

    from signsim.interface.config import RunConfig

    header = list(rows[0]) if rows else []
    run_options = {f.name for f in fields(RunConfig)} | {"seed", "repeat"} | set(parameters)
    options = [c for c in header if c in run_options and c not in SWEEP_BOOKKEEPING]
    swept = [p.replace("-", "_") for p in parameters]
    option = option.replace("-", "_")
    if option not in swept:
        raise InputError(f"--x {option.replace('_', '-')}: not an option {name} varies (it varies: "
                         f"{', '.join(p.replace('_', '-') for p in swept) or 'nothing'}); or iter, bits, megabytes")
    group_by = group_by.replace("-", "_") if group_by else None
    if group_by is not None and group_by not in options:
        raise InputError(f"--group-by {group_by}: not an option of {name} (options: {', '.join(options)})")
    if group_by == option:
        raise InputError(f"--group-by {group_by}: already the --x option; choose another")
    filters = parse_where(where, options, name)
    source, key, label, log = Y_AXES[y]
    if source != "history" or key not in header:
        raise InputError(f"--y {y}: {name} has no {label} column (sweep plots use the history columns: loss, "
                         "grad-norm, distance, ...)")
    kept = [r for r in rows if r["status"] != "failed" and all(_same(r.get(k, ""), v) for k, v in filters)]
    if rows and not kept:
        raise InputError(f"--where {' '.join(where or [])}: no run of {name} matches")
    last: dict[str, dict[str, str]] = {}
    for r in kept:  # each run's last row holding a value
        if r.get(key, "") != "" and (r["run_id"] not in last or float(r["iter"]) >= float(last[r["run_id"]]["iter"])):
            last[r["run_id"]] = r
    if not last:
        raise InputError(f"--y {y}: {name} holds no {label} values")
    order = list(dict.fromkeys(r[option] for r in last.values()))
    try:
        where_x = {v: float(v) for v in order}
        numeric = True
    except ValueError:
        where_x = {v: float(i) for i, v in enumerate(order)}
        numeric = False
    lines: dict[str, dict[str, list[float]]] = {}
    split = _split_by(list(last.values()), parameters, lambda r: (r[option], r.get(group_by, "all") if group_by
                                                                   else "all"), (option, group_by))
    line_members: dict[str, list[dict[str, str]]] = {}
    for r in last.values():
        g = " | ".join([r.get(group_by, "all") if group_by else "all",
                        *(f"{c.replace('_', '-')} = {r.get(c, '')}" for c in split)])
        lines.setdefault(g, {}).setdefault(r[option], []).append(float(r[key]))
        line_members.setdefault(g, []).append(r)
    averaged = [c for c in options if c not in (option, group_by)
                and len({r.get(c, "") for r in last.values()}) > 1
                and any(len({r.get(c, "") for r in last.values() if r[option] == v
                             and (not group_by or r.get(group_by) == g)}) > 1
                        for g in lines for v in lines[g])]
    if "seed" in averaged and "repeat" in averaged:
        averaged.remove("repeat")
    fig, ax = subplots(figsize=(6.4, 4.4))
    allv = []
    for i, g in enumerate(sorted(lines, key=_lines_key)):
        vs = sorted(lines[g], key=lambda v: where_x[v])
        xs = np.array([where_x[v] for v in vs])
        mean = np.array([np.mean(lines[g][v]) for v in vs])
        std = np.array([np.std(lines[g][v]) for v in vs])
        first, *rest = g.split(" | ")
        ax.errorbar(xs, mean, yerr=std, marker=MARKERS[i % len(MARKERS)], capsize=3, color=f"C{i % 10}",
                    linestyle=line_style(i),
                    label=", ".join([_line_name(group_by, first, line_members[g]), *rest]))
        allv.extend(mean[np.isfinite(mean)])
    if numeric:
        xs_all = [where_x[v] for v in order]
        if _geometric(xs_all):
            ax.set_xscale("log")
            if all(float(v).is_integer() for v in xs_all):  # the grid's own values as ticks (1, 5, 20)
                ax.set_xticks(sorted(set(xs_all)), [fmt_tick(v) for v in sorted(set(xs_all))])
                ax.minorticks_off()
    else:
        ax.set_xticks([where_x[v] for v in order], order, rotation=30, ha="right", fontsize=8)
    ax.set_xlabel(option.replace("_", "-"))
    ax.set_ylabel(f"final {label}")
    if log and allv and min(allv) > 0 and max(allv) / min(allv) > 20:
        ax.set_yscale("log")
    counts = [len(v) for g in lines.values() for v in g.values()]
    lo, hi = min(counts), max(counts)
    count = f"{lo}" if lo == hi else f"{lo}-{hi}"
    what = f"mean over {count} runs per point" + (f", averaged over {', '.join(averaged)}" if averaged else "")
    what += "; bars: one standard deviation" if hi > 1 else ""
    if filters:
        what = f"{', '.join(f'{k} = {v}' for k, v in filters)}: {what}"
    fig.suptitle(f"{sweep_subject(list(last.values()))}\n{what}", fontsize=9)
    legend_below(fig)
    return fig


def fmt_tick(v: float) -> str:
    return f"{int(v)}" if float(v).is_integer() else f"{v:g}"


def _sort_key(v: str):
    try:
        return (0, float(v), v)
    except ValueError:
        return (1, 0.0, v)


#: the options that make a run's composition of stages (a line grouped by a stage is named by the composition)
STAGE_OPTIONS = ("method", "compressor", "error_feedback", "aggregate")
NAMED_BY_COMPOSITION = ("compressor", "error_feedback", "aggregate")


def composition_name(method: str, compressor: str, error_feedback: str = "none", aggregate: str | None = None,
                     local_steps: str | int | None = None) -> str:
    """A run's composition named by the method alias that composes it (``topk-ef (top-k:100)`` for SGD with
    top-k and error feedback; ``FedAvg (sgd)`` for SGD's identity messages averaged after H > 1 local steps), or
    the method and the stages it recomposes (``signsgd + noisy-sign:0.03``)."""
    from signsim import methods

    reg = methods.registry()
    ef = error_feedback or "none"
    name = compressor.split(":")[0]
    own = reg.get(method)
    fits = [a for a in reg.values() if a.compressor.split(":")[0] == name and a.error_feedback == ef]
    alias = own if own in fits else (fits[0] if fits else None)
    if alias is None:
        text = f"{method} + {compressor}" + (f" + {ef}" if ef != "none" else "")
    else:
        text = alias.name + ("" if compressor == alias.compressor or ":" not in compressor else f" ({compressor})")
        if aggregate and aggregate != alias.default_aggregate:
            text += f", {aggregate}"
    try:
        many = local_steps is not None and int(float(local_steps)) > 1
    except ValueError:
        many = False
    if many and name == "identity" and (aggregate or "mean") == "mean" and ef == "none":
        text = f"FedAvg ({text})"
    return text


def _line_name(group_by: str | None, value: str, members: list[dict[str, str]]) -> str:
    """The legend label of a line: a stage option's line by its runs' composition when they share one, otherwise
    ``option = value``."""
    if group_by in NAMED_BY_COMPOSITION and members and all(k in members[0] for k in ("method", "compressor")):
        comps = {tuple(r.get(k, "") for k in (*STAGE_OPTIONS, "local_steps")) for r in members}
        steps = {c[-1] for c in comps}
        if len({c[:-1] for c in comps}) == 1:
            m, c, e, a = next(iter(comps))[:-1]
            most = max((float(v) for v in steps if _is_number(v)), default=None)  # FedAvg: H > 1 at some point
            return composition_name(m, c, e or "none", a or None, most)
    return f"{group_by} = {value}" if group_by else "all runs"


def _is_number(v: str) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True


def _split_by(rows: list[dict[str, str]], parameters: list[str], line_of, taken: tuple) -> list[str]:
    """The swept options (grid and zip keys, not seed or repeat) that vary within a line (``line_of(row)``): a
    line is never averaged over them, it is split by them instead."""
    out = []
    for c in (p.replace("-", "_") for p in parameters):
        if c in taken or c in ("seed", "repeat"):
            continue
        seen: dict[Any, set] = {}
        for r in rows:
            seen.setdefault(line_of(r), set()).add(r.get(c, ""))
        if any(len(v) > 1 for v in seen.values()):
            out.append(c)
    return out


def _geometric(values: list[float]) -> bool:
    """Positive values that a log axis shows better: spanning more than two decades, or (three or more) whose
    gaps are more even on a log scale than on a linear one (1, 5, 20 local steps; not 1, 2, 3, 4)."""
    v = np.unique(np.asarray(values, dtype=float))
    if v.size < 2 or v.min() <= 0:
        return False
    if v.max() / v.min() > 100:
        return True
    if v.size < 3 or v.max() / v.min() < 4:
        return False

    def spread(gaps: np.ndarray) -> float:
        return float(np.std(gaps) / np.mean(gaps))

    return spread(np.diff(np.log(v))) < spread(np.diff(v))


def sweep_subject(rows: list[dict[str, str]]) -> str:
    """What a sweep's figure shows, for its title: the problem(s) and the communication budget when there is one."""
    probs = list(dict.fromkeys(f"{r.get('problem', '?')}" + (f" (d = {r['dim']})" if r.get("dim") else "")
                               for r in rows))
    text = ", ".join(probs) if len(probs) <= 3 else f"{len(probs)} problems"
    budgets = sorted({float(r["budget_mb"]) for r in rows if r.get("budget_mb")} |
                     {float(r["budget_bits"]) / 8e6 for r in rows if r.get("budget_bits")})
    if budgets:
        text += ", budget " + ", ".join(f"{b:.4g}" for b in budgets) + " MB (up + down)"
    return text


def runs_subject(docs: list[dict[str, Any]]) -> str:
    """The problems of runs and their budget, when they had one, for a title."""
    names = problems_of(docs)
    text = ", ".join(names) + ("  [different problems: values not comparable]" if len(names) > 1 else "")
    from signsim.accounting import budget_bits

    budgets = sorted({budget_bits(d["config"]) / 8e6 for d in docs if isinstance(d.get("config"), dict)
                      and math.isfinite(budget_bits(d["config"]))})
    if budgets:
        text += ", budget " + ", ".join(f"{b:.4g}" for b in budgets) + " MB (up + down)"
    return text


@styled
def rho_sorted(doc: dict[str, Any]):
    """Per-coordinate success probabilities, sorted, with their intervals and the 1/2 line."""
    rho = np.array([np.nan if v is None else v for v in doc["rho"]], dtype=float)
    lo = np.array([np.nan if v is None else v for v in doc["rho_low"]], dtype=float)
    hi = np.array([np.nan if v is None else v for v in doc["rho_high"]], dtype=float)
    keep = np.isfinite(rho)
    order = np.argsort(rho[keep], kind="stable")
    r, l_, h = rho[keep][order], lo[keep][order], hi[keep][order]
    fig, ax = subplots(figsize=(6.4, 4.2))
    ranks = np.arange(r.size)
    ax.fill_between(ranks, l_, h, alpha=0.3, step="mid", label="interval")
    ax.plot(ranks, r, drawstyle="steps-mid", label=f"rho_i ({doc['method_of_estimate']})")
    ax.axhline(0.5, color="red", linestyle="--", linewidth=1, label="1/2 (SPB needs rho_i > 1/2 when no message is 0)")
    ax.set_xlabel("coordinates, sorted by rho_i")
    ax.set_ylabel("success probability rho_i")
    ax.set_ylim(min(0.0, np.nanmin(l_) if l_.size else 0) - 0.02, 1.02)
    ax.set_title(f"{doc['problem']['name']} {point_words(doc['point'])}, tau = {doc['tau']}: SPB {doc['verdict']}")
    left_out = int((~keep).sum())
    if left_out:  # rho_i is undefined where g_i = 0: said in the figure, not dropped silently
        ax.text(0.01, 0.02, f"{left_out} of {rho.size} coordinates with g_i = 0 left out (no sign to agree with)",
                transform=ax.transAxes, fontsize=8, ha="left", va="bottom", color="dimgrey")
    legend_below(fig)
    return fig


@styled
def speedup_predicted(doc: dict[str, Any]):
    fig, ax = subplots(figsize=(6.4, 4.2))
    B = np.array([r["B"] for r in doc["speedup"]], dtype=float)
    ax.plot(B, B, ":", color="grey", label="linear speedup")
    B_S = doc["B_S"]
    name = "none (no finite variance)" if doc.get("sigma_note") else "inf" if B_S is None else f"{B_S:.3g}"
    ax.plot(B, [r["predicted"] for r in doc["speedup"]], marker="o", label=f"predicted, B_S = {name}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("batch size B")
    ax.set_ylabel("speedup over B = 1")
    ax.set_title(f"{doc['problem']['name']} {point_words(doc['point'])} ({doc['method_of_estimate']})")
    legend_below(fig)
    return fig


@styled
def speedup_measured(doc: dict[str, Any]):
    fig, ax = subplots(figsize=(6.4, 4.2))
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
    legend_below(fig)
    return fig


@styled
def diversity_dimension(doc: dict[str, Any]):
    """B_S against d on log-log axes, every seed a point, the fitted line and its slope (docs/theory.md §10.3)."""
    fig, ax = subplots(figsize=(6.4, 4.2))
    rows = [r for r in doc["rows"] if r["B_S"] is not None and math.isfinite(r["B_S"])]
    d = np.array([r["d"] for r in rows], dtype=float)
    b = np.array([r["B_S"] for r in rows], dtype=float)
    ax.plot(d, b, "o", alpha=0.7, label="B_S (one point per seed)")
    grid = np.geomspace(d.min(), d.max(), 50)
    if doc["slope"] is not None:  # None: fewer than two dimensions measured (an interrupted experiment)
        intercept = np.mean(np.log(b) - doc["slope"] * np.log(d))
        ax.plot(grid, np.exp(intercept) * grid ** doc["slope"], "-", color="black",
                label=f"fit: slope {doc['slope']:.2f} +- {doc['slope_se']:.2f}")
    ax.plot(grid, b.min() * grid / d.min(), ":", color="grey", label="proportional to d (slope 1)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("features d")
    ax.set_ylabel("batch-size bound B_S at the point")
    e = doc["experiment"]
    ax.set_title(f"synthetic:glm, n = {doc['rows'][0]['n']} training samples, {e['features']} features, "
                 f"{e['labels']} labels", fontsize=10)
    legend_below(fig)
    return fig


@styled
def diversity_heuristics(doc: dict[str, Any]):
    """Left: B_S of the raw per-sample gradients and after each transformation (bars, log scale). Right, when
    measured: the speedup of mini-batch SGD against B with and without the transformation, beside the speedups
    predicted from each B_simple."""
    measured = doc.get("measured")
    fig, axes = subplots(1, 2 if measured else 1, figsize=(11 if measured else 6.4, 4.2), squeeze=False)
    ax = axes[0, 0]
    names = [r["transform"] for r in doc["rows"]]
    ax.bar(range(len(names)), [r["B_S"] for r in doc["rows"]], color=["grey"] + ["C0"] * (len(names) - 1))
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("B_S^T = n E[A] / E[C] (over the transformation)")
    ax.set_title(f"diversity {point_words(doc['point'])} (n = {doc['n']})", fontsize=10)
    if measured:
        ax2 = axes[0, 1]
        for label in dict.fromkeys(r["transform"] for r in measured):
            rows = [r for r in measured if r["transform"] == label]
            line = ax2.plot([r["B"] for r in rows], [np.nan if r["measured_speedup"] is None else r["measured_speedup"]
                                                    for r in rows], marker="o", label=f"measured, {label}")[0]
            pred = next((r for r in doc["rows"] if r["transform"] == label), None)
            if pred is not None:
                Bs = [s["B"] for s in pred["speedup"] if s["B"] <= max(r["B"] for r in rows)]
                ax2.plot(Bs, [s["predicted"] for s in pred["speedup"] if s["B"] in Bs], "--",
                         color=line.get_color(), label=f"predicted, {label}")
        ax2.set_xscale("log", base=2)
        ax2.set_yscale("log", base=2)
        ax2.set_xlabel("batch size B")
        ax2.set_ylabel("speedup T_1 / T_B (iterations to target)")
        ax2.set_title(f"target loss {doc['experiment']['target_loss']:g}", fontsize=10)
    legend_below(fig)
    return fig


@styled
def bound_overview(doc: dict[str, Any]):
    """Left: each bound against K (bounds whose theorem matches the run solid, the others dotted); with an
    overlay, the run's left-hand sides as it went (running mean, min or squared mean up to K), once per
    distinct quantity, in the colour of a bound it is compared with (a cross at the end: a matching bound
    exceeded). Right: E<g, vote> / ||g||_1 against M beside the exponential lower bound. One legend below."""
    fig, (a1, a2) = subplots(1, 2, figsize=(11, 4.6))
    drawn: dict[str, Any] = {}
    colours: dict[str, str] = {}  # the quantity a matching bound bounds -> that bound's colour
    first_colour: dict[str, str] = {}
    curves: list[tuple[np.ndarray, np.ndarray, list[dict[str, Any]]]] = []  # bounds with equal values: one line
    for r in doc["bounds"]:
        ks = np.array([v["K"] for v in r["values"]], dtype=float)
        ys = np.array([np.nan if v["bound"] is None else v["bound"] for v in r["values"]], dtype=float)
        ys[ys <= 0] = np.nan
        same = next((c for c in curves if c[0].shape == ks.shape and np.array_equal(c[0], ks)
                     and np.allclose(c[1], ys, rtol=1e-12, equal_nan=True)), None)
        if same is None:
            curves.append((ks, ys, [r]))
        else:
            same[2].append(r)
    for ks, ys, rs in curves:
        matches = any(r["matches_run"] for r in rs)
        label = " = ".join(r["label"] + (" *" if r["derived"] else "") for r in rs)
        line = a1.plot(ks, ys, "-" if matches else ":", label=label)[0]
        for r in rs:
            if r["matches_run"]:
                colours.setdefault(r["lhs"], line.get_color())
            first_colour.setdefault(r["lhs"], line.get_color())
    overlay = "overlay" in doc
    for r in doc["bounds"]:
        if not overlay or r.get("observed") is None or r["lhs"] in drawn or (colours and r["lhs"] not in colours):
            continue  # the run's quantities that a matching bound bounds; all of them when none matches
        colour = colours.get(r["lhs"]) or first_colour[r["lhs"]]
        exceeded = any(b.get("exceeded") and b["lhs"] == r["lhs"] for b in doc["bounds"])
        run = r.get("observed_running") or [{"K": doc["overlay"]["iters_done"], "value": r["observed"]}]
        ks = np.array([p["K"] for p in run], dtype=float)
        vs = np.array([np.nan if p["value"] is None else p["value"] for p in run], dtype=float)
        vs[vs <= 0] = np.nan
        twin = next((line for line in drawn.values() if np.array_equal(line.get_xdata(), ks)
                     and np.allclose(line.get_ydata(), vs, rtol=1e-12, equal_nan=True)), None)
        if twin is not None:  # e.g. rho and rho_M with M = 1: one curve, both names
            twin.set_label(f"{twin.get_label()} = {r['lhs']}")
            drawn[r["lhs"]] = twin
            continue
        drawn[r["lhs"]] = a1.plot(ks, vs, "-", color=colour, linewidth=2.2, alpha=0.8,
                                  label=f"this run: {r['lhs']}" + ("" if colours else " (no bound matches the run)"))[0]
        a1.plot(ks[-1:], vs[-1:], "x" if exceeded else "o", color=colour, markersize=8)
    a1.set_xscale("log")
    a1.set_yscale("log")
    a1.set_xlabel("iterations K")
    a1.set_ylabel("bound on its left-hand side")
    a1.set_title("bounds: solid match the run, dotted do not" + ("; thick: the run so far" if drawn else ""))
    mt = doc["majority_table"]["rows"]
    M = [r["M"] for r in mt]
    a2.plot(M, [np.nan if r["ratio"] is None else r["ratio"] for r in mt], drawstyle="steps-post", marker=".",
            label="E<g, vote> / ||g||_1 against M")
    a2.plot(M, [np.nan if r["lower_bound"] is None else r["lower_bound"] for r in mt], "--",
            label="lower bound 1 - exp(-(2 rho - 1)^2 l)")
    a2.set_xlabel("workers M")
    a2.set_ylabel("noise reduction")
    a2.set_ylim(0, 1.02)
    a2.set_title("majority vote: 2l - 1 and 2l workers are equal")
    fig.suptitle(f"{doc['problem']['name']} (d = {doc['problem']['dim']})" + ("" if not overlay else
                 f", run of {doc['overlay']['iters_done']} iterations ({doc['overlay']['status']})"), fontsize=10)
    legend_below(fig)
    return fig


#: run options that ``--x`` can put on the horizontal axis, one point per run
FINAL_AXES = ("workers", "byzantine", "batch-size")


@styled
def final_against(docs: list[dict[str, Any]], option: str, y: str):
    """One point per run against a run option: the number of workers M (log axis when it spans more than two
    decades), the fraction of Byzantine workers b / M, or the batch size tau (log axis; a full local batch at
    tau = the mean of the workers' shard sizes, n_m). The value is the run's
    final one for history quantities and the average over the run for tracked ones (SPB fraction, rho-norm,
    B_S), whose single values are noisy. Runs whose noise models differ get one line each."""
    fig, ax = subplots(figsize=(6.4, 4.2))
    tracked = Y_AXES[y][0] != "history"

    def value(d: dict[str, Any]) -> float:
        ys = series(d, "iter", y)[1]
        ys = ys[np.isfinite(ys)]
        if ys.size == 0:
            return float("nan")
        return float(ys.mean()) if tracked else float(ys[-1])

    def where(d: dict[str, Any]) -> float:
        c = d["config"]
        if option == "byzantine":
            return c["byzantine"] / c["workers"]
        if option == "batch-size" and c["batch_size"] == "full":  # the rows a full local batch averages, tau = n_m
            sizes = (d.get("problem") or {}).get("shard_sizes") or []
            return float(np.mean(sizes)) if sizes else float("nan")
        return c["batch_size" if option == "batch-size" else option]

    noises = list(dict.fromkeys(d["config"].get("noise") or "none" for d in docs))
    for nz in noises:
        pts = sorted((where(d), value(d)) for d in docs if (d["config"].get("noise") or "none") == nz)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                label=f"noise {nz}" if len(noises) > 1 else None)
    xs = [where(d) for d in docs]
    ax.set_xlabel({"byzantine": "fraction of Byzantine workers b / M", "workers": "workers M",
                   "batch-size": "batch size tau"}[option])
    if option != "byzantine" and min(xs) > 0 and max(xs) / min(xs) > (100 if option == "workers" else 4):
        ax.set_xscale("log", base=10 if option == "workers" else 2)
    c = docs[0]["config"]
    ax.set_title(f"{c['method']} on {c['problem']}" + (f", noise {noises[0]}" if len(noises) == 1 else "")
                 + f", {c['iters']} iterations", fontsize=10)
    ax.set_ylabel(("mean over the run of " if tracked else "final ") + Y_AXES[y][2])
    vals = [p for p in (value(d) for d in docs) if math.isfinite(p)]
    if Y_AXES[y][3] and vals and all(v > 0 for v in vals) and max(vals) / min(vals) > 20:
        ax.set_yscale("log")
    if y == "spb-fraction" or y.endswith("accuracy"):
        ax.set_ylim(-0.02, 1.02)
    if len(noises) > 1:
        legend_below(fig)
    return fig


@styled
def robustness_heatmap(report: dict[str, Any], subject: str = ""):
    """A ``[robustness]`` sweep's worst case (``signsim.sweep.robustness.worst_case``): one panel per method,
    f down and the heterogeneity levels across, each cell coloured by the worst final metric over the attacks
    (one colour scale for every panel; red is worse) and labelled with it and the attack that caused it; a run
    that diverged or failed is a grey cell so labelled."""
    import matplotlib
    from matplotlib import colors

    methods, fs = report["methods"], report["byzantine"]
    levels, het = report["heterogeneity"]["values"], report["heterogeneity"]["option"]
    metric, worst = report["metric"], report["worst"]
    cells = {(c["method"], c["byzantine"], repr(c["heterogeneity"])): c for c in report["cells"]}
    values = [c["worst"] for c in report["cells"] if c["status"] == "ok" and c["worst"] is not None]
    scale = matplotlib.colormaps["RdYlGn" if worst == "lowest" else "RdYlGn_r"]
    # light enough to read labels on; a diverged or failed run's cell grey
    cmap = colors.ListedColormap(scale(np.linspace(0.05, 0.95, 256))).with_extremes(bad="0.8")
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    norm = (colors.LogNorm(lo, hi) if worst == "highest" and lo > 0 and hi / lo > 100
            else colors.Normalize(lo, hi if hi > lo else lo + 1e-12))
    cols = min(len(methods), 4)
    rows_ = -(-len(methods) // cols)
    fig, axes = subplots(rows_, cols, figsize=(2.0 + 1.3 * len(levels) * cols, 0.6 + 0.75 * len(fs) * rows_),
                         squeeze=False, sharex=True, sharey=True)
    image = None
    for i, ax in enumerate(axes.flat):
        if i >= len(methods):
            ax.set_visible(False)
            continue
        m = methods[i]
        grid = np.full((len(fs), len(levels)), np.nan)
        for a, f in enumerate(fs):
            for b, level in enumerate(levels):
                c = cells.get((m, f, repr(level)))
                if c is None:
                    continue
                if c["status"] == "ok" and c["worst"] is not None:
                    grid[a, b] = c["worst"]
                label = (f"{c['worst']:.3g}" if c["status"] == "ok" else c["status"]) if c["status"] != "missing" \
                    else "missing"
                text = label + (f"\n{c['attack']}" if c["attack"] and c["status"] != "missing" else "") \
                    + ("" if c["complete"] else "\n(incomplete)")
                ax.text(b, a, text, ha="center", va="center", fontsize=7)
        image = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, norm=norm, aspect="auto")
        ax.set_title(m, fontsize=9)
        ax.set_xticks(range(len(levels)), [str(v) if v is not None else "-" for v in levels], fontsize=7,
                      rotation=20 if max(len(str(v)) for v in levels) > 8 else 0)
        ax.set_yticks(range(len(fs)), [str(f) for f in fs], fontsize=8)
        ax.grid(False)
        if i % cols == 0:
            ax.set_ylabel("Byzantine workers f")
        if i + cols >= len(methods):  # no panel below (the last row, or above its empty slots): the axis is shown
            ax.set_xlabel(het.replace("_", "-") if het else "heterogeneity")
            ax.xaxis.set_tick_params(labelbottom=True)
    if image is not None:
        fig.colorbar(image, ax=list(axes.flat), shrink=0.8, label=f"worst final {metric} ({worst} is worst)")
    fig.suptitle(f"worst case over the attacks ({', '.join(report['attacks'])})"
                 + (f": {subject}" if subject else ""), fontsize=10)
    return fig
