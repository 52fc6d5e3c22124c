"""The simulated clock (docs/theory.md §14) against closed forms written here, and against a NumPy replay of the
clock on the messages of the plain Python run (``signsim.engine.reference``): every topology, the method families
whose messages differ (CLAG's silent workers, SCAFFOLD's two messages, MARINA's full rounds, a compressed downlink,
a sparse broadcast, sampled clients), heterogeneous workers (lognormal, traced), the server's link, the time budget,
the target; and that a run without a system model is what it was."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import signsim
from signsim.engine.driver import simulate
from signsim.engine.reference import ReferenceRun
from tests.conftest import make_engine

QUAD = dict(problem="quadratic", dim=7, noise="gaussian:1", seed=3)


def run(**kw) -> dict:
    return signsim.run(**{**QUAD, **kw}).to_dict()


def clock(doc: dict) -> float:
    """The clock as the results give it: the last history row's and the system section's, which must agree."""
    assert doc["history"][-1]["time"] == doc["system"]["time"]
    return doc["system"]["time"]


def test_sign_with_majority_vote_on_a_parameter_server_is_the_closed_form():
    """The issue's own check: K (T + alpha + d/B + alpha + d/B), one bit a coordinate each way."""
    K, M, d, T, alpha, B = 9, 5, 7, 0.25, 0.003, 1e5
    doc = run(method="signsgd", aggregate="majority", workers=M, iters=K, compute=f"const:{T}", uplink=f"const:{B}",
              downlink=f"const:{B}", latency=alpha)
    assert doc["final"]["bits_up"] == K * M * d and doc["final"]["bits_down"] == K * M * d  # one bit each way
    assert math.isclose(clock(doc), K * (T + alpha + d / B + alpha + d / B), rel_tol=1e-12)
    assert doc["history"][0]["time"] == 0.0
    s = doc["system"]
    assert math.isclose(s["seconds"]["compute"], K * T, rel_tol=1e-12)
    assert math.isclose(s["seconds"]["upload"], K * (alpha + d / B), rel_tol=1e-12)
    assert math.isclose(s["seconds"]["download"], K * (alpha + d / B), rel_tol=1e-12)
    assert s["idle"]["max"] == pytest.approx(0.0, abs=1e-12)  # identical workers wait for nobody


@pytest.mark.parametrize("H", [1, 3])
def test_rings_are_the_collectives_formulas(H):
    """SGD's float messages: all-gather (S - 1)(alpha + b/B), all-reduce 2 (S - 1)(alpha + b/(S B)), after H T."""
    K, M, d, T, alpha, B = 4, 6, 7, 0.5, 0.01, 2e4
    b = 32 * d
    common = dict(method="sgd", workers=M, iters=K, compute=f"const:{T}", uplink=f"const:{B}", downlink=f"const:{B}",
                  latency=alpha, local_steps=H, **({"lr": 0.01} if H > 1 else {}))
    gather = run(topology="allgather", **common)
    reduce = run(topology="allreduce", **common)
    assert math.isclose(clock(gather), K * (H * T + (M - 1) * (alpha + b / B)), rel_tol=1e-12)
    assert math.isclose(clock(reduce), K * (H * T + 2 * (M - 1) * (alpha + b / (M * B))), rel_tol=1e-12)
    assert gather["x_final"] == reduce["x_final"]  # the topology changes the clock, never the run


def test_the_servers_link_and_its_broadcast():
    """With B_s the uploads end no sooner than T + alpha + M b / B_s, the broadcast no sooner than alpha + M D / B_s."""
    K, M, d, T, alpha, B, Bs = 5, 4, 7, 0.1, 0.002, 1e4, 2e4
    doc = run(method="sgd", workers=M, iters=K, compute=f"const:{T}", uplink=f"const:{B}", downlink=f"const:{B}",
              latency=alpha, server_bandwidth=Bs)
    b = D = 32 * d
    up = max(T + alpha + b / B, T + alpha + M * b / Bs)
    down = max(alpha + D / B, alpha + M * D / Bs)
    assert math.isclose(clock(doc), K * (up + down), rel_tol=1e-12)


def lognormal_values(seed: int, prop: int, M: int, median: float, sigma: float) -> np.ndarray:
    """Worker m's value under lognormal:median:sigma, from the stream docs/theory.md §14.1 names: (seed, 5, prop)."""
    gen = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(5, prop))))
    return median * np.exp(sigma * gen.standard_normal(M))


def test_heterogeneous_workers_wait_for_the_slowest():
    K, M, d, alpha, B = 6, 8, 7, 0.001, 1e5
    doc = run(method="signsgd", workers=M, iters=K, compute="lognormal:0.2:0.7", uplink=f"const:{B}",
              downlink=f"const:{B}", latency=alpha)
    c = lognormal_values(QUAD["seed"], 0, M, 0.2, 0.7)
    assert c.std() > 0.05  # the workers differ
    round_time = c.max() + alpha + d / B + alpha + d / B
    assert math.isclose(clock(doc), K * round_time, rel_tol=1e-12)
    idle = K * (c.max() - c)  # each waits for the slowest's computing
    assert math.isclose(doc["system"]["idle"]["max"], idle.max(), rel_tol=1e-9)
    assert math.isclose(doc["system"]["idle"]["mean"], idle.mean(), rel_tol=1e-9)


def test_a_trace_file_gives_each_worker_its_row(tmp_path):
    K, M, d = 3, 4, 7
    path = tmp_path / "devices.csv"
    path.write_text("client,compute,uplink,downlink\n" + "".join(f"c{m},{0.1 * (m + 1)},{1e3 * (m + 1)},1e9\n"
                                                                   for m in range(M + 2)))
    doc = run(method="signsgd", workers=M, iters=K, compute=f"trace:{path}", uplink=f"trace:{path}",
              downlink=f"trace:{path}")
    per = max(0.1 * (m + 1) + d / (1e3 * (m + 1)) for m in range(M)) + d / 1e9
    assert math.isclose(clock(doc), K * per, rel_tol=1e-12)
    assert doc["config"]["compute"] == f"trace:{path}"  # absolute, for a sweep's workers


def test_without_a_system_model_nothing_changes():
    """No clock: no time in the history or the results, and the run is the one with a clock, bit for bit."""
    common = dict(method="ssdm", workers=5, iters=12, clients_per_round=3)
    plain = run(**common)
    timed = run(**common, compute="lognormal:1:1", uplink="const:1e3", latency=0.5)
    assert "time" not in plain["history"][0] and "system" not in plain
    assert plain["x_final"] == timed["x_final"] and plain["final"]["bits_up"] == timed["final"]["bits_up"]
    engine, *_ = make_engine(**QUAD, **common)
    assert np.isnan(simulate(engine).history[:, signsim.history.index("time")]).all()


def test_the_time_budget_stops_at_the_first_round_that_reaches_it():
    T, K = 0.3, 100
    doc = run(method="sgd", workers=3, iters=K, compute=f"const:{T}", budget_seconds=2.0, eval_every=1)
    assert doc["status"] == "budget" and doc["final"]["iters_done"] == math.ceil(2.0 / T)
    assert doc["system"]["time"] >= 2.0 > doc["system"]["time"] - T


def test_the_target_reports_the_first_recorded_row_that_reaches_it():
    losses = [r["loss"] for r in run(method="sgd", workers=3, iters=40, eval_every=1)["history"]]
    assert losses[-1] < losses[0]
    goal = (losses[0] + losses[-1]) / 2
    doc = run(method="sgd", workers=3, iters=40, eval_every=1, compute="const:0.5", target=f"loss:{goal!r}")
    rows = doc["history"]
    first = next(r for r in rows if r["loss"] <= goal)
    assert 0 < first["iter"] < 40
    t = doc["target"]
    assert t["reached"] and t["iter"] == first["iter"] and t["time"] == first["time"] == 0.5 * first["iter"]
    assert t["bits_up"] == first["bits_up"]
    missed = run(method="sgd", workers=3, iters=5, target="loss:-1")["target"]
    assert not missed["reached"] and missed["time"] is None


# --- every method family against a NumPy replay of the clock on the plain Python run's messages -------------------


def replay(rounds, system: np.ndarray, alpha: float, Bs: float, topology: str, deadline: float = math.inf,
           keep: int | None = None) -> float:
    """docs/theory.md §14.2 and §14.5 written out with NumPy, round by round, from each round's senders and bits."""
    c, U, W = system
    total = 0.0
    for r in rounds:
        who = np.asarray(r["who"])
        b = np.asarray(r["bits"], dtype=float)
        pre = np.asarray(r["pre"], dtype=float)  # the model a participant that does not hold it downloads first
        start = np.where(pre > 0, alpha + pre / W[who], 0.0)
        if topology == "ps" and np.isfinite(Bs) and pre.sum() > 0:  # those downloads through the server's link
            start = np.where(pre > 0, np.maximum(start, alpha + pre.sum() / Bs), 0.0)
        comp = start + r["steps"] * c[who]
        if topology == "ps":
            up = np.where(b > 0, alpha + b / U[who], 0.0)
            end = (comp + up).max()
            if b.sum() > 0 and np.isfinite(Bs):
                end = max(end, comp.min() + alpha + b.sum() / Bs)
            if np.isfinite(deadline) or keep is not None:  # the server stops waiting (§14.5)
                finish = np.sort(comp + up)
                in_time = finish[finish <= deadline][:keep]
                late = len(in_time) < len(finish) and (keep is None or len(in_time) < keep)
                end = deadline if late else in_time[-1]
            rec = np.asarray(r["recipients"])
            down = 0.0
            if r["down"] > 0:
                down = max((alpha + r["down"] / W[rec]).max(), alpha + len(rec) * r["down"] / Bs)
            total += end + down
            continue
        n = len(who)
        link = np.minimum(U[who], W[np.roll(who, -1)])  # link i -> i + 1
        comm = 0.0
        if b.sum() > 0 and topology == "allgather":
            for s in range(n - 1):
                comm += alpha + (np.roll(b, s) / link).max()  # participant i forwards i - s's message
        elif b.sum() > 0 and n > 1:
            comm = 2 * (n - 1) * (alpha + b.max() / (n * link.min()))
        total += comp.max() + comm
    return total


LAWS = dict(compute="lognormal:0.05:0.5", uplink="lognormal:2e3:0.4", downlink="lognormal:5e3:0.3", latency=0.004)
#: the compositions the README's test command compiles anyway run there; the others (their own loops to compile) in
#: the slow step of .ci/run
SLOW = pytest.mark.slow
CASES = [
    dict(method="clag", compressor="top-k:2", workers=5),  # silent workers
    dict(method="scaffold", workers=6, clients_per_round=3),  # two messages each way
    pytest.param(dict(method="marina", workers=4, batch_size="full", problem="logistic", noise="none", dim=None),
                 marks=SLOW),  # full rounds
    pytest.param(dict(method="marina", workers=6, clients_per_round=3, batch_size="full", problem="logistic",
                      noise="none", dim=None), marks=SLOW),  # sampled: the broadcast and the full rounds to all
    pytest.param(dict(method="signsgd", workers=5, down_compressor="scaled-sign", down_feedback="ef"),
                 marks=SLOW),  # a compressed downlink
    dict(method="sgd", compressor="top-k:2", aggregate="mean", workers=5),  # a sparse broadcast
    dict(method="ssdm", workers=9, clients_per_round=4, server_bandwidth=3e4),  # sampled clients, the server's link
    pytest.param(dict(method="sgd", compressor="top-k:3", workers=5, topology="allgather"), marks=SLOW),
    dict(method="sgd", workers=5, clients_per_round=3, topology="allreduce", local_steps=2, lr=0.01),
    dict(method="signsgd", workers=9, deadline=0.06),  # some late, some rounds empty
    dict(method="signsgd", workers=8, clients_per_round=3, deadline=0.09),  # ... with sampled clients catching up
    pytest.param(dict(method="ssdm", workers=12, clients_per_round=4, over_select=0.5, local_steps=2, lr=0.01),
                 marks=SLOW),
    pytest.param(dict(method="topk-ef", workers=8, clients_per_round=5, over_select=0.3, deadline=0.07, byzantine=2,
                      attack="alie", aggregate="cclip:10"), marks=SLOW),  # both, with an omniscient attack
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{v}" for v in c.values()) if isinstance(c, dict)
                         else None)
def test_the_clock_replays_every_method_family(case):
    iters = 8
    opts = {**QUAD, **LAWS, **case, "iters": iters, "eval_every": 1}
    opts = {k: v for k, v in opts.items() if v is not None}
    if opts.get("topology", "ps") != "ps":
        opts.pop("server_bandwidth", None)
    engine, problem, model, params, settings, cfg = make_engine(**opts)
    out = simulate(engine)
    ref = ReferenceRun(problem, model, params, settings, cfg.workers, cfg.seed)
    for _ in range(iters):
        x = ref.step()
    np.testing.assert_allclose(out.x, x, rtol=1e-12, atol=1e-14)
    assert engine.tally[0] == ref.bits_up and engine.tally[1] == ref.bits_down
    if "deadline" in case or "over_select" in case:
        cuts = [r["cut"] for r in ref.rounds]
        assert all(np.isfinite(cuts))
    if "deadline" in case and "over_select" not in case:  # the deadline left some out, and some rounds empty
        assert any(r["cut"] == case["deadline"] for r in ref.rounds)
    if case["method"] == "clag":
        assert any(0 in r["bits"] for r in ref.rounds)  # some worker stayed silent
    if case["method"] == "marina":
        assert any(r.get("fresh") for r in ref.rounds) and not all(r.get("fresh") for r in ref.rounds)
    system = np.array([lognormal_values(cfg.seed, p, cfg.workers, *law)
                       for p, law in enumerate([(0.05, 0.5), (2e3, 0.4), (5e3, 0.3)])])
    keep = settings.keep
    want = replay(ref.rounds, system, 0.004, opts.get("server_bandwidth", math.inf), opts.get("topology", "ps"),
                  opts.get("deadline", math.inf), keep)
    got = out.history[-1, signsim.history.index("time")]
    assert math.isclose(got, want, rel_tol=1e-12), (got, want)


def test_a_deadline_nobody_meets_leaves_the_model_where_it_was():
    """Every message late: each round is counted (bits up, the deadline's seconds), the server never steps."""
    K, M, d = 6, 4, 7
    doc = run(method="signsgd", workers=M, iters=K, compute="const:1", deadline=0.5)
    start = run(method="signsgd", workers=M, iters=0)["x_final"]
    assert doc["x_final"] == start
    assert doc["final"]["bits_up"] == K * M * d and doc["final"]["bits_down"] == 0
    assert math.isclose(clock(doc), K * 0.5, rel_tol=1e-12)


def test_a_round_in_which_x_did_not_move_leaves_every_worker_in_step():
    """Catch-up (§12): a worker downloads the model only when it does not hold the current one. With every round
    empty (a deadline nobody meets) x never moves, so nobody ever downloads; in a run whose rounds move x, a worker
    sampled after missing a round does."""
    common = dict(method="signsgd", workers=4, clients_per_round=2, iters=6, compute="const:1")
    still = run(**common, deadline=0.5)
    assert still["x_final"] == run(method="signsgd", workers=4, iters=0)["x_final"]
    assert still["final"]["bits_down"] == 0 and still["config"]["catch_up"] == "full"
    moving = run(**common)
    assert moving["final"]["bits_down"] > 6 * 2 * 7  # the votes, and some downloads of 32 d bits
    assert (moving["final"]["bits_down"] - 6 * 2 * 7) % (32 * 7) == 0
    assert run(method="signsgd", workers=4, iters=2)["config"]["catch_up"] is None  # (every worker takes part)


def test_the_target_falls_back_to_the_training_accuracy_without_a_held_out_split():
    doc = run(problem="logistic", dim=None, noise="none", method="sgd", workers=2, iters=20, eval_every=5,
              test_fraction=0, target="accuracy:0.5")
    assert doc["target"]["metric"] == "train_acc" and doc["target"]["reached"]


def test_a_time_budget_not_reached_says_so():
    doc = run(method="sgd", workers=3, iters=4, compute="const:0.5", budget_seconds=100.0)
    assert doc["status"] == "ok" and "budget not reached" in doc["note"] and "2 simulated seconds" in doc["note"]


def test_over_selection_samples_more_and_keeps_the_first_to_finish():
    """S + ceil(F S) sampled (0.3 of 10 is 3, although 0.3 * 10 = 3.0000000000000004), the first S aggregated: with
    equal workers the round ends at the common finish; the sampled count is in the bits."""
    K, M, S, d, T, alpha, B = 5, 40, 10, 7, 0.2, 0.01, 1e4
    doc = run(method="signsgd", workers=M, clients_per_round=S, over_select=0.3, iters=K, compute=f"const:{T}",
              uplink=f"const:{B}", latency=alpha, catch_up="none")  # (the catch-up's time: the replay tests)
    assert doc["final"]["bits_up"] == K * 13 * d
    assert math.isclose(clock(doc), K * (T + alpha + d / B + alpha), rel_tol=1e-12)  # (an unlimited downlink: alpha)


# --- what is refused, in one line ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "says"), [
    (("--compute", "fast"), "--compute fast: not a law"),
    (("--compute", "lognormal:1"), "lognormal takes V:SIGMA"),
    (("--compute", "const:-1"), "a compute time must be"),
    (("--uplink", "const:0"), "a bandwidth must be"),
    (("--downlink", "lognormal:1e3:-1"), "SIGMA must be"),
    (("--compute", "trace:/nonexistent/devices.csv"), "no such file"),
    (("--topology", "ring"), "--topology"),
    (("--latency", "-1"), "--latency"),
    (("--budget-seconds", "0"), "--budget-seconds"),
    (("--topology", "allreduce", "--method", "signsgd"), "--compressor sign"),
    (("--topology", "allreduce", "--method", "sgd", "--aggregate", "median"), "--aggregate median"),
    (("--topology", "allgather", "--method", "sgd", "--down-compressor", "sign"), "--down-compressor"),
    (("--topology", "allgather", "--server-bandwidth", "1e6"), "--server-bandwidth"),
    (("--compute", "const:1", "--votes", "binomial", "--method", "signsgd"), "--votes binomial"),
    (("--target", "speed:3"), "--target speed:3"),
    (("--target", "accuracy:0.9"), "does not record accuracy"),
    (("--deadline", "1", "--aggregate", "krum:1", "--method", "sgd"), "krum:1 needs a number of messages"),
    (("--deadline", "1", "--method", "ef21"), "--error-feedback ef21"),
    (("--deadline", "1", "--method", "diana"), "--grad-estimator diana"),
    (("--deadline", "1", "--topology", "allgather"), "a ring has no server"),
    (("--deadline", "1", "--server-bandwidth", "1e6"), "not with --server-bandwidth"),
    (("--over-select", "0.5", "--workers", "4"), "every worker already takes part"),
    (("--deadline", "0"), "--deadline"),
    (("--over-select", "1e308", "--clients-per-round", "2"), "--over-select"),
    (("--budget-seconds", "5", "--topology", "ps"), "the clock never moves"),
])
def test_bad_system_input_is_one_line(args, says, cli):
    r = cli("run", "--iters", "2", *args)
    assert r.code == 2 and says in r.err and len(r.err.strip().splitlines()) == 1, r.err


@pytest.mark.parametrize(("text", "says"), [
    ("client,uplink\nc0,1e3\n", "no column 'compute'"),
    ("compute\n0.1\n", "1 worker rows, the run has 4 workers"),
    ("compute\n0.1\nfast\n0.1\n0.1\n", "line 3: 'fast' is not a number"),
    ("compute\n0.1\n\n-2\n0.1\n0.1\n", "line 4"),  # (a blank line is skipped, and counted)
])
def test_a_bad_trace_file_is_one_line(tmp_path, cli, text, says):
    path = tmp_path / "t.csv"
    path.write_text(text)
    r = cli("run", "--iters", "2", "--workers", "4", "--compute", f"trace:{path}")
    assert r.code == 2 and says in r.err and str(path) in r.err and len(r.err.strip().splitlines()) == 1, r.err


def test_a_config_files_system_table(tmp_path, cli):
    cfg = tmp_path / "c.toml"
    cfg.write_text('method = "signsgd"\nworkers = 3\niters = 4\n[system]\ncompute = "const:0.5"\nlatency = 0.25\n')
    doc = signsim.run(str(cfg)).to_dict()
    assert math.isclose(doc["system"]["time"], 4 * (0.5 + 0.25 + 0.25), rel_tol=1e-12)
    bad = tmp_path / "bad.toml"
    bad.write_text('[system]\nlatncy = 1\n')
    r = cli("run", "--config", str(bad))
    assert r.code == 2 and "[system] has no option 'latncy'" in r.err and "latency" in r.err, r.err


def test_a_sweeps_run_ids_do_not_change_without_a_system_model():
    """Ids of sweeps made before the options existed stay the same: unset, they are left out of the id."""
    import hashlib
    import json

    from signsim.interface.config import resolve
    from signsim.interface.options import OMIT_UNSET
    from signsim.sweep.spec import run_id

    config = resolve({"method": "ssdm", "workers": 4}).to_dict()
    before = {k: v for k, v in config.items() if k not in OMIT_UNSET}
    assert set(OMIT_UNSET) <= set(config) and len(before) < len(config)
    old = hashlib.sha256(json.dumps(before, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]
    assert run_id(config) == old
    assert run_id({**config, "latency": 0.5}) != old and run_id({**config, "catch_up": "none"}) != old


def test_a_sweep_reports_time_and_bits_to_its_target(tmp_path, cli):
    """The sweep's groups: how many runs reached the target, their mean simulated time and bits to it (each run's
    own ``target``), and a [system] table in a sweep file."""
    p = tmp_path / "s.toml"
    p.write_text('problem = "quadratic"\ndim = 7\nnoise = "gaussian:1"\nmethod = "sgd"\nworkers = 3\niters = 40\n'
                 'eval-every = 1\nrepeats = 2\n[system]\ncompute = "const:0.5"\ntarget = "loss:10"\n'
                 '[grid]\nlr = [0.002, 0.01]\n')
    r = cli("sweep", p, "--out", tmp_path / "out", "--json")
    assert r.code == 0, r.err
    doc = r.json()
    for g in doc["groups"]:
        runs = [json.loads(f.read_text()) for f in (tmp_path / "out" / "runs").glob("*.json")]
        mine = [d["target"] for d in runs if d["config"]["lr"] == g["params"]["lr"]]
        hit = [t for t in mine if t["reached"]]
        assert g["target_reached"] == len(hit) == 2
        assert math.isclose(g["mean_target_time"], np.mean([t["time"] for t in hit]), rel_tol=1e-12)
        assert g["mean_target_bits"] == np.mean([t["bits_up"] + t["bits_down"] for t in hit])
    fast, slow = sorted(doc["groups"], key=lambda g: g["params"]["lr"], reverse=True)
    assert fast["mean_target_time"] < slow["mean_target_time"]


@pytest.mark.parametrize(("args", "says"), [
    (("--uplink", "lognormal:1:1e6"), "--uplink lognormal:1:1e6: some worker's value is 0"),
    (("--compute", "lognormal:1:1e6"), "--compute lognormal:1:1e6: some worker's value is infinite"),
    (("--uplink", "const:5e-324"), "times overflow"),
    (("--latency", "1e308"), "times overflow"),
    (("--compute", "const:1e308", "--local-steps", "2"), "times overflow"),
    (("--compute", "const:1", "--deadline", "0.5", "--pre-aggregate", "nnm:1"), "--pre-aggregate nnm:1"),
    (("--compute", "const:0", "--budget-seconds", "3"), "the clock never moves"),
])
def test_times_a_float_cannot_hold_are_one_line(args, says, cli):
    r = cli("run", "--method", "sgd", "--workers", "4", "--iters", "3", *args)
    assert r.code == 2 and says in r.err and len(r.err.strip().splitlines()) == 1, r.err


def test_a_trace_with_a_byte_order_mark_and_a_bad_trace_in_a_sweep(tmp_path, cli):
    bom = tmp_path / "bom.csv"
    bom.write_bytes("\ufeffcompute\n0.5\n0.5\n0.5\n".encode())
    assert math.isclose(run(method="sgd", workers=3, iters=2, compute=f"trace:{bom}")["system"]["time"], 1.0)
    bad = tmp_path / "bad.csv"
    bad.write_text("uplink\n1e6\n-1\n1e6\n")
    sweep = tmp_path / "s.toml"
    sweep.write_text(f'workers = 3\niters = 2\n[grid]\nuplink = ["const:1e6", "trace:{bad}"]\n')
    r = cli("sweep", sweep, "--out", tmp_path / "out")
    assert r.code == 2 and "line 3" in r.err and len(r.err.strip().splitlines()) == 1, r.err


def test_a_float_option_given_an_integer_beyond_every_float_is_one_line(tmp_path, cli):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[system]\nlatency = 1" + "0" * 400 + "\n")
    r = cli("run", "--config", cfg)
    assert r.code == 2 and "too large" in r.err and len(r.err.strip().splitlines()) == 1, r.err


def test_the_laws_fill_the_rows_the_clock_reads():
    """The order of the worker properties is stated in laws.PROPERTIES; the clock's row indices must follow it."""
    from signsim.engine import clock
    from signsim.system import laws

    assert [clock.W_COMPUTE, clock.W_UP, clock.W_DOWN] == [list(laws.PROPERTIES).index(p)
                                                          for p in ("compute", "uplink", "downlink")]
