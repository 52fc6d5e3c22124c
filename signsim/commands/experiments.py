"""The experiments a ``diversity`` config file can run from its ``[experiment]`` table: one command module per
experiment, its runner here by kind. The table itself is parsed below the commands
(``signsim.interface.experiment_config``: kinds, options, checks); this module only runs what was parsed.

Each runner takes (base run options, the experiment's options, progress) and returns the results document.
"""

from __future__ import annotations

from typing import Any

from signsim.interface.experiment_config import KINDS, Planned


def _replication(base, options, progress):
    from signsim.commands.replication import replication

    return replication(base, options, progress=progress)


def _dimension(base, options, progress):
    from signsim.commands.dimension import dimension

    return dimension(base, options, progress=progress)


def _heuristics(base, options, progress):
    from signsim.commands.heuristics import heuristics

    return heuristics(base, options, progress=progress)


def _stability(base, options, progress):
    from signsim.commands.stability import stability

    return stability(base, options, progress=progress)


def _conflicts(base, options, progress):
    from signsim.commands.conflicts import conflicts

    return conflicts(base, options, progress=progress)


def _lower_bound(base, options, progress):
    from signsim.commands.lower_bound import lower_bound

    return lower_bound(base, options, progress=progress)


RUNNERS = {"replication": _replication, "dimension": _dimension, "heuristics": _heuristics,
           "stability": _stability, "conflicts": _conflicts, "lower-bound": _lower_bound}
assert RUNNERS.keys() == KINDS.keys(), "every experiment kind needs a runner"


def run(base: dict[str, Any], planned: Planned, progress=None) -> dict[str, Any]:
    return RUNNERS[planned.kind](base, planned.options, progress)
