"""Rich tables for the terminal (written to stderr; stdout is kept for ``--json``)."""

from __future__ import annotations

import os
import re
import sys
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from signsim import history
from signsim.render import where


def fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, int) and abs(v) >= 10_000:
        return f"{v:,}"
    return str(v)


def human_bits(bits: int) -> str:
    for unit, size in (("GB", 8e9), ("MB", 8e6), ("kB", 8e3)):
        if bits >= size:
            return f"{bits / size:.3g} {unit}"
    return f"{bits} bit"


def bits_text(bits: int) -> str:
    """A bit count, with its size in kB / MB / GB once it is at least a kilobyte ("6000", "16,000 (2 kB)")."""
    return fmt(bits) if bits < 8e3 else f"{fmt(bits)} ({human_bits(bits)})"


def wrap_title(title: str, width: int) -> list[str]:
    """Break ``title`` into lines of at most ``width`` characters, only after ", ", "; " or ": " (and at "(" of
    a parenthesis that does not fit), so that no expression such as "d = 31" is split; a part longer than the
    width gets a line of its own."""
    parts = _split_title(title)
    lines: list[str] = []
    line = ""
    for part in parts:
        if line and len(line) + len(part) > width:
            lines.append(line.rstrip())
            line = part.lstrip()
        else:
            line += part
    if line:
        lines.append(line.rstrip())
    return lines


def _split_title(title: str) -> list[str]:
    """Pieces of a title, each ending after ", ", "; " or ": " (or before " ("), never inside [...] or <...>."""
    parts, start, depth = [], 0, 0
    for i, c in enumerate(title):
        nxt = title[i + 1] if i + 1 < len(title) else ""
        prev = title[i - 1] if i else ""
        if c == "[" or (c == "<" and nxt not in " ="):
            depth += 1
        elif (c == "]" or (c == ">" and prev not in " -" and nxt != "=")) and depth:
            depth -= 1
        elif depth == 0 and c in ",;:" and nxt == " ":
            parts.append(title[start:i + 2])
            start = i + 2
        elif depth == 0 and c == " " and nxt == "(" and i + 1 > start:
            parts.append(title[start:i + 1])
            start = i + 1
    parts.append(title[start:])
    return [p for p in parts if p]


#: the one style of every table: a rule under the bold header, no outer box, one space between columns
STYLE = {"box": box.SIMPLE_HEAD, "show_edge": False, "pad_edge": False, "padding": (0, 1, 0, 0),
         "header_style": "bold"}


def new_table(title: str | None = None, header: bool = True) -> Table:
    """A table in the style of every signsim table (``STYLE``)."""
    return Table(title=title, show_header=header, **STYLE)


def emit(console: Console, item: Any) -> None:
    """Print a table (its title above it, wrapped at the console width between expressions) or a line of text,
    with no trailing spaces on any line (piped output stays clean)."""
    wide = _fit(console, item) if isinstance(item, Table) else None
    width = console.width
    with console.capture() as captured:
        if isinstance(item, Table) and item.title:
            title, item.title = str(item.title), None
            for line in wrap_title(title, console.width):
                console.print(Text(line, style="italic" if console.is_terminal else ""), soft_wrap=True)
        if wide is not None:  # narrower than its words: printed wider than the console, no word cut
            console.width = wide
        try:
            console.print(item)
        finally:
            console.width = width
    text = captured.get()
    console.file.write("\n".join(line.rstrip() for line in text.split("\n")))
    console.file.flush()


def _fit(console: Console, table: Table) -> int | None:
    """Nothing is cut with an ellipsis, and no word (no number) is split: the width to print ``table`` at when
    even its longest words do not fit the console (None when they do)."""
    for column in table.columns:
        column.overflow = "fold"
    return _allocate(console, table)


def _allocate(console: Console, table: Table) -> int | None:
    """Column widths for a table wider than the console: each column gets its longest word (no_wrap columns
    their whole text) and the spare width goes to the columns in proportion to what they lack; so text wraps at
    spaces and no word is cut (Rich's own shrinking can cut words or crop the last columns). When the longest
    words alone are wider than the console (a narrow pipe), a column of numbers still gets its longest number
    (a number is never split) and only the words of text columns longer than TEXT_FLOOR fold; if even that does
    not fit, the table is printed as wide as it needs (the width returned), wider than the console."""
    wide = console.options.update_width(10**6)
    sizes = [table._measure_column(console, wide, c) for c in table.columns]
    whole = table.__rich_measure__(console, wide)
    if whole.maximum <= console.width:
        return None
    overhead = whole.maximum - sum(m.maximum for m in sizes)
    lows = [m.maximum if c.no_wrap else m.minimum for m, c in zip(sizes, table.columns, strict=True)]
    room = console.width
    if console.width - overhead - sum(lows) < 0:  # the longest words do not fit side by side
        lows = [low if c.no_wrap or _numbers(c) else min(low, TEXT_FLOOR)
                for low, c in zip(lows, table.columns, strict=True)]
        room = max(console.width, overhead + sum(lows))
    spare = room - overhead - sum(lows)  # what the columns get beyond their floors
    lacks = [m.maximum - low for m, low in zip(sizes, lows, strict=True)]
    gets = [0] * len(lacks)
    needy = sorted(range(len(lacks)), key=lambda i: lacks[i])
    while needy and spare > 0:  # equal shares, a column taking no more than it lacks (max-min fairness)
        share = max(spare // len(needy), 1)
        i = needy.pop(0)
        gets[i] = min(lacks[i], share)
        spare -= gets[i]
    for column, low, get in zip(table.columns, lows, gets, strict=True):
        column.width = low + get - table._get_padding_width(column._index)
    return room if room > console.width else None


#: in a table too wide for the console even at its longest words, a text column's words longer than this fold
TEXT_FLOOR = 8
_NUMBER = re.compile(r"^[-+]?(\d[\d,]*\.?\d*|\.\d+)(e[-+]?\d+)?%?$|^-$|^[-+]?inf$|^nan$", re.IGNORECASE)


def _numbers(column) -> bool:
    """Is every word of ``column``'s cells a number (or "-")? Such a column is never folded."""
    words = [w for cell in column._cells for w in str(cell).replace("[", " ").replace("]", " ").replace(",", " ")
             .split()]
    return bool(words) and all(_NUMBER.match(w) for w in words)


def _glue(text: str) -> str:
    """"M = 8" -> "M=8": a wrapped table cell breaks only between expressions."""
    return re.sub(r" ?(<=|>=|=) ?", r"\1", text)


def _min_width(texts) -> int:
    """The longest word among ``texts``: a column this wide wraps at spaces and never cuts a word."""
    return max((len(w) for t in texts for w in str(t).split()), default=1)


def budget_message(doc: dict[str, Any]) -> str | None:
    """Where a run stopped at its communication budget (None for any other status)."""
    if doc.get("status") != "budget":
        return None
    fin = doc["final"]
    return (f"stopped at the budget after {fin['iters_done']} iterations, "
            f"{(fin['bits_up'] + fin['bits_down']) / 8e6:.4g} MB")


def run_summary(doc: dict[str, Any]) -> Table:
    cfg, fin = doc["config"], doc["final"]
    title = (f"{cfg['method']} on {doc['problem']['name']} (d = {doc['problem']['dim']}), "
             f"M = {cfg['workers']}, K = {cfg['iters']}: {budget_message(doc) or doc['status']}")
    table = new_table(title)
    table.add_column("quantity")
    table.add_column("start", justify="right")
    table.add_column("final", justify="right")
    first = doc["history"][0] if doc["history"] else {}
    rows = [(c.summary, c.field) for c in history.COLUMNS if c.summary]
    for label, key in rows:
        if key == "distance" and not doc["problem"]["x_star_known"]:
            continue
        if key not in fin and key not in first:  # a column this run does not record (the clock's, without one)
            continue
        table.add_row(label, fmt(first.get(key)), fmt(fin.get(key)))
    table.add_row("iterations", "0", fmt(fin.get("iters_done")))
    table.add_row("bits up (all workers)", "0", bits_text(fin["bits_up"]))
    table.add_row("bits down (all workers)", "0", bits_text(fin["bits_down"]))
    per = doc.get("bits_per_iter") or {}
    for way in ("up", "down"):
        mean = per.get(f"{way}_mean")
        if mean is not None and mean != per.get(way):  # a message size that varies: measured beside declared
            worst = f", worst {fmt(per[f'{way}_worst'])}" if per.get(f"{way}_worst") is not None else ""
            table.add_row(f"bits {way} per iteration", "", f"{fmt(round(mean))} measured mean{worst} "
                          f"(declared upper bound {fmt(per[way])})")
    for label, value in system_rows(doc):
        table.add_row(label, "", value)
    table.add_row("wall time", "", f"{fin['wall_time']:.3f} s")
    return table


def system_rows(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """The summary's rows for the simulated clock (its parts and the workers' idle time) and the target."""
    rows = []
    sysrep = doc.get("system")
    if sysrep is not None and sysrep["time"] > 0:
        parts = ", ".join(f"{k} {100 * v:.3g}%" for k, v in sysrep["shares"].items())
        rows.append(("time on the critical path", parts))
        if "idle" in sysrep:
            idle = sysrep["idle"]
            rows.append(("idle per worker", f"mean {fmt(idle['mean'])} s, max {fmt(idle['max'])} s"))
    target = doc.get("target")
    if target is not None:
        what = f"{target['metric']} {'<=' if target['metric'].endswith('loss') else '>='} {fmt(target['value'])}"
        if not target["reached"]:
            rows.append((f"target {what}", "not reached"))
        else:
            at = f"iteration {target['iter']:,}"
            if target.get("time") is not None:
                at += f", {fmt(target['time'])} s"
            rows.append((f"target {what}", f"{at}, {bits_text(target['bits_up'] + target['bits_down'])} up + down"))
    return rows


def split_rows(h: dict[str, Any] | None) -> list[tuple[str, str]]:
    """The split's sizes and label counts in a heterogeneity report (``signsim.data.splits.report``), as two rows
    (none without a split)."""
    sp = (h or {}).get("split")
    if not sp:
        return []
    who = "label group" if sp["name"] == "split-batch" else "worker"
    rows = [(f"samples per {who}", f"{sp['size_min']} to {sp['size_max']} (mean {fmt(sp['size_mean'])})")]
    if "labels_min" in sp:
        rows.append((f"labels per {who}", f"{sp['labels_min']} to {sp['labels_max']} of {len(sp['classes'])}"))
    return rows


def split_line(doc: dict[str, Any]) -> str | None:
    """One line under a run's summary on split data: the split's sizes, labels per worker and zeta^2 at x_0."""
    h = doc.get("heterogeneity")
    rows = split_rows(h)
    if not rows:
        return None
    zeta = f"; zeta^2 at x_0 = {fmt(h['zeta_sq'])}" if h.get("zeta_sq") is not None else ""
    return (f"split {h['split']['name']}: " + ", ".join(f"{label} {value}" for label, value in rows) + zeta
            + " (the counts per worker: heterogeneity.split in the results)")


#: the widest the name column of ``signsim list`` grows (a longer spec form folds onto a second line)
LISTING_NAME_WIDTH = 26


def listing(sections: dict[str, list[tuple[str, str]]]) -> list[Table]:
    tables = []
    for title, rows in sections.items():
        t = new_table(title, header=False)
        # a long spec form (alie-opt[:EVALS[:START[:DELTA[:RATIO]]]]) folds rather than narrow the descriptions
        t.add_column("name", style="bold", max_width=LISTING_NAME_WIDTH, overflow="fold")
        t.add_column("description")
        for name, text in rows:
            t.add_row(name, text)
        tables.append(t)
    return tables


#: the width of a console that is not a terminal and was given no COLUMNS: as wide as any table needs
PIPED_WIDTH = 10_000


def stderr_console() -> Console:
    """The console of signsim's tables and notes (stderr: stdout carries --json)."""
    return output_console(stderr=True)


def output_console(stderr: bool = False) -> Console:
    """A console at the terminal's width (or at COLUMNS when that is set); piped or redirected without COLUMNS, at
    ``PIPED_WIDTH``, so that a file or another program gets each table row and each note as one whole line, never
    wrapped at an assumed 80 columns."""
    stream = sys.stderr if stderr else sys.stdout
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        terminal = False
    if terminal or os.environ.get("COLUMNS", "").strip():
        return Console(stderr=stderr)
    return Console(stderr=stderr, width=PIPED_WIDTH)


def comparison_table(doc: dict[str, Any]) -> Table:
    """Every run's final values, and its loss (and test accuracy) at the smallest total communication."""
    c = doc["comparison"]
    acc = any(r["final_test_acc"] is not None for r in c["rows"])
    if c.get("budget_given"):  # every run stopped at the budget or at its iters: its final values are at B
        table = new_table(f"runs compared at equal communication B = {c['budget_megabytes']:.4g} MB (up + down; each "
                          "run stops at the first iteration that reaches B, or at its iters)")
        cols = ["run", "iters", "MB", "final loss"] + (["final acc"] if acc else []) + ["stopped at"]
    else:
        table = new_table(f"runs compared at equal communication B = {c['budget_megabytes']:.3g} MB (up + down; the "
                          "least any run sent)")
        cols = ["run", "iters", "MB", "final loss", "loss@B"] + (["test acc@B", "final acc"] if acc else [])
        cols.append("status")
    for col in cols:
        table.add_column(col, justify="left" if col in ("run", "status", "stopped at") else "right")
    for r in c["rows"]:
        row = [r["label"], fmt(r["iters"]), f"{r['megabytes']:.3g}", fmt(r["final_loss"])]
        if c.get("budget_given"):
            stopped = {"budget": "the budget", "iters": f"iters ({fmt(r['iters'])})",
                       "stop_loss": "the stop loss"}.get(r["stopped"], r["stopped"])
            table.add_row(*row, *([_pct(r["final_test_acc"])] if acc else []), stopped)
            continue
        row.append(fmt(r["loss_at_budget"]))
        if acc:
            row += [_pct(r["test_acc_at_budget"]), _pct(r["final_test_acc"])]
        table.add_row(*row, r["status"])
    return table


def _pct(v) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"


#: at most this many workers are listed one by one; more are summarized
MAX_WORKER_ROWS = 12


def spb_report(doc: dict[str, Any]) -> list[Any]:
    """Summary table, the per-worker table (workers that differ) and the table of worst coordinates."""
    p = doc["problem"]
    summary = new_table(f"SPB {where(doc['point'])}: {p['name']} (d = {doc['dim']}), tau = {doc['tau']}, "
                    f"estimator {doc['method_of_estimate']}" + (f", S = {doc['samples']}" if doc["samples"] else ""),
                    header=False)
    summary.add_column("quantity")
    summary.add_column("value", justify="right")
    colour = {"holds": "green", "violated": "red", "inconclusive": "yellow"}[doc["verdict"]]
    samp = doc.get("sampling", {})
    l12_label = "l^{1,2} lower bound" if doc.get("l12_is_bound", True) else "l^{1,2} (not a bound here)"
    rows = [
        ("sampling", f"{samp.get('scheme', '-')}: {samp.get('description', '')}"),
        ("sign(0) in messages", doc.get("sign_zero", "-")),
        ("coordinates with g_i = 0", fmt(doc["zero_coordinates"])),
        ("coordinates where g_hat_i can be 0", fmt(doc.get("n_with_zeros"))),
        ("SPB holds / violated / inconclusive", f"{doc['n_holds']} / {doc['n_violated']} / {doc['n_inconclusive']}"),
        ("min rho_i (message agrees)", fmt(doc["rho_min"])),
        ("E<g, sign g_hat> (rho-norm)",
         f"{fmt(doc['rho_norm'])}  [{fmt(doc['rho_norm_low'])}, {fmt(doc['rho_norm_high'])}]"),
        ("||g||_1", fmt(doc["l1_norm"])),
        ("||g||_2", fmt(doc["l2_norm"])),
        (l12_label, fmt(doc["l12_norm"])),
    ]
    rnd = doc.get("round") or {}
    sampled = rnd.get("clients_per_round") is not None and rnd.get("clients_per_round") < rnd.get("workers", 0)
    if rnd.get("local_steps", 1) > 1:
        rows.insert(0, ("message", f"{rnd['message']} (local step size {fmt(rnd['local_step_size'])})"))
        rows.insert(1, ("round's law", rnd["note"]))
        rows[rows.index(next(r for r in rows if r[0].startswith("E<g, sign g_hat>")))] = (
            "E<g, sign u> (the round's rho-norm)", f"{fmt(doc['rho_norm'])}  [{fmt(doc['rho_norm_low'])}, "
            f"{fmt(doc['rho_norm_high'])}]")
    if "rho_M_norm" in doc:
        how = "each worker's own law" if doc.get("workers_differ") else "identical workers"
        who = (f"S={rnd['clients_per_round']} sampled of M={doc['workers']}, exact over the sampling" if sampled
               else f"M={doc['workers']}")
        rows.append((f"E<g, vote> (rho_M-norm, {who}, {how})", fmt(doc["rho_M_norm"])))
    for label, value in rows:
        summary.add_row(label, value)
    summary.add_row("verdict", f"[bold {colour}]{doc['verdict']}[/]")
    out: list[Any] = [summary]
    if doc.get("vote_note"):
        out.append(f"E<g, vote>: not computed: {doc['vote_note']}")
    if doc.get("sigma_note"):
        out.append(f"sigma, GSNR, the sufficient conditions and l^{{1,2}}: none: {doc['sigma_note']}")
    elif not doc.get("l12_is_bound", True):
        out.append(f"l^{{1,2}}: not a bound on ||g||_rho here: {doc['l12_note']}")
    if "per_worker" in doc:
        out.append(worker_table(doc["per_worker"]))
    worst = new_table(f"worst {len(doc['worst'])} coordinates")
    zeros = bool(doc.get("n_with_zeros"))
    mc = doc["method_of_estimate"] == "monte-carlo"
    cols = ["i", "g_i", "sigma_i", "GSNR", "P(agree)"] + (["P(0)", "P(disagree)", "rho_i"] if zeros else []) + \
        (["interval"] if mc else []) + ["status", "sufficient"]
    for col in cols:
        worst.add_column(col, justify="right" if col not in ("status", "sufficient") else "left",
                         no_wrap=col == "interval")
    suff = doc["sufficient"]
    for i in doc["worst"]:
        holds = []
        if suff["unimodal_bound"] is not None:
            holds.append("unimodal")
        if suff["tau_condition"] is not None and suff["tau_condition"][i]:
            holds.append("tau>2c")
        if suff["cantelli"] is not None and suff["cantelli"][i]:
            holds.append("cantelli")
        row = [str(i), fmt(doc["grad"][i]), fmt(_at(doc, "sigma", i)), fmt(_at(suff, "gsnr", i)),
               fmt(_at(doc, "p_agree", i))]
        if zeros:
            row += [fmt(_at(doc, "p_zero", i)), fmt(_at(doc, "p_disagree", i)), fmt(doc["rho"][i])]
        if mc:
            row.append(f"[{doc['rho_low'][i]:.3g}, {doc['rho_high'][i]:.3g}]")
        worst.add_row(*row, doc["status"][i], ", ".join(holds) or "none")
    out.append(worst)
    out.append("SPB on a coordinate: the message's sign agrees with sign g_i more often than it disagrees, "
               f"under --sign-zero {doc.get('sign_zero', 'random')} (P columns: the raw g_hat_i; rho_i: the "
               "message agrees).")
    out += [f"[yellow]warning:[/] {w}" for w in doc.get("warnings", [])]
    return out


def _at(doc: dict[str, Any], key: str, i: int) -> Any:
    v = doc.get(key)
    return None if v is None or v[i] is None else float(v[i])


def worker_table(rows: list[dict[str, Any]]) -> Table:
    """One row per worker, or (many workers) the first, the worst and a min / median / max summary."""
    t = new_table(f"per worker ({len(rows)} workers)")
    for col in ("worker", "min rho_i", "violated", "E<g, sign g_hat_m>", "||E g_hat_m - g||"):
        t.add_column(col, justify="right")

    def add(r: dict[str, Any], label: str | None = None) -> None:
        name = label or (str(r["worker"]) + (" (byzantine)" if r["byzantine"] else ""))
        t.add_row(name, fmt(r["rho_min"]), fmt(r["n_violated"]), fmt(r["rho_norm"]), fmt(r["bias"]))

    if len(rows) <= MAX_WORKER_ROWS:
        for r in rows:
            add(r)
        return t
    import numpy as np

    for r in sorted(rows, key=lambda r: r["rho_norm"])[:3]:
        add(r)
    for name, q in (("min", 0.0), ("median", 0.5), ("max", 1.0)):
        vals = {k: float(np.quantile([r[k] for r in rows if r[k] is not None] or [np.nan], q))
                for k in ("rho_min", "rho_norm", "bias")}
        t.add_row(name, fmt(vals["rho_min"]), fmt(int(np.quantile([r["n_violated"] for r in rows], q))),
                  fmt(vals["rho_norm"]), fmt(vals["bias"]))
    return t


def diversity_report(doc: dict[str, Any]) -> list[Any]:
    p = doc["problem"]
    t = new_table(f"gradient diversity {where(doc['point'])}: {p['name']} (d = {p['dim']}), estimator "
              f"{doc['method_of_estimate']}", header=False)
    t.add_column("quantity")
    t.add_column("value", justify="right")
    rows = [("n", fmt(doc["n"]) if doc["n"] is not None else "infinite (population)"),
            ("Delta_S", fmt(doc["delta_S"])),
            ("B_S = n Delta_S", "inf (stationary point)" if doc["stationary"] else fmt(doc["B_S"])),
            ("1/B_S", fmt(doc["inv_B_S"])), ("B_simple = tr(Sigma)/||G||^2", fmt(doc["B_simple"])),
            (f"largest B with B <= {doc['delta']:g} B_S + 1", fmt(doc["largest_batch"]))]
    if "between_workers" in doc:
        bw = doc["between_workers"]
        who = "label groups'" if doc.get("sampling", {}).get("scheme") == "split-batch" else "workers'"
        rows.append((f"between the {bw['groups']} {who} mean gradients: B", fmt(bw["B"])))
    h = doc.get("heterogeneity")
    if h is not None:
        rows.append(("sampling", doc["sampling"]["scheme"]))
        rows += split_rows(h)
        if h.get("max_bias") is not None:
            rel = f" ({fmt(h['relative_max_bias'])} of ||g||)" if h.get("relative_max_bias") is not None else ""
            rows.append(("max_m ||E g_hat_m - grad f||", fmt(h["max_bias"]) + rel))
            rows.append(("zeta^2 = (1/M) sum_m ||E g_hat_m - grad f||^2", fmt(h["zeta_sq"])))
        if "oracle_bias" in h:
            rows.append(("split-batch ||E g_hat - grad f||", fmt(h["oracle_bias"])))
        rows.append(("every worker unbiased for grad f", "yes" if h["unbiased"] else "[bold red]no[/]"))
    for label, value in rows:
        t.add_row(label, value)
    out: list[Any] = [t]
    if doc.get("sigma_note"):
        out.append(f"tr(Sigma), B_simple, B_S and the predicted speedup: none: {doc['sigma_note']}")
    out += [f"[yellow]warning:[/] {w}" for w in doc.get("warnings", [])]
    if doc["speedup"]:
        sp = new_table("predicted speedup B B_S / (B + B_S - 1)")
        sp.add_column("B", justify="right")
        sp.add_column("speedup", justify="right")
        sp.add_column("efficiency", justify="right")
        for r in doc["speedup"]:
            sp.add_row(fmt(r["B"]), fmt(r["predicted"]), f"{100 * r['predicted'] / r['B']:.0f}%")
        out.append(sp)
    if "workers" in doc:
        w = new_table("per worker")
        groups = doc.get("sampling", {}).get("scheme") == "split-batch"  # the rows are label groups, not workers
        w.title = "per label group (split-batch)" if groups else w.title
        bias = None if groups else (doc.get("heterogeneity") or {}).get("bias")
        for col in ("group" if groups else "worker", "n", "Delta_S", "B_S") + \
                (("||E g_hat_m - g||",) if bias is not None else ()):
            w.add_column(col, justify="right")
        for r in doc["workers"]:
            extra = (fmt(float(bias[r["worker"]])),) if bias is not None else ()
            w.add_row(str(r["worker"]), fmt(r["n"]), fmt(r["delta_S"]), fmt(r["B_S"]), *extra)
        out.append(w)
    if doc.get("transforms"):
        tt = new_table("transformed per-sample gradients (B_S^T = n E[A] / E[C]: a ratio of expectations over "
                       "the transformation)")
        sampled = any(r.get("B_S_interval") is not None for r in doc["transforms"])
        for col in ("transform", "Delta_S", "B_S", *(("B_S 95% (sampled)",) if sampled else ()), "B_simple",
                    "speedup at B = 64"):
            tt.add_column(col, justify="left" if col == "transform" else "right")
        for r in doc["transforms"]:
            at64 = next((s["predicted"] for s in r["speedup"] if s["B"] == 64), None)
            tt.add_row(r["transform"], fmt(r["delta_S"]), fmt(r["B_S"]), *((interval(r),) if sampled else ()),
                       fmt(r["B_simple"]), fmt(at64))
        out.append(tt)
    return out


def interval(row: dict[str, Any]) -> str:
    """A transformation's B_S: "exact" (closed form), or the 95% interval of its Monte Carlo estimate and the draws."""
    if row.get("B_S_interval") is None:
        return "exact"
    lo, hi = row["B_S_interval"]
    return f"[{fmt(lo)}, {fmt(hi)}] of {row['draws']}"


def replication_table(doc: dict[str, Any]) -> Table:
    e = doc["experiment"]
    t = new_table(f"iterations of mini-batch SGD to reach loss {e['target_loss']:g} (mean of {e['seeds']} seeds)")
    for col in ("replicate", "B", "lr", "iters", "speedup", "predicted", "B_S", "Delta_S"):
        t.add_column(col, justify="right")
    for r in doc["rows"]:
        t.add_row(str(r["replicate"]), str(r["B"]), fmt(r["lr"]), fmt(r["iters_to_target"]),
                  fmt(r["measured_speedup"]), fmt(r["predicted_speedup"]), fmt(r["B_S"]), fmt(r["delta_S"]))
    return t


def dimension_table(doc: dict[str, Any]) -> Table:
    e = doc["experiment"]
    t = new_table(f"B_S against the number of features d (synthetic:glm, {e['features']} features, "
                  f"{e['labels']} labels; slope of log B_S on log d: {fmt(doc['slope'])} +- {fmt(doc['slope_se'])})")
    for col in ("d", "seed", "n", "B_S", "Delta_S"):
        t.add_column(col, justify="right")
    for r in doc["rows"]:
        t.add_row(str(r["d"]), str(r["seed"]), fmt(r["n"]), fmt(r["B_S"]), fmt(r["delta_S"]))
    return t


def heuristics_table(doc: dict[str, Any]) -> list[Any]:
    t = new_table(f"diversity of transformed per-sample gradients {where(doc['point'])} (n = {doc['n']})")
    sampled = any(r.get("B_S_interval") is not None for r in doc["rows"])
    for col in ("transform", "B_S", *(("B_S 95% (sampled)",) if sampled else ()), "Delta_S", "B_simple",
                "speedup at B = 64"):
        t.add_column(col, justify="right" if col != "transform" else "left")
    for r in doc["rows"]:
        at64 = next((s["predicted"] for s in r["speedup"] if s["B"] == 64), None)
        t.add_row(r["transform"], fmt(r["B_S"]), *((interval(r),) if sampled else ()), fmt(r["delta_S"]),
                  fmt(r["B_simple"]), fmt(at64))
    out: list[Any] = [t]
    if doc.get("measured"):
        m = new_table("mini-batch SGD: iterations to the target loss, with and without the transformation")
        for col in ("transform", "B", "iters", "speedup"):
            m.add_column(col, justify="right" if col != "transform" else "left")
        for r in doc["measured"]:
            m.add_row(r["transform"], str(r["B"]), fmt(r["iters_to_target"]), fmt(r["measured_speedup"]))
        out.append(m)
    return out


def experiment_tables(doc: dict[str, Any]) -> list[Any]:
    """The tables of an [experiment] document, by its ``command`` (after a line saying so when it was
    interrupted: the rows are those measured completely before the interrupt)."""
    note = ["[yellow]interrupted:[/] the rows measured before Ctrl-C or SIGTERM"] \
        if doc.get("status") == "interrupted" else []
    if doc["command"] == "diversity-dimension":
        return [*note, dimension_table(doc)]
    if doc["command"] == "diversity-heuristics":
        return [*note, *heuristics_table(doc)]
    if doc["command"] == "diversity-stability":
        return [*note, *stability_table(doc)]
    if doc["command"] in ("diversity-conflicts", "diversity-lower-bound"):
        return [*note, *(conflicts_table if doc["command"] == "diversity-conflicts" else lower_bound_table)(doc)]
    return [*note, replication_table(doc)]


# the batch-size experiments of Yin et al. (docs/theory.md §6.1-§6.3; their figures: render/batch_figures.py)
def stability_table(doc: dict[str, Any]) -> list[Any]:
    e = doc["experiment"]
    t = new_table(f"stability and generalization at {e['passes']} passes over n = {doc['n']} samples (mean of "
                    f"{e['pairs']} pairs); B_S {fmt(doc['B_S']['init'])} at the start, "
                    f"{fmt(doc['B_S']['end_of_serial_run'])} at the end of serial SGD")
    for col in ("B", "lr", "iters", "||w_S - w_S'||", "|loss diff|", "train loss", "test loss", "gap"):
        t.add_column(col, justify="right")
    for s in doc["rows"]:
        t.add_row(str(s["B"]), fmt(s["lr"]), fmt(s["iters"]), fmt(s["distance"]), fmt(s["loss_diff_mean"]),
                  fmt(s["loss"]), fmt(s["test_loss"]), fmt(s["gap"]))
    return [t]


def conflicts_table(doc: dict[str, Any]) -> list[Any]:
    t = new_table("B_S of sparse data against the conflict degree, beside the bound n / (conflict + 1) "
                    f"(holds in every row: {doc['bound_holds']})")
    for col in ("values", "conflict", "seed", "n", "B_S", "bound", "B_S / bound"):
        t.add_column(col, justify="right" if col != "values" else "left")
    for r in doc["rows"]:
        t.add_row(r["values"], str(r["conflict"]), str(r["seed"]), fmt(r["n"]), fmt(r["B_S"]), fmt(r["bound"]),
                  fmt(r["ratio"]))
    return [t]


def lower_bound_table(doc: dict[str, Any]) -> list[Any]:
    e = doc["experiment"]
    t = new_table(f"iterations to f <= {e['target_ratio']:g} f(x_0) (mean of {e['seeds']} seeds, the fewest over "
                    f"the step factors {e['lr_factors']}); B_S = {fmt(doc['B_S'])}")
    for col in ("B", "iters", "factor", "speedup", "closed form", "gradients"):
        t.add_column(col, justify="right")
    for r in doc["rows"]:
        t.add_row(str(r["B"]), fmt(r["best_iters"]), fmt(r["best_factor"]), fmt(r["speedup"]),
                  fmt(r["predicted_optimal"]), fmt(r["gradients"]))
    return [t]


def bound_report(doc: dict[str, Any]) -> list[Any]:
    c = new_table("constants")
    for col in ("name", "value", "source"):
        c.add_column(col, justify="right" if col == "value" else "left")
    for k in doc["constants"]:
        c.add_row(k["name"], fmt(k["value"]), _glue(k["source"]))
    overlay = "overlay" in doc
    b = new_table("bounds" + (f" beside the run ({doc['overlay']['iters_done']} iterations)" if overlay else
                                f" at K = {doc['config']['iters']}"))
    for col in ("bound", "on", "run", "bound at K") + (("observed", "") if overlay else ()):
        b.add_column(col, justify="right" if col in ("bound at K", "observed") else "left")
    for r in doc["bounds"]:
        label = _glue(r["label"]) + (" *" if r["derived"] else "")
        row = [label, r["lhs"], "matches" if r["matches_run"] else "-"]
        if overlay:
            verdict = "[bold red]EXCEEDS[/]" if r["exceeded"] else ("ok" if r["observed"] is not None and
                                                                     r["matches_run"] else "")
            row += [fmt(r["bound_at_run"]), fmt(r["observed"]), verdict]
        else:
            row.append(fmt(r["at_K"]))
        b.add_row(*row)
    mt = doc["majority_table"]
    per_worker = ", each worker's own law" if mt.get("workers_differ") else ""
    m = new_table(f"majority vote: E<g, vote> / ||g||_1 {where(mt['point'])} ({mt['method_of_estimate']}, "
              f"sampling {mt.get('sampling', '-')}{per_worker}, min rho = {fmt(mt['rho_min'])})")
    for col in ("M", "ratio", "1 - exp(-(2 rho - 1)^2 l)"):
        m.add_column(col, justify="right")
    for r in mt["rows"]:
        if r["M"] <= 12 or r["M"] in (15, 16, 31, 32, 63, 64):
            m.add_row(str(r["M"]), fmt(r["ratio"]), fmt(r["lower_bound"]))
    if mt.get("sampled_ratio") is not None:
        m.add_row(f"{mt['clients_per_round']} sampled of {doc['round']['workers']}", fmt(mt["sampled_ratio"]), "-")
    notes = ["* derived for this project, not quoted from a paper"]
    if doc.get("round", {}).get("note"):
        notes.append(f"round: {doc['round']['note']}")
    if mt.get("round_note"):
        notes.append(f"majority table: {mt['round_note']}")
    notes += [f"{r['key']}: {r['note']}" for r in doc["bounds"] if r["note"].startswith("no bound known")]
    if doc.get("overlay", {}).get("exceeded"):
        notes.append("[bold red]An observation exceeds its bound.[/] The theorems bound expectations: one run can "
                     "exceed a tight bound by its own fluctuation; average several seeds before calling it a bug.")
    return [c, b, m, *notes]


#: a dry run's table lists at most this many runs (the title counts them all; --json lists every one): a table of
#: 100,000 rows took minutes to lay out
PLAN_ROWS = 200


def sweep_plan(rows: list[dict[str, Any]], parameters: list[str]) -> Table:
    finished = sum(1 for r in rows if r["finished"])
    invalid = sum(1 for r in rows if not r["finished"] and r["error"])
    counts = ", ".join(f"{n} {what}" for n, what in ((len(rows) - finished - invalid, "to run"),
                                                     (finished, "finished"), (invalid, "invalid")) if n)
    t = new_table(f"{len(rows)} runs" + (f" ({counts})" if counts else ""))
    for col in ("#", "run id", *parameters, "seed", "repeat", "state"):
        t.add_column(col)
    if len(rows) > PLAN_ROWS:
        t.caption = f"the first {PLAN_ROWS} of {len(rows)} runs; --json lists every run"
    for r in rows[:PLAN_ROWS]:
        state = "finished" if r["finished"] else ("invalid: " + r["error"] if r["error"] else "to run")
        t.add_row(str(r["index"]), r["run_id"], *[fmt(r["params"].get(p)) for p in parameters],
                  str(r["params"].get("seed")), str(r["params"].get("repeat")), state)
    return t


#: the sweep summary lists at most this many configurations (every one is in --json and results.csv)
SWEEP_ROWS = 40


def sweep_summary(doc: dict[str, Any]) -> list[Any]:
    """The sweep's head line and one row per configuration (``best_per_configuration``: the method and each
    varying option that is not a tuned one, with the best of the tuned values)."""
    head = (f"{doc['runs']} runs in {doc['out']}: ran {doc['ran']}, skipped {doc['skipped']} already finished; "
            + ", ".join(f"{k} {v}" for k, v in sorted(doc["statuses"].items())))
    rows = doc.get("best_per_configuration")
    if rows is None:  # a document written before configurations were summarized
        rows = [{"method": m, "configuration": {}, "tuned": {k: v for k, v in r["params"].items()
                                                                 if k not in ("method", "repeat")}, **r}
                for m, r in doc["best_per_method"].items()]
    keys = list(dict.fromkeys(k for r in rows for k in r["configuration"]))
    tuned = sorted({k for r in rows for k in r["tuned"]})
    over = f"; the best {', '.join(t.replace('_', '-') for t in tuned)} of each" if tuned else ""
    t = new_table(f"final loss per configuration (mean ± std over repeats{over})")
    target = any("target_reached" in r for r in rows)  # the runs had a --target: time and bits to it (§14.4)
    numbers = ["final loss", "runs", *(["reached target", "time to target (s)", "bits to target"] if target else [])]
    cols = ["method", *[k.replace("_", "-") for k in keys]] + (["best"] if tuned else []) + numbers
    for col in cols:
        t.add_column(col, justify="right" if col in numbers else "left")
    for r in rows[:SWEEP_ROWS]:
        best = ", ".join(f"{k.replace('_', '-')}={fmt(v)}" for k, v in r["tuned"].items())
        extra = [f"{r.get('target_reached', 0)}/{r['runs']}", fmt(r.get("mean_target_time")),
                 fmt(r.get("mean_target_bits"))] if target else []
        t.add_row(r["method"], *[fmt(r["configuration"].get(k)) for k in keys], *([best or "-"] if tuned else []),
                  f"{fmt(r['mean_final_loss'])} ± {fmt(r['std_final_loss'])}", f"{r['finite']}/{r['runs']}", *extra)
    if doc.get("robustness"):  # a worst-case benchmark: its tables instead of one row per run
        return [head, *robustness_tables(doc["robustness"]),
                f"robustness.csv and robustness.json in {doc['out']}; every run: --json best_per_configuration"]
    out: list[Any] = [head, t]
    if len(rows) > SWEEP_ROWS:
        out.append(f"... and {len(rows) - SWEEP_ROWS} more configurations (--json: best_per_configuration)")
    return out


def _worst_cell(value: Any, attack: Any, status: str, complete: bool) -> str:
    shown = fmt(value) if status == "ok" else status
    if status == "missing":
        return "-"
    return f"{shown} {attack}" + ("" if complete else " (incomplete)")


def robustness_tables(report: dict[str, Any]) -> list[Any]:
    """The worst-case report of a ``[robustness]`` sweep: per method and heterogeneity level, the worst final
    metric over the attacks at each f with the attack that caused it; then each method's worst overall."""
    het = report["heterogeneity"]["option"]
    metric, worst = report["metric"], report["worst"]
    t = new_table(f"worst final {metric} over the attacks ({worst} is worst), with the attack that caused it")
    for col in ["method", *([het.replace("_", "-")] if het else []), *[f"f = {f}" for f in report["byzantine"]]]:
        t.add_column(col, justify="left")
    cells = {(c["method"], repr(c["heterogeneity"]), c["byzantine"]): c for c in report["cells"]}
    for m in report["methods"]:
        for level in report["heterogeneity"]["values"]:
            row = []
            for f in report["byzantine"]:
                c = cells.get((m, repr(level), f))
                row.append(_worst_cell(c["worst"], c["attack"], c["status"], c["complete"]) if c else "-")
            t.add_row(m, *([fmt(level)] if het else []), *row)
    axes = f"f and {het.replace('_', '-')}" if het else "f"
    o = new_table(f"worst final {metric} per method over every attack, {axes}")
    for col in ["method", f"worst {metric}", "attack", "f", *([het.replace("_", "-")] if het else [])]:
        o.add_column(col, justify="right" if col.startswith("worst") else "left")
    for r in report["overall"]:
        shown = fmt(r["worst"]) if r["status"] == "ok" else r["status"]
        o.add_row(r["method"], shown + ("" if r["complete"] else " (incomplete)"), fmt(r["attack"]),
                  fmt(r["byzantine"]), *([fmt(r["heterogeneity"])] if het else []))
    return [t, o]
