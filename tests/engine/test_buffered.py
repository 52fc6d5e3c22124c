"""Asynchronous buffered aggregation (``--async``, FedBuff; docs/theory.md §14.6): synchronous FedAvg reproduced bit
for bit when B = C = S with constant times, a heterogeneous asynchronous run against FedBuff written out here as an
event simulation (on the NumPy replay's worker and server steps), its clock and bits, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

import signsim
from signsim import accounting
from signsim.engine.driver import simulate
from signsim.engine.reference import ReferenceRun

from ..cli.test_cli import assert_one_line_error
from ..conftest import make_engine

COMMON = dict(problem="quadratic", dim=12, workers=10, iters=40, compute="const:1", seed=3, eval_every=4)


@pytest.mark.parametrize("extra", [
    dict(clients_per_round=4),  # SSDM, sampled clients
    dict(clients_per_round=10),  # every client at once (C = M)
    dict(clients_per_round=3, method="sgd", compressor="identity", aggregate="mean", local_steps=3),  # FedAvg
    dict(clients_per_round=5, method="signum", uplink="const:1000", latency=0.25),
])
def test_a_buffer_of_every_client_of_a_round_with_constant_times_is_the_synchronous_run(extra):
    sync = signsim.run(**COMMON, **extra)
    buffered = signsim.run(**COMMON, **extra, asynchronous=f"buffer:{extra['clients_per_round']}")
    assert buffered.to_dict()["x_final"] == sync.to_dict()["x_final"]
    for key in ("iter", "loss", "grad_norm", "bits_up", "grad_calls"):
        assert list(buffered.history[key]) == list(sync.history[key]), key
    # (the bits down differ by convention: an asynchronous client downloads the model, 32 d bits, when it does not
    # hold it, where a round's participants receive its broadcast)


def fedbuff(ref: ReferenceRun, B: int, C: int, a: float, K: int):
    """FedBuff (Nguyen et al. 2022, Algorithm 1) on the simulated clock, written out: C clients train at a time, each
    on the model it downloaded when it started; the server takes the uploads as they arrive (ties: the lowest slot
    first), weights each by (1 + tau)^-a, and after B of them steps with their aggregate. At an instant the server
    first takes every upload of that instant, then starts a client in each free slot: the first idle clients of the
    next S-prefix of a Fisher-Yates shuffle (the replay's sampler), sorted into the free slots. Returns (x, time,
    bits up, bits down, steps taken)."""
    s, M, d = ref.s, ref.M, ref.p.dim
    compute, up, down = ref.system
    lat, H, lr = s.system.latency, s.local_steps, s.lr
    comp, ef = s.compressor, s.error_feedback.module
    now, version, k = 0.0, 0, 0
    held, busy = np.zeros(M, dtype=int), np.zeros(M, dtype=bool)
    slots: list = [None] * C  # (client, version, finish, message, bits)
    buffer, bits_up, bits_down = [], 0.0, 0.0

    def start():
        nonlocal bits_down
        free = [j for j in range(C) if slots[j] is None]
        if not free:
            return
        order = list(range(M))
        for i in range(C):
            j = i + int(ref.sampler.integers(0, M - i))
            order[i], order[j] = order[j], order[i]
        who = sorted([m for m in order[:C] if not busy[m]][:len(free)])
        for j, m in zip(free, who, strict=True):
            t_down = 0.0
            if held[m] != version:
                bits_down += 32 * d
                t_down = lat + 32 * d / down[m]
                held[m] = version
            g = ref.pseudo_gradient(m, lr)
            v = ref.momentum(m, g)
            ref.seen[m] += 1
            u = ef.reference_before(lr, v, ref.err[m])
            msg = np.asarray(comp.module.reference(u, comp.params, int(s.sign_zero), ref.gens[m]), dtype=float)
            ef.reference_after(ref.err[m], u, msg)
            bits = accounting.message_bits(comp, u, msg, s.sign_zero)
            t_up = lat + bits / up[m] if bits > 0 else 0.0
            slots[j] = (m, version, now + t_down + H * compute[m] + t_up, msg, bits)  # (added in this order)
            busy[m] = True

    while k < K:
        j = min((j for j in range(C) if slots[j] is not None), key=lambda j: (slots[j][2], j), default=None)
        if j is None or slots[j][2] > now:
            start()
            j = min((j for j in range(C) if slots[j] is not None), key=lambda j: (slots[j][2], j))
            now = slots[j][2]
        m, v, _, msg, bits = slots[j]
        slots[j], busy[m] = None, False
        w = (1.0 + (version - v)) ** -a if a else 1.0
        buffer.append(msg * w if w != 1.0 else msg)
        bits_up += bits
        if len(buffer) == B:
            broadcast = ref.aggregate(np.array(buffer))
            ref.broadcast = broadcast
            ref.x = ref.finish(ef.reference_direction(broadcast, ref.g_server), lr, B)
            buffer, version, k = [], version + 1, k + 1
    return ref.x, now, bits_up, bits_down, k


@pytest.mark.parametrize("extra", [
    dict(asynchronous="buffer:3:poly:0.5", method="ssdm"),
    dict(asynchronous="buffer:2", method="sgd", compressor="top-k:3", aggregate="mean", local_steps=2),
    dict(asynchronous="buffer:7:poly:1", method="signsgd", aggregate="majority"),
])
def test_an_asynchronous_run_is_fedbuff_written_out_as_events(extra):
    iters = 300  # (more steps than one chunk's candidate rows: the rows left over carry into the next chunk)
    engine, problem, model, params, settings, cfg = make_engine(
        iters=iters, eval_every=iters, problem="quadratic", dim=8, workers=12, noise="gaussian:1",
        clients_per_round=5, compute="lognormal:1:0.8", uplink="lognormal:40:0.5", downlink="const:200",
        latency=0.05, **extra)
    simulate(engine)
    ref = ReferenceRun(problem, model, params, settings, cfg.workers, cfg.seed)
    spec = settings.system.buffer
    x, now, bits_up, bits_down, steps = fedbuff(ref, spec.size, 5, spec.staleness, iters)
    assert engine.k == steps == iters
    np.testing.assert_allclose(engine.x, x, rtol=1e-12, atol=1e-14)
    assert engine.tally[4] == now  # the clock: the arrival that completed the last step
    assert (engine.tally[0], engine.tally[1]) == (bits_up, bits_down)
    # the critical path's parts add up to the clock
    assert engine.tally[5:8].sum() == pytest.approx(now, rel=1e-12)


def test_stale_updates_weigh_less_and_the_clock_orders_arrivals():
    common = dict(problem="quadratic", dim=8, workers=12, clients_per_round=6, iters=60, compute="lognormal:1:1",
                  method="sgd", compressor="identity", aggregate="mean", seed=5)
    flat = signsim.run(**common, asynchronous="buffer:2")
    weighted = signsim.run(**common, asynchronous="buffer:2:poly:2")
    const = signsim.run(**common, asynchronous="buffer:2:const")
    assert const.to_dict()["x_final"] == flat.to_dict()["x_final"]
    assert weighted.to_dict()["x_final"] != flat.to_dict()["x_final"]
    # the same arrivals either way: time and bits do not depend on the weights
    assert list(weighted.history["bits_up"]) == list(flat.history["bits_up"])
    assert list(weighted.history["time"]) == list(flat.history["time"])
    times = list(flat.history["time"])
    assert all(b >= a for a, b in zip(times, times[1:], strict=False)) and times[-1] > 0


@pytest.mark.slow  # compiles a composition's own asynchronous loop (about 20 s); the fast suite runs in the one loop
def test_the_one_asynchronous_loop_and_a_compositions_own_give_the_same_run(monkeypatch):
    """Bit for bit (SIGNSIM_LOOP): an asynchronous run takes the plan of every built-in stage or its composition's
    own (``compose.buffered_plan``); that changes which code is compiled, never a number."""
    from signsim.engine import compose

    opts = {**COMMON, "clients_per_round": 4, "method": "signum", "asynchronous": "buffer:3:poly:0.5",
            "noise": "student-t:3:0.5", "compute": "lognormal:1:0.8", "uplink": "const:40"}
    runs = {}
    for mode in ("builtin", "composed"):
        monkeypatch.setenv(compose.LOOP_ENV, mode)
        engine = make_engine(**opts)[0]
        simulate(engine)
        runs[mode] = engine.plan.stages.builtin, engine.history(), engine.x, engine.tally
    (one_plan, *one), (own_plan, *own) = runs["builtin"], runs["composed"]
    assert one_plan and not own_plan  # each took the loop it was told to
    assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(one, own, strict=True))
    assert one[0].shape[0] > 2


def test_an_asynchronous_run_takes_the_one_loop_when_asked_or_when_only_that_is_cached(monkeypatch):
    from numba import typeof

    from signsim.engine import compose, split_compile
    from signsim.engine.plan import plan_for
    from signsim.stages import kinds, registry

    stages = {k: next(iter(registry.builtin(k).values())) for k in kinds.NAMES}
    in_cache: set = set()
    monkeypatch.setattr(split_compile, "cached", lambda dispatcher, signature: signature[0] in in_cache)

    def builtin(mode: str) -> bool:
        monkeypatch.setenv(compose.LOOP_ENV, mode)
        plan = compose.buffered_plan("analytic", stages, (), "gaussian")
        assert plan.problems.noise == (None if plan.stages.builtin else "gaussian")
        return plan.stages.builtin

    assert builtin("builtin") and not builtin("composed") and not builtin("auto")  # nothing cached: its own
    in_cache.add(typeof(plan_for("analytic", parallel=False)))
    assert builtin("auto")  # the one loop, as ``signsim compile`` leaves it
    in_cache.add(typeof(plan_for("analytic", stages, "gaussian", parallel=False)))
    assert not builtin("auto")  # its own, when cached
    assert builtin("analytic,glm") and not builtin("glm")


@pytest.mark.parametrize(("args", "says"), [
    (("--async", "buffer"), "expected buffer:B"),
    (("--async", "buffer:0"), "between 1 and"),
    (("--async", "buffer:2:poly:-1"), "finite and >= 0"),
    (("--async", "buffer:2", "--topology", "allgather"), "--topology ps"),
    (("--async", "buffer:2", "--deadline", "3"), "no rounds to cut"),
    (("--async", "buffer:2", "--down-compressor", "sign"), "--down-compressor"),
    (("--async", "buffer:2", "--method", "ef21"), "--error-feedback ef21"),
    (("--async", "buffer:2", "--method", "marina"), "--grad-estimator"),
    (("--async", "buffer:2", "--byzantine", "1", "--attack", "alie"), "--attack alie"),
    # a server step aggregates B messages: a rule that needs more is refused as a round's is for S
    (("--async", "buffer:2", "--byzantine", "1", "--aggregate", "mda:1", "--method", "sgd"),
     "2 messages a server step"),
    (("--async", "buffer:4", "--byzantine", "1", "--aggregate", "krum:1", "--method", "sgd"), "Krum needs"),
])
def test_what_cannot_run_asynchronously_is_refused_in_one_line(cli, args, says):
    r = cli("run", "--workers", "6", "--clients-per-round", "3", "--iters", "2", *args)
    assert_one_line_error(r, says)


def test_a_run_of_no_step_and_the_declared_bits_of_a_step():
    none = signsim.run(problem="quadratic", dim=6, workers=8, clients_per_round=4, iters=0, compute="const:1",
                       asynchronous="buffer:2")
    assert list(none.history["iter"]) == [0]
    # B uploads and, per upload, at most one model downloaded by the client started in its place
    doc = signsim.run(problem="quadratic", dim=6, workers=8, clients_per_round=4, iters=30, compute="lognormal:1:1",
                      downlink="const:1000", asynchronous="buffer:9").to_dict()
    declared, final = doc["bits_per_iter"], doc["final"]
    assert final["bits_down"] / 30 <= declared["down"] == 9 * 32 * 6
    assert final["bits_up"] / 30 <= declared["up"]
