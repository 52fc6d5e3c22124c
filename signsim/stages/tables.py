"""The stage tables of docs/reference.md and ``signsim list``, from the stage modules (a test checks the docs)."""

from __future__ import annotations

from signsim.stages import kinds, registry
from signsim.stages.base import KINDS

TITLES = {k.name: k.title for k in kinds.TABLE}


def constant_text(mod) -> str:
    if not hasattr(mod, "KIND"):
        return ""
    return mod.KIND


def rows(kind: str, builtin_only: bool = True) -> list[tuple[str, str, str, str]]:
    """(spec form, defaults, summary, theory section) of each stage of ``kind``."""
    mods = registry.builtin(kind) if builtin_only else registry.stages(kind)
    out = []
    for mod in mods.values():
        summary = mod.SUMMARY + (f" ({mod.KIND})" if kind == "compressor" else "")
        out.append((registry.form(mod), registry.defaults(mod) or "-", summary, mod.THEORY))
    return out


def markdown() -> str:
    """The tables of docs/reference.md's "Stages" section."""
    parts = []
    for kind in KINDS:
        parts.append(f"#### {TITLES[kind]}\n")
        parts.append("| spec | defaults | what it does | theory |\n|---|---|---|---|")
        for form, defaults, summary, theory in rows(kind):
            parts.append(f"| `{form}` | {defaults} | {summary.replace('|', chr(92) + '|')} | {theory} |")
        parts.append("")
    return "\n".join(parts).rstrip() + "\n"
