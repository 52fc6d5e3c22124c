"""The one "did you mean" of signsim: the closest known name to an unknown one (case, hyphens and underscores
ignored, then ``difflib``'s closest match), for option values and option names (``signsim.interface.options``) and
for stage names (``signsim.stages.registry.stage_spec``: ``--compressor topk:10`` -> ``top-k``)."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable


def closest(value: object, choices: Iterable[str]) -> str | None:
    """The choice closest to ``value`` (case, hyphens and underscores ignored: ``topk`` -> ``top-k``), or None (also
    for a value that is not a string)."""
    if not isinstance(value, str):
        return None
    choices = list(choices)

    def plain(text: str) -> str:
        return text.lower().replace("-", "").replace("_", "")

    by_plain = {plain(c): c for c in choices}
    if plain(value) in by_plain:
        return by_plain[plain(value)]
    close = difflib.get_close_matches(plain(value), list(by_plain), n=1, cutoff=0.6)
    return by_plain[close[0]] if close else None


def hint(value: object, choices: Iterable[str], shown: Callable[[str], str] = str) -> str:
    """" (did you mean 'x'?)" for the closest of ``choices`` (x written as ``shown`` writes it), or ""."""
    best = closest(value, choices)
    return f" (did you mean '{shown(best)}'?)" if best is not None and best != value else ""
