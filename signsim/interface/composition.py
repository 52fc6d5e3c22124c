"""A run's composition checked in one place (docs/theory.md §2, §8, §12): the stages chosen, against each other and
against the rounds, the data and the asynchronous server, before anything is built or allocated.

``check(cfg, method, chosen)`` is called by the config's validation (``signsim.interface.config.validate``) once
each value has passed its own type, range and choices (``signsim.interface.options``) and every stage spec is parsed
(``chosen``: ``signsim.stages.plan.of_config``). What it reads of the stages comes from their modules'
declarations (``check_workers``, ``rows``, ``LAZY``, ``INCREMENTS``, ``TWO_POINT``, ``OMNISCIENT``, the ``LABELS``
flag) and from the table of kinds; the only names it compares with are the kinds' defaults (``none``, the mean,
plain SGD on the server). Each refusal is one ``InputError`` line that
names the options as the user wrote them. The checks run in a fixed order, so that a run with two faults is told
of the same one every time. What needs the built problem (its dimension, an exact local oracle) is checked when
the run is built (``signsim.engine.build``, ``signsim.engine.driver.check_two_point``).
"""

from __future__ import annotations

from signsim import rounds
from signsim.errors import InputError
from signsim.errors import shown as _shown
from signsim.stages import accepts_error_feedback, error_feedback_refusal, kinds, pre_aggregated_rows, registry


def check(cfg, method, chosen) -> None:
    """Every check of the composition of the resolved config ``cfg`` (``method``: its MethodSpec; ``chosen``: its
    parsed stages), in order; the first that fails raises."""
    _check_data_oracle(cfg, chosen)
    _check_pre_aggregate(cfg, chosen)
    _check_buffer(cfg, chosen)
    if cfg.momentum2 is not None and method.momentum_kind != "lion":
        raise InputError(f"--momentum2 {cfg.momentum2}: applies only to Lion momentum")
    _stages(cfg, method, chosen)
    _check_round_aggregate(cfg)
    _rounds(cfg)


def _aggregation_needs(cfg, n: int) -> str | None:
    """What the aggregation lacks with n messages a round (its ``check_workers``' reason, e.g. Krum's "needs M > 2f
    + 2"), or None when n are enough (or the rule asks nothing)."""
    agg = registry.stages("aggregation").get(str(cfg.aggregate).split(":")[0])
    if agg is None or not hasattr(agg, "check_workers"):
        return None
    try:
        agg.check_workers(n, min(cfg.byzantine, n), cfg.aggregate)
    except InputError as e:
        return str(e).rsplit(": ", 1)[-1]
    return None


def _check_round_aggregate(cfg) -> None:
    """A rule that needs enough messages (Krum) against the S clients of a round, named as the user gave S
    (``--clients-per-round 3``, not "--workers 3")."""
    s = rounds.checked_clients(cfg.workers, cfg.participation, cfg.clients_per_round)
    need = _aggregation_needs(cfg, s) if s < cfg.workers else None
    if need is not None:
        given = (f"--participation {_shown(cfg.participation)} of --workers {cfg.workers}"
                 if cfg.participation is not None else f"--clients-per-round {cfg.clients_per_round}")
        raise InputError(f"{given} with --aggregate {cfg.aggregate}: {s} clients per round, but {need} (M: the "
                         "messages aggregated in a round, one per client)")


def _check_pre_aggregate(cfg, chosen) -> None:
    """The chain of pre-aggregations gets S messages a round and needs enough of them; the aggregation then gets the
    rows the chain leaves (bucketing leaves ceil(S/s)), which a rule such as Krum needs enough of."""
    links = chosen.pre_aggregation
    if not links:
        return
    s = rounds.checked_clients(cfg.workers, cfg.participation, cfg.clients_per_round)
    try:
        n = pre_aggregated_rows(links, s)
    except InputError as e:
        raise InputError(f"--pre-aggregate {cfg.pre_aggregate}: {e}") from None
    need = _aggregation_needs(cfg, n) if n < s else None
    if need is not None:
        raise InputError(f"--pre-aggregate {cfg.pre_aggregate} leaves {n} messages a round for --aggregate "
                         f"{cfg.aggregate}, but {need}")


def _check_buffer(cfg, chosen) -> None:
    """An asynchronous server aggregates B messages a step (``--async buffer:B``, docs/theory.md §14.6): its
    pre-aggregations and aggregation need enough of them, as a round's need enough of its S."""
    if getattr(cfg, "asynchronous", None) is None:
        return
    from signsim.system.model import parse_buffer

    B = parse_buffer(cfg.asynchronous).size
    where = f"--async {cfg.asynchronous}"
    n = B
    if chosen.pre_aggregation:
        try:
            n = pre_aggregated_rows(chosen.pre_aggregation, B)
        except InputError as e:
            raise InputError(f"{where} with --pre-aggregate {cfg.pre_aggregate}: {e}") from None
    need = _aggregation_needs(cfg, n)
    if need is not None:
        raise InputError(f"{where} with --aggregate {cfg.aggregate}: {n} messages a server step, but {need}")


def _check_data_oracle(cfg, chosen) -> None:
    """What needs the samples of a data problem: ``--batch-size full``, the exact gradient of each worker's local
    objective (docs/theory.md §5), and an attack whose Byzantine workers flip their labels (its LABELS flag:
    label-flip, §8.5), which needs class labels."""
    from signsim import problems
    from signsim.problems.sampling import is_full

    spec = problems.get(cfg.problem)
    if is_full(cfg.batch_size):
        if "model" in spec.options:
            raise InputError("--batch-size full: not with --model yet (its minibatches are drawn in PyTorch); give a "
                             "batch size")
        if "data" not in spec.options:
            data = ", ".join(n for n, p in problems.registry().items() if "data" in p.options)
            raise InputError(f"--batch-size full: applies to the data problems ({data}), whose workers hold samples; "
                             f"{spec.name} has none")
        if cfg.split == "split-batch":
            raise InputError("--batch-size full: not with --split split-batch (each minibatch comes from a label group "
                             "drawn at random: a worker has no local objective); choose another --split")
    attack = chosen.attack
    if kinds.setup_flag("LABELS", attack.module) and not spec.label_flip:
        if "model" in spec.options:
            raise InputError(f"--attack {cfg.attack}: not with --model yet (its gradients are computed in PyTorch, "
                             "which does not flip labels); choose another attack")
        labelled = ", ".join(n for n, p in problems.registry().items() if p.label_flip)
        what = "fits real-valued targets, not classes" if "data" in spec.options else "has no labels"
        raise InputError(f"--attack {cfg.attack}: its Byzantine workers flip their labels, and {spec.name} {what} "
                         f"(it applies to {labelled})")


def _stages(cfg, method, chosen) -> None:
    """Combinations of stages that make no sense exit 2 naming both options (``method``: the run's MethodSpec)."""
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


def _rounds(cfg) -> None:
    """The rounds' cross-option checks (docs/theory.md §12): one InputError line naming what the user wrote."""
    P, S, M = cfg.participation, cfg.clients_per_round, cfg.workers
    s = rounds.checked_clients(M, P, S)
    H = cfg.local_steps
    partial = s < M
    given = f"--participation {_shown(P)}" if P is not None else f"--clients-per-round {S}"
    if cfg.votes == "binomial" and (H != 1 or partial or cfg.server_lr != 1):
        what = f"--local-steps {H}" if H != 1 else given if partial else f"--server-lr {_shown(cfg.server_lr)}"
        raise InputError(f"{what} does not apply with --votes binomial (it draws one vote of all M workers at x per "
                         "iteration); drop one of the two")
    down = str(getattr(cfg, "down_compressor", None) or "none")
    if cfg.votes == "binomial" and down != "none":
        raise InputError(f"--down-compressor {down} does not apply with --votes binomial (its vote steps by the "
                         "majority sign); drop one of the two")
    pre = str(getattr(cfg, "pre_aggregate", None) or "none")
    if cfg.votes == "binomial" and pre != "none":
        raise InputError(f"--pre-aggregate {pre} does not apply with --votes binomial (it counts votes, never "
                         "messages); drop one of the two")
    server_opt = str(getattr(cfg, "server_opt", None) or "sgd")
    if cfg.votes == "binomial" and server_opt.split(":")[0] != "sgd":
        raise InputError(f"--server-opt {server_opt} does not apply with --votes binomial (its vote steps by the "
                         "majority sign); drop one of the two")
