"""Registry of the experiments a ``diversity`` config file can run from its ``[experiment]`` table: one module
per experiment, one row here. ``kind`` selects it (default ``replication``, the first one):

* ``replication``: Yin et al.'s replicated-data experiment (``commands/replication.py``);
* ``dimension``: B_S against the number of features of generated GLM data (``commands/dimension.py``);
* ``heuristics``: B_S after dropout, Langevin noise and quantization (``commands/heuristics.py``).

Each row names its parser (raw table -> options), its runner (base run options, options, progress ->
results document) and the ``command`` field of that document (which the tables and figures dispatch on).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from signsim.errors import InputError


@dataclass(frozen=True)
class Experiment:
    kind: str
    module: str  # under signsim.commands
    parse: str  # function name: (raw table, where) -> options
    run: str  # function name: (base options, options, progress) -> document
    command: str  # the document's "command"


EXPERIMENTS = {e.kind: e for e in (
    Experiment("replication", "replication", "parse_experiment", "replication", "diversity-replication"),
    Experiment("dimension", "dimension", "parse", "dimension", "diversity-dimension"),
    Experiment("heuristics", "heuristics", "parse", "heuristics", "diversity-heuristics"),
)}


@dataclass
class Planned:
    """A parsed [experiment] table: which experiment and its options."""

    kind: str
    options: Any


def parse(raw: Any, where: str) -> Planned:
    if not isinstance(raw, dict):
        raise InputError(f"{where} must be a table")
    raw = dict(raw)
    kind = raw.pop("kind", "replication")
    if kind not in EXPERIMENTS:
        raise InputError(f"{where}: kind = {kind!r}; choose from {', '.join(EXPERIMENTS)}")
    e = EXPERIMENTS[kind]
    parser = getattr(importlib.import_module(f"signsim.commands.{e.module}"), e.parse)
    return Planned(kind, parser(raw, where))


def run(base: dict[str, Any], planned: Planned, progress=None) -> dict[str, Any]:
    e = EXPERIMENTS[planned.kind]
    runner = getattr(importlib.import_module(f"signsim.commands.{e.module}"), e.run)
    return runner(base, planned.options, progress=progress)
