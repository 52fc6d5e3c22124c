"""A run's stages, each of its spec strings parsed once (docs/theory.md §2, §8).

``of_config(cfg)`` reads the stage options of a run's config (``--compressor``, ``--aggregate``, ``--attack``,
``--error-feedback``, ``--server-opt``, ``--grad-estimator``, ``--down-compressor``, ``--down-feedback``,
``--pre-aggregate`` and the method's momentum) into a ``RunStages`` of resolved ``Stage`` objects (module and
parameters), which every layer below the config reads: the config's checks, the memory estimate, the engine's
settings and the results' description. A default that needs the dimension (a sparsifier's k) stays open until
``RunStages.at_dim(d)`` fills it in, without parsing the spec again.

The specs of a config are parsed once per process: ``of_config`` keeps the stages of the last few distinct sets of
specs (with the plugins loaded), so the config's checks, ``build`` and the engine share one parse, and a config
changed afterwards (a sweep's next point) is parsed anew. (A stage's own check of the workers,
``check_workers(M, byzantine, spec)`` of its module, is handed the spec and parses it again itself.)
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace

from signsim.errors import InputError
from signsim.stages import registry
from signsim.stages.kinds import PRE_KINDS
from signsim.stages.registry import Stage

#: the RunConfig fields the stages are read from (with the method's defaults for the empty ones)
FIELDS = ("method", "momentum", "compressor", "error_feedback", "aggregate", "attack", "server_opt",
          "grad_estimator", "down_compressor", "down_feedback", "pre_aggregate")
#: how many distinct sets of specs ``of_config`` keeps (a sweep's grid parses each point once)
KEEP = 64


@dataclass(frozen=True)
class RunStages:
    """The stages of one run, every spec parsed (docs/theory.md §2: momentum -> compressor -> error feedback ->
    attack -> aggregation; §8.7 the estimator, §8.8 the downlink, §8.9 the pre-aggregations, §12.4 the server's
    optimizer)."""

    momentum: Stage
    compressor: Stage
    error_feedback: Stage
    aggregate: Stage
    attack: Stage
    server_optimizer: Stage
    estimator: Stage
    #: the downlink's compressor, None without ``--down-compressor``
    down_compressor: Stage | None
    down_error_feedback: Stage
    #: the links of ``--pre-aggregate`` in order, without ``none``
    pre_aggregation: tuple[Stage, ...]
    #: the two compressors' specs as the user wrote them (``top-k:2e1``), for the messages of ``at_dim``
    written: tuple[str, str] = ("", "")

    def at_dim(self, dim: int) -> RunStages:
        """These stages at dimension ``dim``: the compressors' defaults that need it filled in, their limits in it
        checked (``top-k:K`` needs K <= d; the message names the spec as the user wrote it)."""
        up, down = self.written
        down = None if self.down_compressor is None else self.down_compressor.at_dim(dim, "--down-compressor", down)
        return replace(self, compressor=self.compressor.at_dim(dim, "--compressor", up or None), down_compressor=down)


_KEPT: dict[tuple, RunStages] = {}
_LOCK = threading.Lock()  # a Dask worker may resolve configs in several threads


def of_config(cfg, method) -> RunStages:
    """The stages of ``cfg`` (a RunConfig; ``method``: its MethodSpec, whose defaults fill the stage options left
    empty); InputError (one line, naming the option and what the user wrote) for a spec that does not parse."""
    key = (tuple(str(getattr(cfg, f, None)) for f in FIELDS), repr(method),
           tuple((k, n, id(m)) for k, table in registry.PLUGINS.items() for n, m in table.items()))
    with _LOCK:
        chosen = _KEPT.get(key)
    if chosen is None:
        chosen = _parse(cfg, method)
        with _LOCK:
            while len(_KEPT) >= KEEP:
                _KEPT.pop(next(iter(_KEPT)))
            _KEPT[key] = chosen
    return chosen


def _parse(cfg, method) -> RunStages:
    down = getattr(cfg, "down_compressor", None) or "none"
    # in the order the config's checks have always reported a bad spec in
    down_compressor = None if down == "none" else registry.parse("down_compressor", down)
    aggregate = registry.parse("aggregation", cfg.aggregate)
    attack = registry.parse("attack", cfg.attack)
    written = str(cfg.compressor or method.compressor)
    compressor = registry.parse("compressor", written)
    error_feedback = registry.parse("error_feedback", cfg.error_feedback or method.error_feedback)
    server_optimizer = registry.parse("server_optimizer", getattr(cfg, "server_opt", None) or "sgd")
    estimator = registry.parse("estimator", getattr(cfg, "grad_estimator", None) or "none")
    down_error_feedback = registry.parse("down_error_feedback", getattr(cfg, "down_feedback", None) or "none")
    return RunStages(momentum=momentum_stage(method, cfg), compressor=compressor,
                     error_feedback=error_feedback, aggregate=aggregate, attack=attack,
                     server_optimizer=server_optimizer, estimator=estimator, down_compressor=down_compressor,
                     down_error_feedback=down_error_feedback,
                     pre_aggregation=parse_pre_aggregate(getattr(cfg, "pre_aggregate", None) or "none"),
                     written=(written, "" if down == "none" else str(down)))


def default(kind: str) -> Stage:
    """The stage a kind has when a run does not choose one (its placeholder in the loop: ``none``, ``sgd``, the
    identity downlink), parsed once per process."""
    if kind not in _DEFAULTS:
        name = {"server_optimizer": "sgd", "down_compressor": "identity"}.get(kind, "none")
        _DEFAULTS[kind] = registry.parse(kind, name)
    return _DEFAULTS[kind]


_DEFAULTS: dict[str, Stage] = {}


def momentum_stage(method, cfg) -> Stage:
    """The momentum stage of a method: Lion's, EMA (from m_0 = g_hat(x_0) for SSDM) when beta > 0, else none."""
    if method.momentum_kind == "lion":
        name = "lion"
    elif cfg.momentum > 0:
        name = "ema-first" if method.momentum_from_first else "ema"
    else:
        name = "none"
    return registry.parse("momentum", name)


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
    for p in parts:
        registry.stage_spec("pre_aggregation", p)  # an unknown name, with the closest one
    links = tuple(registry.parse(kind, p, option="--pre-aggregate") for kind, p in zip(PRE_KINDS, parts, strict=False))
    if len(links) > 1 and any(link.name == "none" for link in links):
        raise InputError(f"--pre-aggregate {spec}: 'none' cannot be a link of a chain")
    return tuple(link for link in links if link.name != "none")
