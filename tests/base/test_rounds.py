"""Federated rounds (docs/theory.md §12): local steps, partial participation, their accounting and bad input."""

import json

import numpy as np
import pytest

import signsim
from signsim.engine import loop
from signsim.engine.driver import simulate
from signsim.engine.participants import sample_rounds
from signsim.engine.reference import ReferenceRun
from signsim.errors import InputError
from signsim.interface import config
from signsim.rounds import clients_per_round

from ..conftest import binomial_tolerance, make_engine, run_subprocess

SMALL = dict(problem="quadratic", dim=12, workers=6, noise="gaussian:1", seed=4)
#: compositions the replay must follow under rounds: sign vote, mean + EF, top-k + EF, momentum (from the first
#: pseudo-gradient: SSDM), a blind and an omniscient Byzantine attack, heterogeneous split data
COMPOSITIONS = {
    "sign-vote": dict(SMALL, method="signsgd"),
    "mean-ef": dict(SMALL, method="ef-signsgd"),
    "topk-ef": dict(SMALL, method="topk-ef"),
    "signum": dict(SMALL, method="signum"),
    "ssdm": dict(SMALL, method="ssdm"),
    "byzantine-invert": dict(SMALL, method="signsgd", byzantine=2, attack="invert"),
    "byzantine-alie": dict(SMALL, method="sgd", byzantine=2, attack="alie:1", aggregate="trimmed:0.2"),
    "label-skew": dict(problem="logistic", method="signsgd", workers=4, split="label-skew:0.5", batch_size=8, seed=2),
}
ROUNDS = {"H3": dict(local_steps=3), "S3": dict(clients_per_round=3), "H3-S3": dict(local_steps=3, clients_per_round=3)}


def replay(iters, **options):
    engine, problem, model, params, settings, cfg = make_engine(iters=iters, eval_every=1, **options)
    simulate(engine)
    ref = ReferenceRun(problem, model, params, settings, cfg.workers, cfg.seed)
    for _ in range(iters):
        ref.step()
    return engine, ref


@pytest.mark.parametrize("rounds", list(ROUNDS))
@pytest.mark.parametrize("case", list(COMPOSITIONS))
def test_engine_matches_the_numpy_replay_under_rounds(case, rounds):
    opts = {**COMPOSITIONS[case], **ROUNDS[rounds]}
    if case == "label-skew" and "clients_per_round" in opts:
        opts["clients_per_round"] = 2
    engine, ref = replay(8, **opts)
    np.testing.assert_allclose(engine.x, ref.x, rtol=1e-12, atol=1e-14)
    assert engine.tally[loop.T_UP] == ref.bits_up
    assert engine.tally[loop.T_DOWN] == ref.bits_down
    S = ref.S
    assert ref.participated.sum() == 8 * S
    if S < ref.M:  # a real sample: somebody sat out some rounds
        assert ref.participated.min() < 8
    h = engine.history()
    assert list(h[:, loop.H_GRAD_CALLS]) == [k * S * opts.get("local_steps", 1) for k in range(9)]


BIT_IDENTITY = {
    "signsgd": dict(SMALL, method="signsgd"),
    "ef-signsgd": dict(SMALL, method="ef-signsgd", lr_schedule="sqrt"),
    "signum-monotone": dict(SMALL, method="signum", monotone=True),
    "qsgd-alie": dict(SMALL, method="qsgd", byzantine=1, attack="alie:1", aggregate="trimmed:0.2"),
}


@pytest.mark.parametrize("case", list(BIT_IDENTITY))
def test_one_local_step_and_everyone_is_bit_identical_to_the_defaults(case):
    """H = 1, --local-lr = --lr, --server-lr 1, every worker: the loop of §2 step for step (the same floats)."""
    opts = BIT_IDENTITY[case]
    a, *_ = make_engine(iters=15, eval_every=1, **opts)
    simulate(a)
    lr = a.settings.lr
    for explicit in (dict(local_steps=1, local_lr=lr, server_lr=1.0, participation=1.0),
                     dict(clients_per_round=opts["workers"])):
        b, *_ = make_engine(iters=15, eval_every=1, **opts, **explicit)
        simulate(b)
        assert np.array_equal(a.x, b.x)
        assert np.array_equal(a.history(), b.history(), equal_nan=True)
        assert np.array_equal(a.tally, b.tally)
        assert np.array_equal(b.part_gen.bit_generator.state["state"]["state"],
                              a.part_gen.bit_generator.state["state"]["state"])  # nothing drawn


def test_full_participation_draws_nothing_from_the_sampling_stream():
    from signsim.seeding import participation_stream

    e, *_ = make_engine(iters=5, **SMALL, method="signsgd")
    simulate(e)
    assert e.part_gen.bit_generator.state == participation_stream(SMALL["seed"]).bit_generator.state
    p, *_ = make_engine(iters=5, **SMALL, method="signsgd", participation=0.5)
    simulate(p)
    assert p.part_gen.bit_generator.state != participation_stream(SMALL["seed"]).bit_generator.state


def test_each_worker_takes_part_with_frequency_s_over_m():
    """Uniform sampling without replacement: P(m in S_k) = S/M, P(m, m' both in) = S(S-1)/(M(M-1)); over R
    independent rounds each frequency is within 5 binomial standard errors (fixed seed)."""
    M, S, R = 10, 3, 20_000
    gen = np.random.default_rng(11)
    rounds = np.empty((R, S), dtype=np.int64)
    sample_rounds(gen, M, rounds, True)
    counts = np.zeros(M)
    pairs = np.zeros((M, M))
    for chosen in rounds:
        assert np.all(np.diff(chosen) > 0)  # ascending, distinct
        counts[chosen] += 1
        pairs[np.ix_(chosen, chosen)] += 1
    p = S / M
    assert np.all(np.abs(counts / R - p) <= binomial_tolerance(p, R))
    q = S * (S - 1) / (M * (M - 1))
    off = pairs[~np.eye(M, dtype=bool)] / R
    assert np.all(np.abs(off - q) <= binomial_tolerance(q, R))


def test_the_compiled_sample_equals_the_replays():
    settings_opts = dict(SMALL, method="signsgd", clients_per_round=4, iters=30)
    engine, problem, model, params, settings, cfg = make_engine(**settings_opts)
    ref = ReferenceRun(problem, model, params, settings, cfg.workers, cfg.seed)
    gen = np.random.default_rng(5)
    ref.sampler = np.random.default_rng(5)
    rounds = np.empty((200, 4), dtype=np.int64)
    sample_rounds(gen, cfg.workers, rounds, True)
    for row in rounds:
        assert list(row) == ref.participants()


@pytest.mark.parametrize(("M", "S"), [(2, 1), (7, 6), (64, 63), (1000, 100), (10**6, 100), (2**40, 5)])
def test_the_sparse_shuffle_equals_a_dense_fisher_yates(M, S):
    """The table of touched positions gives the participants of a dense partial Fisher-Yates shuffle of 0..M-1
    (an independent NumPy copy, or positions drawn by NumPy for M too large to hold), from the same draws."""
    gen, ref = np.random.default_rng(M % 97), np.random.default_rng(M % 97)
    rounds = np.empty((30, S), dtype=np.int64)
    sample_rounds(gen, M, rounds, True)
    for row in rounds:
        if M <= 10**4:  # the whole permutation
            order = list(range(M))
            for i in range(S):
                j = i + int(ref.integers(0, M - i))
                order[i], order[j] = order[j], order[i]
            assert list(row) == sorted(order[:S])
        else:  # the positions that moved, in a Python dict
            moved = {}
            for i in range(S):
                j = i + int(ref.integers(0, M - i))
                moved[i], moved[j] = moved.get(j, j), moved.get(i, i)
            assert list(row) == sorted(moved.get(i, i) for i in range(S))
    assert gen.random() == ref.random()  # the same number of draws


@pytest.mark.parametrize("H", [1, 4])
@pytest.mark.parametrize("server_lr", [1.0, 0.5])
def test_local_steps_of_noiseless_sgd_on_a_quadratic_follow_the_closed_form(H, server_lr):
    """f = 1/2 sum L_i x_i^2, exact oracle: y^H = (1 - gamma L)^H x, and the server's step x - eta (x - y^H)."""
    K, gamma, eta = 5, 0.05, server_lr
    r = signsim.run(problem="quadratic", dim=6, kappa=10.0, method="sgd", workers=3, noise="none", iters=K,
                    lr=gamma, local_steps=H, server_lr=eta, eval_every=1)
    L = np.logspace(0, 1, 6)
    x = np.ones(6)
    for _ in range(K):
        x = x - eta * (x - (1 - gamma * L) ** H * x)
    np.testing.assert_allclose(r["x_final"], x, rtol=1e-12)
    assert r["final"]["grad_calls"] == K * 3 * H and r["final"]["rounds"] == K


def test_participants_are_counted_in_bits_up_and_down():
    d, M, S, K = 12, 8, 2, 10
    r = signsim.run(**{**SMALL, "workers": M}, method="signsgd", clients_per_round=S, iters=K, catch_up="none")
    assert r["final"]["bits_up"] == K * S * d  # one bit per coordinate per participant
    assert r["final"]["bits_down"] == K * S * d  # the vote (ties broken at random: 1 bit), to each participant
    assert (r["bits_per_iter"]["up"], r["bits_per_iter"]["down"]) == (S * d, S * d)
    m = signsim.run(**{**SMALL, "workers": M}, method="signsgd", aggregate="mean", clients_per_round=S, iters=K,
                    catch_up="none")
    assert m["final"]["bits_down"] == K * S * 2 * d  # the sum of S = 2 signs: ceil(log2(S + 1)) = 2 bits
    assert r["rounds"]["clients_per_round"] == S


def test_a_client_that_missed_the_last_broadcast_downloads_the_model_first():
    """--catch-up full (the default): each participant of round k >= 1 that was not in round k - 1 downloads x_k,
    32 d bits, beside the vote; the trajectory is the same as without the rule. With every worker taking part,
    nobody ever misses a broadcast."""
    from tests.stages.test_ef21_family import rounds

    d, M, S, K = 12, 8, 3, 10
    full = signsim.run(**{**SMALL, "workers": M}, method="signsgd", clients_per_round=S, iters=K)
    none = signsim.run(**{**SMALL, "workers": M}, method="signsgd", clients_per_round=S, iters=K, catch_up="none")
    parts = rounds(SMALL["seed"], M, S, K)
    catch_ups = sum(m not in parts[k - 1] for k in range(1, K) for m in parts[k])
    assert 0 < catch_ups < (K - 1) * S  # some were in the previous round, some not
    assert full["final"]["bits_down"] == none["final"]["bits_down"] + catch_ups * 32 * d
    assert full["final"]["bits_up"] == none["final"]["bits_up"] and full["x_final"] == none["x_final"]
    assert full["bits_per_iter"]["down"] == S * d + S * 32 * d  # the declared bound: every participant catches up
    everyone = [signsim.run(**{**SMALL, "workers": M}, method="signsgd", iters=K, catch_up=rule)["final"]
                for rule in ("full", "none")]
    assert everyone[0]["bits_down"] == everyone[1]["bits_down"] == K * M * d


@pytest.mark.parametrize("P, M, S", [(0.25, 32, 8), (0.01, 32, 1), (1.0, 7, 7), (0.5, 5, 2), (0.3, 5, 1),
                                     (0.7, 10, 7), (0.29, 100, 29)])
def test_participation_gives_s_rounded_down_at_least_one(P, M, S):
    assert clients_per_round(M, P, None) == S


BAD = [
    (["--local-steps", "0"], "--local-steps 0"),
    (["--participation", "0"], "--participation 0"),
    (["--participation", "1.5"], "--participation 1.5"),
    (["--workers", "4", "--clients-per-round", "5"], "--clients-per-round 5"),
    (["--participation", "0.5", "--clients-per-round", "2"], "--participation 0.5 and --clients-per-round 2"),
    (["--method", "signsgd", "--votes", "binomial", "--local-steps", "2"], "--local-steps 2"),
    (["--method", "signsgd", "--votes", "binomial", "--server-lr", "2"], "--server-lr 2"),
]


@pytest.mark.parametrize("args, named", BAD)
def test_bad_rounds_input_exits_2_with_one_line(args, named, cli):
    r = cli("run", "--problem", "quadratic", "--iters", "2", *args)
    assert r.code == 2, r.err
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], r.err
    assert "Traceback" not in r.err


@pytest.mark.parametrize("args, named", BAD)
def test_bad_rounds_input_in_python_config_and_sweep_files(args, named, tmp_path, cli):
    opts = {}
    for flag, value in zip(args[::2], args[1::2], strict=True):
        name = flag[2:].replace("-", "_")
        o = config.RECORD[name]
        opts[name] = {"int": int, "float": float}.get(o.kind, str)(value)
    flag = named.split()[0]
    names = (flag, flag[2:].replace("-", "_"))  # a file's error names the key as written
    with pytest.raises(InputError, match=flag):
        signsim.run(problem="quadratic", iters=2, **opts)
    toml = "\n".join(f"{k} = {json.dumps(v)}" for k, v in {"problem": "quadratic", "iters": 2, **opts}.items())
    cfg_file = tmp_path / "c.toml"
    cfg_file.write_text(toml + "\n")
    r = cli("run", "--config", str(cfg_file))
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and any(n in r.err for n in names), r.err
    sweep_file = tmp_path / "s.toml"
    sweep_file.write_text(toml + "\n[grid]\nseed = [1]\n")
    r = cli("sweep", str(sweep_file), "--out", str(tmp_path / "out"))
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and any(n in r.err for n in names), r.err


@pytest.mark.slow  # the same rounds run from four entry points, a sweep among them (5 s); .ci/run runs it
def test_the_documented_command_works_from_cli_config_sweep_and_python(tmp_path):
    opts = dict(method="signsgd", local_steps=5, participation=0.25, workers=32, iters=6)
    r = signsim.run(**opts)
    assert r["status"] == "ok" and r["rounds"]["clients_per_round"] == 8
    assert r["final"]["grad_calls"] == 6 * 8 * 5
    cli = run_subprocess("run", "--method", "signsgd", "--local-steps", "5", "--participation", "0.25", "--workers",
                         "32", "--iters", "6", "--json")
    assert cli.code == 0, cli.err
    assert json.loads(cli.out)["x_final"] == r.to_dict()["x_final"]
    f = tmp_path / "c.toml"
    f.write_text("".join(f"{k.replace('_', '-')} = {json.dumps(v)}\n" for k, v in opts.items()))
    c = run_subprocess("run", "--config", str(f), "--json")
    assert c.code == 0, c.err
    assert json.loads(c.out)["x_final"] == r.to_dict()["x_final"]
    s = tmp_path / "s.toml"
    base = "".join(line + "\n" for line in f.read_text().splitlines() if not line.startswith("local-steps"))
    s.write_text(base + "[grid]\nlocal-steps = [1, 5]\n")  # (a key is either top-level or varied, not both)
    sw = run_subprocess("sweep", str(s), "--out", str(tmp_path / "out"), "--quiet")
    assert sw.code == 0, sw.err
