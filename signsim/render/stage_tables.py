"""The stage tables of docs/reference.md and ``signsim list``, from the stage modules (a test checks the docs).

Each compressor's line is its ``SUMMARY``, its constant where the summary does not state it, and its class once:
"(unbiased)" is not added to a summary that already ends with the word, and a constant that only the module's
docstring states comes from its ``CONSTANT_TEXT`` (a plugin's option)."""

from __future__ import annotations

import re

from signsim.stages import kinds, registry

#: each kind's table title (``signsim.stages.kinds``)
TITLES = {k.name: k.title for k in kinds.PRIMARY}
KINDS = tuple(TITLES)


def summary(mod, kind: str) -> str:
    """The text of a stage's line: its summary and, for a compressor, its constant and its class, once each."""
    text = mod.SUMMARY
    if kind != "compressor":
        return text
    cls = getattr(mod, "KIND", None)
    said = bool(cls) and re.search(rf"[\s,(]{re.escape(cls)}\)?$", text) is not None  # "..., unbiased"
    extra = getattr(mod, "CONSTANT_TEXT", None)
    if extra and not re.search(r"\b(omega|alpha)\s*=", text):
        text += f" ({extra})"
    if cls and not said:
        text += f" ({cls})"
    return text


def rows(kind: str, builtin_only: bool = True, modules: dict | None = None) -> list[tuple[str, str, str, str]]:
    """(spec form, defaults, summary, theory section) of each stage of ``kind`` (or of ``modules``, by name)."""
    mods = modules if modules is not None else registry.builtin(kind) if builtin_only else registry.stages(kind)
    return [(registry.form(m), registry.defaults(m) or "-", summary(m, kind), getattr(m, "THEORY", "-"))
            for m in mods.values()]  # a plugin need not cite a section


def markdown(modules: dict[str, dict] | None = None) -> str:
    """The tables of docs/reference.md's "Stages" section (written there by ``python tools/generate_stages.py``):
    of the built-in stages, or of ``modules`` (kind -> its stage modules by name, in order: the generator's)."""
    parts = []
    for kind in KINDS:
        parts.append(f"#### {TITLES[kind]}\n")
        parts.append("| spec | defaults | what it does | theory |\n|---|---|---|---|")
        for form, defaults, text, theory in rows(kind, modules=None if modules is None else modules[kind]):
            bar = chr(92) + "|"  # a | inside a table cell, code spans included, must be escaped
            parts.append(f"| `{form.replace('|', bar)}` | {defaults} | {text.replace('|', bar)} | {theory} |")
        parts.append("")
    return "\n".join(parts).rstrip() + "\n"
