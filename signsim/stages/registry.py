"""The stages signsim knows: the built-in modules of each kind (one folder each, listed by the generated
``signsim.stages.catalog``), the plugins loaded in this process (``signsim.stages.plugins``), and the parsing of a
spec ``NAME[:p1[:p2...]]`` into a resolved ``Stage``.

Nothing about a stage is written here: its name, grammar, defaults, constants and kernels are read from its
module (``signsim.stages.base`` lists what a module declares)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

from signsim.errors import InputError
from signsim.stages import catalog, kinds
from signsim.stages.base import KINDS, MAX_PARAMS, OPTION
from signsim.suggest import hint

#: the built-in stage modules of each kind, by folder and module name, in the order signsim lists them (a stage's code
#: is its index): the catalog's, generated from the folders by ``python tools/generate_stages.py``
BUILTIN: dict[str, tuple[str, ...]] = {kind: tuple(entry[0] for entry in entries)
                                       for kind, entries in catalog.STAGES.items()}
FOLDER = {k.name: k.folder for k in kinds.PRIMARY}

#: stages from plugins, by kind and name (``signsim.stages.plugins.load`` adds to it)
PLUGINS: dict[str, dict[str, ModuleType]] = {k: {} for k in KINDS}
_BUILTIN_CACHE: dict[str, dict[str, ModuleType]] = {}
#: what fills PLUGINS before every listing (``stages``), each call idempotent: ``signsim.stages.plugins`` adds the
#: installed packages' entry points as it is imported, and the package ``signsim.stages`` imports it, so no listing
#: misses them (and this module, which the plugin loader reads, imports no loader)
DISCOVER: list[Callable[[], None]] = []


def builtin(kind: str) -> dict[str, ModuleType]:
    """The built-in modules of ``kind`` (a slot's: those of the kind it is of), by stage name, in order."""
    kind = kinds.base(kind)
    if kind not in _BUILTIN_CACHE:
        mods = [importlib.import_module(f"signsim.stages.{FOLDER[kind]}.{m}") for m in BUILTIN[kind]]
        _BUILTIN_CACHE[kind] = {m.NAME: m for m in mods}
    return _BUILTIN_CACHE[kind]


def stages(kind: str) -> dict[str, ModuleType]:
    """Every stage of ``kind`` this process knows: the built-ins, then the plugins loaded (files, and installed
    packages' entry points in the group ``signsim.stages``, which ``DISCOVER`` brings in first)."""
    for discover in DISCOVER:
        discover()
    return {**builtin(kind), **PLUGINS[kinds.base(kind)]}


def stage_spec(kind: str, spec: str, option: str | None = None) -> None:
    """An InputError naming the closest stage of ``kind`` when the name of ``spec`` (``NAME[:params]``) is not one
    ("did you mean 'top-k'?", ``signsim.suggest``); nothing otherwise (the parameters are ``parse``'s to check, whose
    own error names the choices only)."""
    table = stages(kind)
    name = str(spec).partition(":")[0]
    if name not in table:
        raise InputError(f"{option or OPTION[kind]} {spec}: unknown value{hint(name, table)}; choose from "
                         f"{', '.join(table)}")


@dataclass(frozen=True)
class Stage:
    """One stage of a run: its module and its parameters, every default resolved."""

    kind: str
    module: ModuleType
    params: tuple[float, ...]
    #: the parameters whose default needs the dimension, still open (a sparsifier's k before d is known)
    pending: tuple[int, ...] = ()

    @property
    def resolved(self) -> bool:
        return not self.pending

    def at_dim(self, dim: int, option: str | None = None, spec: str | None = None) -> Stage:
        """This stage at dimension ``dim``: every default that needs the dimension filled in (no spec is parsed
        again) and the module's limits in ``dim`` checked (``top-k:K`` needs K <= d), InputError naming ``option``
        and ``spec`` (as the user wrote it) otherwise."""
        stage = self
        if self.pending:
            params = list(self.params)
            for i in self.pending:
                params[i] = float(self.module.PARAMS[i].default_of_d(dim))
            stage = Stage(self.kind, self.module, tuple(params))
        if hasattr(self.module, "check_params"):
            self.module.check_params(stage.params, dim, option or OPTION[self.kind], spec or stage.spec)
        return stage

    @property
    def name(self) -> str:
        return self.module.NAME

    @property
    def spec(self) -> str:
        """The spec with every parameter written out (``qsgd`` -> ``qsgd:4``)."""
        if not self.module.PARAMS or not self.resolved:
            return self.name
        shown = [p.shown(v) for p, v in zip(self.module.PARAMS, self.params, strict=True)]
        for p in reversed(self.module.PARAMS):  # trailing defaults marked omit_default stay out
            if not (p.omit_default and shown and shown[-1] == p.shown(_default_value(p))):
                break
            shown.pop()
        return ":".join([self.name, *shown])

    def param_array(self, extra: tuple[float, ...] = ()):
        import numpy as np

        values = list(self.params) + list(extra)
        out = np.zeros(MAX_PARAMS)
        out[:len(values)] = values
        return out


def _default_value(p) -> float:
    return float(p.choices.index(p.default)) if p.kind == "choice" else float(p.default)


def parse(kind: str, spec: str, dim: int | None = None, option: str | None = None) -> Stage:
    """``NAME[:p1[:p2...]]`` -> Stage; a default that depends on the dimension stays open without ``dim``."""
    option = option or OPTION[kind]
    spec = str(spec)
    table = stages(kind)
    name, sep, rest = spec.partition(":")
    if name not in table:
        raise InputError(f"{option} {spec}: unknown value; choose from {', '.join(table)}")
    mod = table[name]
    params = mod.PARAMS
    raw = rest.split(":") if sep else []
    if not params and sep:
        raise InputError(f"{option} {spec}: {name} takes no parameter")
    if "" in raw:  # ``qsgd:``, ``krum:1:``, ``top-k::x``: an empty field is never its default
        where = "after the name" if raw.index("") == 0 else f"after {':'.join(raw[:raw.index('')])}"
        raise InputError(f"{option} {spec}: an empty parameter {where}; give a value or leave the colon out "
                         f"({form(mod)})")
    if hasattr(mod, "parse_args"):  # a grammar of its own (optional leading words, ...)
        raw = mod.parse_args(raw, option, spec)
    if len(raw) > len(params):
        raise InputError(f"{option} {spec}: {name} takes at most {len(params)} parameter"
                         f"{'s' if len(params) != 1 else ''} ({':'.join(p.name for p in params)})")
    values: list[float] = []
    pending: list[int] = []
    for i, p in enumerate(params):
        if i < len(raw) and raw[i] != "":
            values.append(p.parse(raw[i], option, spec))
        elif p.default is not None:
            values.append(_default_value(p))
        elif p.default_of_d is not None:
            if dim is None:
                values.append(0.0)
                pending.append(i)
            else:
                values.append(float(p.default_of_d(dim)))
        else:
            raise InputError(f"{option} {spec}: {name} needs its parameter {p.name}")
    stage = Stage(kind, mod, tuple(values), tuple(pending))
    if hasattr(mod, "check_params") and stage.resolved:
        mod.check_params(stage.params, dim, option, spec)
    return stage


def form(mod: ModuleType) -> str:
    """The spec form of a stage, e.g. ``qsgd[:S[:fixed|elias]]``, ``krum:F[:blanchard|byzfl]``, ``geomed[:NU[:T]]`` (a
    bracket holds what may be left out), or the module's own ``FORM``."""
    if hasattr(mod, "FORM"):
        return mod.FORM
    out, opened = mod.NAME, 0
    for p in mod.PARAMS:  # a parameter with a default may be left out, and then every one after it
        shown = p.name.upper() if p.kind != "choice" else "|".join(p.choices)
        if p.default is not None or p.default_of_d is not None:  # krum:F[:blanchard|byzfl], geomed[:NU[:T]]
            out += f"[:{shown}"
            opened += 1
        else:
            out += f":{shown}"
    return out + "]" * opened


def defaults(mod: ModuleType) -> str:
    """Its defaults, e.g. ``s = 4``, ``k = ceil(d/10)`` (for ``signsim list`` and the docs)."""
    out = []
    for p in mod.PARAMS:
        if p.default is not None:
            out.append(f"{p.name} = {p.default_text or p.default}")
        elif p.default_of_d is not None:
            out.append(f"{p.name} = {p.default_text or 'from d'}")
    return ", ".join(out)
