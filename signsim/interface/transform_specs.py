"""The syntax of the transformations of per-sample gradients (``diversity --transform`` and the heuristics
experiment's ``transforms``; their mathematics is in ``signsim.diagnostics.transforms``, docs/theory.md §10.4):
``dropout:p``, ``langevin:s``, or any compressor, spelled as ``--compressor`` spells it (``sign``, ``qsgd:4``,
``top-k:3``, a plugin's name once its file is loaded): the compressor is its stage module
(``signsim.stages.registry``), parsed by the module's own grammar. Pure Python: a config file's [experiment] table
is checked without loading the diagnostics."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from signsim.errors import InputError
from signsim.numbers import to_float

#: the transformations that are not compressors (every other name is looked up among the compressors)
GRADIENT_NAMES = ("dropout", "langevin")


@dataclass(frozen=True)
class Transform:
    name: str
    param: float | None = None
    sign_zero: str = "random"
    #: the compressor's stage (``signsim.stages.registry.Stage``); None for dropout and langevin
    stage: Any = None

    @property
    def spec(self) -> str:
        if self.stage is not None:
            return self.stage.spec
        return self.name if self.param is None else f"{self.name}:{self.param:g}"

    @property
    def module(self):
        """The compressor's stage module (None for dropout and langevin)."""
        return None if self.stage is None else self.stage.module

    def at_dim(self, d: int, spec: str | None = None) -> Transform:
        """This transformation for gradients of dimension d: a compressor's defaults that depend on d resolved
        (``top-k`` is ``top-k:ceil(d/10)``) and its parameters checked against d (``top-k:K`` needs K <= d);
        InputError naming ``--transform`` (and ``spec``, as the user wrote it) otherwise."""
        if self.stage is None:
            return self
        from signsim.stages import registry

        written = spec if spec is not None else self.stage.spec
        return replace(self, stage=registry.parse("compressor", written.strip(), d, option="--transform"))


def _names() -> str:
    from signsim.stages import registry

    return ", ".join(registry.stages("compressor"))


def parse(spec: str, sign_zero: str = "random", dim: int | None = None) -> Transform:
    """``dropout:p`` (0 <= p < 1), ``langevin:s`` (s >= 0 finite), or a compressor's spec (its module's grammar and
    ranges, as ``--compressor`` takes it; a default that depends on the dimension stays open without ``dim``);
    InputError naming ``--transform`` otherwise."""
    text = str(spec).strip()
    name, *args = text.split(":")
    where = f"--transform {spec}"
    if name not in GRADIENT_NAMES:
        from signsim.stages import registry

        if name not in registry.stages("compressor"):
            raise InputError(f"{where}: unknown transformation; choose from dropout:P, langevin:S or a compressor "
                             f"({_names()})")
        return Transform(name, None, sign_zero, registry.parse("compressor", text, dim, option="--transform"))
    if len(args) != 1:
        raise InputError(f"{where}: expected the form {name}:{'p' if name == 'dropout' else 's'}")
    try:
        p = to_float(args[0])
    except ValueError:
        raise InputError(f"{where}: '{args[0]}' is not a number") from None
    if name == "dropout" and not 0 <= p < 1:
        raise InputError(f"{where}: the drop probability must lie in [0, 1)")
    if name == "langevin" and not (math.isfinite(p) and p >= 0):
        raise InputError(f"{where}: the noise scale must be a finite number >= 0")
    return Transform(name, p, sign_zero)


def check(spec: str) -> None:
    """``parse``'s checks for a spec in a config file, read before the run's ``plugin`` files are loaded: a name
    that is neither a gradient transformation nor a compressor known yet passes here (a plugin's may be; ``parse``
    names it when the experiment starts, before any work)."""
    from signsim.stages import registry

    name = str(spec).strip().split(":")[0]
    if name in GRADIENT_NAMES or name in registry.stages("compressor"):
        parse(spec)
