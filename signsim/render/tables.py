"""Rich tables for the terminal (written to stderr; stdout is kept for ``--json``)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


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


def run_summary(doc: dict[str, Any]) -> Table:
    cfg, fin = doc["config"], doc["final"]
    title = (f"{cfg['method']} on {doc['problem']['name']} (d = {doc['problem']['dim']}), "
             f"M = {cfg['workers']}, K = {cfg['iters']}: {doc['status']}")
    table = Table(title=title, show_header=True, header_style="bold")
    table.add_column("quantity")
    table.add_column("start", justify="right")
    table.add_column("final", justify="right")
    first = doc["history"][0] if doc["history"] else {}
    rows = [("loss f(x)", "loss"), ("||grad f||_2", "grad_norm"), ("||grad f||_1", "grad_norm_l1"),
            ("distance to x*", "distance")]
    for label, key in rows:
        if key == "distance" and not doc["problem"]["x_star_known"]:
            continue
        table.add_row(label, fmt(first.get(key)), fmt(fin.get(key)))
    table.add_row("iterations", "0", fmt(fin.get("iters_done")))
    table.add_row("bits up (all workers)", "0", f"{fmt(fin['bits_up'])} ({human_bits(fin['bits_up'])})")
    table.add_row("bits down (all workers)", "0", f"{fmt(fin['bits_down'])} ({human_bits(fin['bits_down'])})")
    table.add_row("wall time", "", f"{fin['wall_time']:.3f} s")
    return table


def listing(sections: dict[str, list[tuple[str, str]]]) -> list[Table]:
    tables = []
    for title, rows in sections.items():
        t = Table(title=title, show_header=False, title_justify="left", box=None, pad_edge=False)
        t.add_column("name", style="bold")
        t.add_column("description")
        for name, text in rows:
            t.add_row(name, text)
        tables.append(t)
    return tables


def stderr_console() -> Console:
    return Console(stderr=True)


def comparison_table(doc: dict[str, Any]) -> Table:
    c = doc["comparison"]
    table = Table(title=f"at equal communication B = {c['budget_megabytes']:.3g} MB (up + down)",
                  header_style="bold")
    for col in ("run", "iters", "MB", "loss@B", "test acc@B", "final acc", "status"):
        table.add_column(col, justify="left" if col in ("run", "status") else "right")
    for r in c["rows"]:
        table.add_row(r["label"], fmt(r["iters"]), f"{r['megabytes']:.3g}", fmt(r["loss_at_budget"]),
                      _pct(r["test_acc_at_budget"]), _pct(r["final_test_acc"]), r["status"])
    return table


def _pct(v) -> str:
    return "-" if v is None else f"{100 * v:.1f}%"
