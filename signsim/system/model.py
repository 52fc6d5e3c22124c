"""A run's system model (docs/theory.md §14): what turns its messages into simulated wall-clock time.

Given by the options of the "System" panel (``--compute``, ``--uplink``, ``--downlink``, ``--latency``,
``--server-bandwidth``, ``--topology``, ``--budget-seconds``), a config's ``[system]`` table, or the same keywords
in Python. Without any of them a run keeps no clock and every result is what it was before the clock existed. With
some, the others take their defaults: compute 0 s, links unlimited, latency 0, a parameter server.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from signsim.codes import Topology, choice
from signsim.errors import InputError
from signsim.system import laws

#: the run options that make a system model (any one of them given turns the clock on)
OPTIONS = ("compute", "uplink", "downlink", "latency", "server_bandwidth", "topology", "budget_seconds", "deadline",
           "over_select", "asynchronous")
#: ``--async``'s forms (docs/theory.md §14.6)
ASYNC_FORMS = "buffer:B | buffer:B:const | buffer:B:poly:A"


@dataclass(frozen=True)
class Buffer:
    """Asynchronous buffered aggregation (FedBuff): the server steps once ``size`` uploads have arrived, each weighted
    by (1 + tau)^-``staleness`` (0: by 1), tau the server steps since its client downloaded the model."""

    size: int
    staleness: float = 0.0
    spec: str = ""


def parse_buffer(spec: str) -> Buffer:
    """``--async`` SPEC: ``buffer:B`` (B >= 1 updates a server step), ``buffer:B:const`` (the same), or
    ``buffer:B:poly:A`` (weights (1 + tau)^-A, A >= 0 finite)."""
    from signsim.numbers import MAX_SIZE, to_float, to_int

    where = f"--async {spec!r}"
    parts = spec.split(":")
    if parts[0] != "buffer" or len(parts) not in (2, 3, 4) or (len(parts) == 3 and parts[2] != "const") or (
            len(parts) == 4 and parts[2] != "poly"):
        raise InputError(f"{where}: expected {ASYNC_FORMS}")
    try:
        size = to_int(parts[1])
    except ValueError:
        raise InputError(f"{where}: B must be a whole number of updates, got {parts[1]!r}") from None
    if not 1 <= size <= MAX_SIZE:
        raise InputError(f"{where}: B must be between 1 and {MAX_SIZE}, got {size}")
    staleness = 0.0
    if len(parts) == 4:
        try:
            staleness = to_float(parts[3])
        except ValueError:
            raise InputError(f"{where}: A must be a number, got {parts[3]!r}") from None
        if not (0.0 <= staleness < math.inf):
            raise InputError(f"{where}: A must be finite and >= 0, got {parts[3]!r}")
    return Buffer(size, staleness, spec)


@dataclass(frozen=True)
class SystemModel:
    compute: laws.Law = laws.Law("const", 0.0)
    uplink: laws.Law = laws.Law("const", math.inf)
    downlink: laws.Law = laws.Law("const", math.inf)
    latency: float = 0.0
    server_bandwidth: float = math.inf
    topology: str = "ps"
    budget_seconds: float = math.inf
    deadline: float = math.inf
    over_select: float | None = None
    #: asynchronous buffered aggregation (None: synchronous rounds)
    buffer: Buffer | None = None

    @property
    def code(self) -> int:
        return int(choice(Topology, self.topology))

    def per_worker(self, M: int, seed: int) -> np.ndarray:
        """The loop's ``system`` array (``signsim.engine.clock``): each worker's compute time, uplink and downlink
        (rows in the order of ``laws.PROPERTIES``), and rows of zeros for its idle time and its rounds."""
        from signsim.seeding import system_stream

        out = np.zeros((5, M))
        for row, prop in enumerate(laws.PROPERTIES):
            law = getattr(self, prop)
            with np.errstate(over="ignore", under="ignore"):  # (checked just below)
                out[row] = laws.values(prop, law, M, system_stream(seed, row))
            low = float(out[row].min()) if M else 1.0
            if (prop == "compute" and not math.isfinite(float(out[row].max()))) or (prop != "compute" and low <= 0.0):
                raise InputError(f"--{prop} {law.spec}: some worker's value is "
                                 f"{'infinite' if prop == 'compute' else '0 in floating point'}; give a smaller SIGMA")
        return out

    def check_times(self, system: np.ndarray, bits: float, steps: int, rounds: int) -> None:
        """InputError when a run of ``rounds`` rounds on the workers ``system`` could take more seconds than a float
        holds (``bits``: the most bits one round can move over one link; ``steps``: gradients a round)."""
        links = min(float(system[1].min()), float(system[2].min()), self.server_bandwidth)
        worst = steps * float(system[0].max()) + 4 * self.latency + 2 * bits / links
        if not math.isfinite(worst * max(rounds, 1)):
            raise InputError(f"the system model's times overflow: one round could take {worst:.3g} s (--compute, "
                             "--latency and the links' bits per second); give values a run can add up")


def given(cfg) -> bool:
    """Whether ``cfg`` (a RunConfig or its dict) asks for a system model."""
    get = cfg.get if isinstance(cfg, dict) else lambda k: getattr(cfg, k, None)
    return any(get(name) is not None for name in OPTIONS)


def of_config(cfg) -> SystemModel | None:
    """The system model of a resolved config, None without one."""
    if not given(cfg):
        return None
    kw = {prop: laws.parse(prop, getattr(cfg, prop)) for prop in laws.PROPERTIES if getattr(cfg, prop) is not None}
    for name in ("latency", "server_bandwidth", "topology", "budget_seconds", "deadline", "over_select"):
        if getattr(cfg, name) is not None:
            kw[name] = getattr(cfg, name)
    if getattr(cfg, "asynchronous", None) is not None:
        kw["buffer"] = parse_buffer(cfg.asynchronous)
    return SystemModel(**kw)


def refusal(model: SystemModel, settings, cfg) -> str | None:
    """Why the run's composition cannot run on ``model``'s topology (one line), or None. A ring collective has no
    server: no compressed broadcast, and only the round's participants learn the aggregate (a two-point estimator
    needs every worker to); an all-reduce carries only the sum of messages whose sum is itself a message of their
    encoding (the compressor's ``ALLREDUCE``), for an aggregation that reads only that sum (``SUMMED``) and no
    pre-aggregation (which reads every message)."""
    if cfg.votes == "binomial":
        return ("--votes binomial: not with a system model (it draws the vote counts, not the workers whose "
                "messages the clock times); drop one of the two")
    if model.buffer is not None:
        return async_refusal(model, settings, cfg)
    reason = selection_refusal(model, settings, cfg)
    if reason is not None or model.topology == "ps":
        return reason
    where = f"--topology {model.topology}"
    if settings.downlink:
        return f"{where}: a ring has no server to compress a broadcast (--down-compressor needs --topology ps)"
    if getattr(settings.estimator.module, "TWO_POINT", False):
        return (f"{where}: --grad-estimator {settings.estimator.spec} needs every worker to receive each round's "
                "aggregate (a server's broadcast): use --topology ps")
    if model.server_bandwidth != math.inf:
        return f"{where}: --server-bandwidth is the parameter server's link; a ring has none"
    if model.topology == "allreduce":
        c, a = settings.compressor, settings.aggregate
        if not getattr(c.module, "ALLREDUCE", False):
            return (f"{where}: --compressor {c.spec}: the sum of its messages is not a message of the same encoding, "
                    "so a ring all-reduce cannot carry it; use --topology allgather or ps")
        if not getattr(a.module, "SUMMED", False):
            return (f"{where}: --aggregate {a.spec} reads every message, not only their sum; use --topology "
                    "allgather or ps")
        pre = [st.spec for st in settings.pre_aggregation if st.spec != "none"]
        if pre:
            return f"{where}: --pre-aggregate {pre[0]} reads every message; use --topology allgather or ps"
    return None


def async_refusal(model: SystemModel, settings, cfg) -> str | None:
    """Why the run cannot aggregate asynchronously (``--async``, §14.6), or None: it needs a parameter server without
    a shared link (each client's own links time it), no rounds to cut (a deadline, over-selection), no compressed
    broadcast (a client downloads the model it starts from), stages that keep no server state made of every
    worker's messages in step (EF21, CLAG, DIANA, SCAFFOLD, MARINA), no attack that reads a round's honest messages,
    and gradients computed in the loop (not your own PyTorch model's rounds)."""
    where = f"--async {model.buffer.spec}"
    if model.topology != "ps":
        return f"{where}: asynchronous clients talk to a parameter server; use --topology ps"
    if model.server_bandwidth != math.inf:
        return f"{where}: not with --server-bandwidth (the clients' uploads are timed on their own links)"
    if model.deadline != math.inf or model.over_select is not None:
        return f"{where}: there are no rounds to cut short; drop --deadline and --over-select"
    if settings.downlink:
        return (f"{where}: a client downloads the model it starts from, not a compressed broadcast; drop "
                f"--down-compressor")
    if getattr(cfg, "model", None) is not None:
        return f"{where}: not with --model yet (your model's gradients are taken a round at a time)"
    ef, est, att = settings.error_feedback, settings.estimator, settings.attack
    if getattr(ef.module, "SERVER_STATE", False) or getattr(ef.module, "LAZY", False):
        return (f"{where}: --error-feedback {ef.spec} keeps a server state made of every worker's messages in step; "
                "use none or ef")
    if (getattr(est.module, "STATE", False) or getattr(est.module, "SERVER_STATE", False)
            or getattr(est.module, "TWO_POINT", False)):
        return f"{where}: --grad-estimator {est.spec} keeps state made of every worker's messages in step"
    if getattr(att.module, "OMNISCIENT", False):
        return f"{where}: --attack {att.spec} reads a round's honest messages; an asynchronous server has no rounds"
    return None


def selection_refusal(model: SystemModel, settings, cfg) -> str | None:
    """Why the server cannot leave late messages out of a round (``--deadline``, ``--over-select``, §14.5), or None:
    only a parameter server waits for them, without its own link's shared limit (the late messages' share of it is
    not modelled); a stage that keeps state the server updates from every message (an error feedback's or an
    estimator's: EF21, CLAG, DIANA, SCAFFOLD, MARINA) would lose its invariant; with a deadline, an aggregation or
    pre-aggregation that needs a number of messages (``check_workers``) may get fewer."""
    given = [f"--deadline {model.deadline!r}" if model.deadline != math.inf else "",
             f"--over-select {model.over_select!r}" if model.over_select is not None else ""]
    given = [g for g in given if g]
    if not given:
        return None
    where = given[0]
    if model.topology != "ps":
        return f"{where}: a ring has no server to stop waiting; use --topology ps"
    pre = [st.spec for st in settings.pre_aggregation if st.spec != "none"]
    if model.deadline != math.inf and pre:
        return (f"{where}: --pre-aggregate {pre[0]} takes a number of messages that a deadline cannot promise (a late "
                "message leaves fewer)")
    if model.server_bandwidth != math.inf:
        return f"{where}: not with --server-bandwidth yet (the late messages' share of the server's link)"
    ef, est = settings.error_feedback, settings.estimator
    if getattr(ef.module, "SERVER_STATE", False):
        return (f"{where}: --error-feedback {ef.spec} keeps a server state made of every worker's messages; a "
                "late message would break it (use none or ef)")
    if getattr(est.module, "STATE", False) or getattr(est.module, "SERVER_STATE", False):
        return (f"{where}: --grad-estimator {est.spec} keeps state made of every worker's messages; a late "
                "message would break it")
    if model.over_select is not None and settings.participants(cfg.workers) == settings.keep:
        return (f"--over-select {model.over_select!r}: every worker already takes part (S = M = {cfg.workers}); "
                "sample fewer with --clients-per-round or --participation")
    if model.deadline != math.inf:
        for st in (settings.aggregate, *settings.pre_aggregation):
            if hasattr(st.module, "check_workers"):
                return (f"--deadline {model.deadline!r}: {st.spec} needs a number of messages that a deadline "
                        "cannot promise (a late message leaves fewer)")
    return None


def takes_no_time(model: SystemModel) -> bool:
    """Whether every round takes 0 seconds on ``model``: no compute, no latency, unlimited links."""
    def const(law, v):
        return law.kind == "const" and law.value == v

    return (const(model.compute, 0.0) and model.latency == 0.0 and const(model.uplink, math.inf)
            and const(model.downlink, math.inf) and model.server_bandwidth == math.inf)


def check(model: SystemModel | None, settings, cfg) -> None:
    if model is None:
        return
    if model.budget_seconds != math.inf and takes_no_time(model):
        raise InputError(f"--budget-seconds {model.budget_seconds!r}: the clock never moves on this system (no "
                         "compute time, latency or limited link); give --compute, --latency, --uplink or --downlink")
    reason = refusal(model, settings, cfg)
    if reason is not None:
        raise InputError(reason)
