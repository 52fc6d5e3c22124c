"""The stages a method is composed of (docs/theory.md §2, §8), one module each:

    momentum -> compressor -> error feedback -> attack -> aggregation

``signsim.stages.base`` says what a stage module declares; ``signsim.stages.registry`` collects them (built-in
folders and plugins); this module parses the options that choose them (``--compressor``, ``--error-feedback``,
``--aggregate``, ``--attack``) and describes a run's stages for its results. Pure Python, nothing heavy: the
CLI, the config and ``signsim list`` use it freely; the engine compiles the kernels when a run composes them
(``signsim.engine.compose``).
"""

from __future__ import annotations

from dataclasses import dataclass

from signsim.stages import kinds, plugins, registry  # noqa: F401 - plugins: installed stages join every listing
from signsim.stages.registry import Stage, form, parse


@dataclass(frozen=True)
class CompressorInfo:
    """A compressor as ``signsim list`` shows it: its spec form, summary, kind and defaults."""

    name: str
    form: str
    summary: str
    kind: str
    defaults: str


def compressor_table() -> dict[str, CompressorInfo]:
    return {n: CompressorInfo(n, form(m), m.SUMMARY, m.KIND, registry.defaults(m))
            for n, m in registry.stages("compressor").items()}


def names(kind: str) -> list[str]:
    return list(registry.stages(kind))


def __getattr__(name: str):
    # the tables by name, always current (plugins join them when loaded)
    if name == "COMPRESSORS":
        return compressor_table()
    if name == "ERROR_FEEDBACK":
        return registry.stages("error_feedback")
    if name == "AGGREGATES":
        return registry.stages("aggregation")
    if name == "ATTACKS":
        return registry.stages("attack")
    if name == "MOMENTA":
        return registry.stages("momentum")
    if name == "CONTRACTIVE":
        return frozenset(n for n, m in registry.stages("compressor").items() if accepts_error_feedback(m))
    raise AttributeError(name)


def accepts_error_feedback(mod) -> bool:
    """Error feedback (EF, EF21) needs a contractive compressor (the identity included: alpha = 1)."""
    return mod.KIND == "contractive" or (mod.KIND == "unbiased" and not mod.PARAMS and mod.constant(2) == 0.0)


def error_feedback_refusal(error_feedback: str, compressor, aggregate: str) -> str | None:
    """Why error feedback ``error_feedback`` (a name; "none": none) cannot run with the compressor module
    ``compressor`` and the aggregation named ``aggregate``: "contractive" (it needs a contractive compressor),
    "majority" (the server must average the corrected messages: majority vote of error-corrected signs does not
    train), or None. The one rule of ``signsim run`` and the DDP hook."""
    if error_feedback == "none":
        return None
    if not accepts_error_feedback(compressor):
        return "contractive"
    if aggregate == "majority":
        return "majority"
    return None


def parse_compressor(spec: str, dim: int | None = None) -> Stage:
    """``name[:params]``; the default k of a sparsifier needs ``dim`` (open until then)."""
    return parse("compressor", spec, dim)


def parse_aggregate(spec: str) -> Stage:
    """An aggregation's spec (the built-ins and their parameters: docs/reference.md, table "Aggregation"), or a
    plugin's."""
    return parse("aggregation", spec)


def parse_attack(spec: str) -> Stage:
    """An attack's spec (the built-ins and their parameters: docs/reference.md, table "Attacks"), or a plugin's."""
    return parse("attack", spec)


def pre_aggregated_rows(links: tuple[Stage, ...], n: int) -> int:
    """The messages the aggregation gets from n after the chain ``links`` (InputError when a link needs more)."""
    from signsim.stages.plugins import declared

    for link in links:
        n = int(declared(link.module, "rows", n, link.params, result="rows", rows=n))
    return n


def compressor_constant(spec: str, dim: int) -> dict[str, float | str | None]:
    """{"kind": ..., "omega" or "alpha": value, and the parameters} of a compressor spec at dimension ``dim``."""
    return compressor_constant_of(parse_compressor(spec, dim), dim)


def compressor_constant_of(stage: Stage, dim: int) -> dict[str, float | str | None]:
    """``compressor_constant`` of a resolved compressor stage (either slot)."""
    from signsim.stages.plugins import declared

    mod = stage.module
    out: dict[str, float | str | None] = {"kind": mod.KIND}
    value = declared(mod, "constant", dim, *stage.params, result="number")
    if value is not None:
        out["alpha" if mod.KIND == "contractive" else "omega"] = value
    for p, v in zip(mod.PARAMS, stage.params, strict=True):
        out[p.name] = p.shown(v) if p.kind == "choice" else (int(v) if p.kind == "int" else v)
    return out


def describe(settings, cfg, dim: int) -> dict:
    """The resolved stages of a run, for its results document (every default written out, with the
    compressor's omega or alpha)."""
    c = settings.compressor
    return {
        "momentum": settings.momentum_kind.name,
        "compressor": {"spec": c.spec, **compressor_constant_of(c, dim)},
        "error_feedback": settings.error_feedback.name,
        "aggregate": {"rule": settings.aggregate.name, "spec": settings.aggregate.spec,
                      "param": settings.aggregate_param},
        "attack": {"rule": settings.attack.name, "spec": settings.attack.spec, "param": settings.attack_param,
                   "byzantine": settings.byzantine},
        "weight_decay": settings.weight_decay,
        "server_optimizer": settings.server_optimizer.spec,
        "estimator": settings.estimator.spec,
        "pre_aggregate": [link.spec for link in settings.pre_aggregation if link.name != "none"],
        "downlink": None if settings.down_compressor is None else {
            "compressor": {"spec": settings.down_compressor.spec,
                           **compressor_constant_of(settings.down_compressor, dim)},
            "error_feedback": settings.down_error_feedback.name},
    }
