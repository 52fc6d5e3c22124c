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

from signsim.errors import InputError
from signsim.stages import kinds, registry
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
    """``mean | majority | median | trimmed[:beta]`` (beta in [0, 1/2), default 0.1), or a plugin's."""
    return parse("aggregation", spec)


def parse_attack(spec: str) -> Stage:
    """``invert | random | alie[:z] | ipm[:eps]`` (z default 1, eps default 0.1), or a plugin's."""
    return parse("attack", spec)


#: the kinds of the links of a ``--pre-aggregate`` chain, in order (docs/theory.md §8.9): the pre-aggregation and its
#: slots in the table of kinds
PRE_KINDS = tuple(k.name for k in kinds.TABLE if kinds.base(k.name) == "pre_aggregation")


def parse_pre_aggregate(spec: str) -> tuple[Stage, ...]:
    """``--pre-aggregate``: ``none`` or a comma list of at most three pre-aggregations, applied in that order."""
    text = str(spec).strip()
    if text == "none":
        return ()
    parts = [p.strip() for p in text.split(",")]
    if any(p == "" for p in parts):
        raise InputError(f"--pre-aggregate {spec}: an empty link in the chain (write e.g. nnm:2,bucketing:2)")
    if len(parts) > len(PRE_KINDS):
        raise InputError(f"--pre-aggregate {spec}: at most {len(PRE_KINDS)} pre-aggregations in a chain")
    from signsim.interface.suggest import stage_spec

    for p in parts:
        stage_spec("pre_aggregation", p)  # an unknown name, with the closest one
    links = tuple(parse(kind, p, option="--pre-aggregate") for kind, p in zip(PRE_KINDS, parts, strict=False))
    if len(links) > 1 and any(link.name == "none" for link in links):
        raise InputError(f"--pre-aggregate {spec}: 'none' cannot be a link of a chain")
    return tuple(link for link in links if link.name != "none")


def pre_aggregated_rows(links: tuple[Stage, ...], n: int) -> int:
    """The messages the aggregation gets from n after the chain ``links`` (InputError when a link needs more)."""
    from signsim.stages.plugins import declared

    for link in links:
        n = int(declared(link.module, "rows", n, link.params, result="rows", rows=n))
    return n


def momentum_stage(method, cfg) -> Stage:
    """The momentum stage of a method: Lion's, EMA (from m_0 = g_hat(x_0) for SSDM) when beta > 0, else none."""
    if method.momentum_kind == "lion":
        name = "lion"
    elif cfg.momentum > 0:
        name = "ema-first" if method.momentum_from_first else "ema"
    else:
        name = "none"
    return parse("momentum", name)


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


def check_composition(cfg, method, chosen=None) -> None:
    """Combinations that make no sense exit 2 naming both options (``method``: the run's MethodSpec; ``chosen``: its
    stages, ``signsim.stages.plan.of_config``)."""
    from signsim.stages import plan

    chosen = chosen if chosen is not None else plan.of_config(cfg, method)
    method_name = method.name
    comp = chosen.compressor.module
    ef = cfg.error_feedback
    agg = chosen.aggregate.name  # beta < 1/2 keeps at least one value of every column
    attack = chosen.attack.module
    refusal = error_feedback_refusal(ef, comp, agg)
    if refusal == "contractive":
        contractive = sorted(n for n, m in registry.stages("compressor").items() if accepts_error_feedback(m))
        raise InputError(f"--error-feedback {ef} with --compressor {cfg.compressor}: error feedback needs a "
                         f"contractive compressor ({', '.join(contractive)})")
    if refusal == "majority":
        raise InputError(f"--aggregate {cfg.aggregate} does not apply to method '{method_name}' with "
                         f"--error-feedback {ef} (the server must average the corrected messages)")
    ef_module = chosen.error_feedback.module
    if getattr(ef_module, "INCREMENTS", False) or getattr(ef_module, "LAZY", False):
        if agg != "mean":
            raise InputError(f"--aggregate {cfg.aggregate} with --error-feedback {ef}: its server sums the "
                             "increments, which only the mean allows")
    if getattr(ef_module, "LAZY", False):  # CLAG: y_m is the worker's vector of the round before
        from signsim import rounds

        S = rounds.of_config(cfg)
        if S < cfg.workers:
            given = (f"--clients-per-round {cfg.clients_per_round}" if getattr(cfg, "clients_per_round", None)
                     else f"--participation {cfg.participation:g}")
            raise InputError(f"--error-feedback {ef} with {given} ({S} of {cfg.workers} workers a round): its trigger "
                             "compares with the worker's vector of the round before; let every worker take part")
    est = str(getattr(cfg, "grad_estimator", None) or "none")  # (the options as written, for the messages)
    has_estimator = chosen.estimator.name != "none"
    if has_estimator and ef != "none":
        raise InputError(f"--grad-estimator {est} with --error-feedback {ef}: choose one (each keeps its own memory of "
                         "what a worker sent)")
    if has_estimator and agg != "mean":
        raise InputError(f"--grad-estimator {est} with --aggregate {cfg.aggregate}: its server adds the mean of the "
                         "messages to a state of its own, which only the mean allows")
    if getattr(chosen.estimator.module, "TWO_POINT", False):
        _check_two_point(cfg, est, chosen)
    down, down_ef = str(getattr(cfg, "down_compressor", "none")), str(getattr(cfg, "down_feedback", "none"))
    has_down_ef = chosen.down_error_feedback.name != "none"
    if has_down_ef and getattr(chosen.down_error_feedback.module, "LAZY", False):
        raise InputError(f"--down-feedback {down_ef}: a lazy error feedback is for the workers' messages (the "
                         "server always broadcasts); use ef or ef21")
    if has_down_ef and chosen.down_compressor is None:
        raise InputError(f"--down-feedback {down_ef} needs a --down-compressor (the broadcast it corrects)")
    if has_down_ef and not accepts_error_feedback(chosen.down_compressor.module):
        contractive = sorted(n for n, m in registry.stages("compressor").items() if accepts_error_feedback(m))
        raise InputError(f"--down-feedback {down_ef} with --down-compressor {down}: error feedback needs a "
                         f"contractive compressor ({', '.join(contractive)})")
    if attack.OMNISCIENT and cfg.byzantine >= cfg.workers:
        raise InputError(f"--attack {cfg.attack} with --byzantine {cfg.byzantine}: the attack needs at least one "
                         "honest worker")
    if hasattr(chosen.aggregate.module, "check_workers"):
        chosen.aggregate.module.check_workers(cfg.workers, cfg.byzantine, cfg.aggregate)


def _check_two_point(cfg, est: str, chosen) -> None:
    """The options a two-point estimator (MARINA, docs/theory.md §8.10) cannot run with: its rounds of exact
    gradients go around each (what it needs of the problem, an exact local oracle, is checked when the problem is
    built: ``signsim.engine.driver.check_two_point``). ``chosen``: the run's stages (``signsim.stages.plan``)."""
    noise = str(getattr(cfg, "noise", None) or "none")
    down, pre = str(getattr(cfg, "down_compressor", "none")), str(getattr(cfg, "pre_aggregate", None) or "none")
    server_opt = str(getattr(cfg, "server_opt", None) or "sgd")  # (as written, for the messages)
    if noise != "none":
        raise InputError(f"--grad-estimator {est} with --noise {noise}: needs each worker's exact local gradient (the "
                         "difference at two iterates from the same sample); drop --noise")
    clashes = [(cfg.local_steps > 1, f"--local-steps {cfg.local_steps}"),
               (cfg.byzantine > 0, f"--byzantine {cfg.byzantine}"),
               (chosen.momentum.name != "none", f"--method {cfg.method} (its momentum, beta = {cfg.momentum:g})"),
               (bool(cfg.monotone), "--monotone"),
               (chosen.down_compressor is not None, f"--down-compressor {down}"),
               (chosen.server_optimizer.name != "sgd", f"--server-opt {server_opt}"),
               (bool(chosen.pre_aggregation), f"--pre-aggregate {pre}")]
    for clash, option in clashes:
        if clash:
            raise InputError(f"--grad-estimator {est} with {option}: its rounds of exact gradients go around it; "
                             "drop one of the two")


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
