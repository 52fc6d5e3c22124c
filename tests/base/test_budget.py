"""The communication budget (--budget-mb, --budget-bits; docs/theory.md §12) and the measured bits per iteration.

The oracle for the stop iteration is the accounting formula written out here by hand (docs/theory.md §7), not
``signsim.accounting``: a sign message is d bits, a float message 32 d, a majority vote of +-1 signs d bits per
copy, a mean of floats 32 d per copy; M workers send and receive every round, so a run with budget B stops after
K* = ceil(B / round) iterations. QSGD's measured bits are re-counted from the messages of the NumPy replay
(``signsim.engine.reference``).
"""

import json
import math

import numpy as np
import pytest

import signsim
from signsim.engine.driver import simulate
from signsim.engine.reference import ReferenceRun

from ..cli.test_cli import assert_one_line_error
from ..conftest import make_engine

QUAD = {"problem": "quadratic", "dim": 10, "workers": 8, "noise": "gaussian:1"}
D, M = 10, 8
#: bits of one round, up + down, by hand: signSGD (d-bit signs up, a d-bit majority vote down to each worker),
#: SGD (32-bit floats both ways)
ROUND = {"signsgd": M * D + M * D, "sgd": M * 32 * D + M * 32 * D}


def total(row):
    return row["bits_up"] + row["bits_down"]


@pytest.mark.parametrize(("method", "budget", "every"), [
    ("signsgd", 10_000, 1), ("signsgd", 10_000, 7), ("signsgd", 160, 1), ("signsgd", 161, 3), ("signsgd", 320, 1),
    ("sgd", 40_000, 1), ("sgd", 40_000, 25),
])
def test_stop_iteration_is_the_first_to_reach_the_budget(method, budget, every):
    r = signsim.run(**QUAD, method=method, lr=0.01, iters=400, eval_every=every, budget_bits=budget)
    k_star = math.ceil(budget / ROUND[method])
    assert r.status == "budget"
    assert r["final"]["iters_done"] == k_star
    h = r["history"]
    assert h[-1]["iter"] == k_star  # the final row is recorded where the run stopped
    assert total(h[-1]) == k_star * ROUND[method] >= budget
    assert total(r["final"]) == k_star * ROUND[method]
    if every == 1 and k_star > 1:
        assert h[-2]["iter"] == k_star - 1 and total(h[-2]) < budget
    assert [row["iter"] for row in h[:-1]] == list(range(0, k_star, every))


def test_budget_in_megabytes_is_bits_over_8e6():
    a = signsim.run(**QUAD, method="signsgd", iters=400, budget_mb=0.00125)  # 10,000 bits
    b = signsim.run(**QUAD, method="signsgd", iters=400, budget_bits=10_000)
    assert a["final"]["iters_done"] == b["final"]["iters_done"] == math.ceil(10_000 / ROUND["signsgd"])
    assert a["history"] == b["history"]


def test_budget_reached_at_the_last_iteration_and_beyond_it():
    # exactly K rounds: stopped at the budget at K; one round more than the run sends: ok, as without a budget
    at = signsim.run(**QUAD, method="signsgd", iters=20, budget_bits=20 * ROUND["signsgd"])
    assert at.status == "budget" and at["final"]["iters_done"] == 20
    beyond = signsim.run(**QUAD, method="signsgd", iters=20, budget_bits=21 * ROUND["signsgd"])
    assert beyond.status == "ok" and beyond["final"]["iters_done"] == 20


@pytest.mark.parametrize("method", ["signsgd", "ef-signsgd", "qsgd"])
def test_a_budget_the_run_never_reaches_changes_nothing(method):
    opts = dict(QUAD, method=method, iters=60, eval_every=5, seed=3)
    plain = signsim.run(**opts).to_dict()
    big = signsim.run(**opts, budget_mb=1e6).to_dict()
    assert big["status"] == plain["status"] == "ok"
    for key in ("history", "x_final", "bits_per_iter", "tracks"):
        assert big[key] == plain[key], key
    fin_a, fin_b = dict(plain["final"]), dict(big["final"])
    fin_a.pop("wall_time"), fin_b.pop("wall_time")
    assert fin_a == fin_b


def test_binomial_votes_honour_the_budget():
    opts = dict(problem="quadratic", dim=10, workers=1001, noise="gaussian:1", method="signsgd", iters=50)
    per_round = 1001 * 10 + 1001 * 10  # signs up, a majority vote (odd M: no tie) down
    r = signsim.run(**opts, votes="binomial", budget_bits=5 * per_round + 1)
    assert r.status == "budget" and r["final"]["iters_done"] == 6
    assert total(r["history"][-1]) == 6 * per_round
    assert r["bits_per_iter"]["up_worst"] == r["bits_per_iter"]["up_mean"] == 1001 * 10


# --- measured bits per iteration ------------------------------------------------------------------------------------

#: the method each compressor runs with: one whose loop other tests compile too (a message's size does not depend
#: on error feedback)
CARRIER = {"scaled-sign": "ef-signsgd", "top-k:3": "topk-ef"}


@pytest.mark.parametrize(("compressor", "up_per_worker", "sparse_down"), [
    ("sign", D, False), ("scaled-sign", D + 32, False), ("identity", 32 * D, False), ("terngrad", 32 + 2 * D, False),
    ("natural", 9 * D, False), ("top-k:3", 3 * (32 + 4), True), ("rand-k:2", 2 * (32 + 4), True),
])
def test_fixed_size_messages_measure_as_declared(compressor, up_per_worker, sparse_down):
    r = signsim.run(**QUAD, method=CARRIER.get(compressor, "sgd"), compressor=compressor, lr=0.01, iters=30)
    per = r["bits_per_iter"]
    assert per["up"] == M * up_per_worker  # index bits for d = 10: ceil(log2 10) = 4
    assert per["up_mean"] == per["up_worst"] == per["up"]
    if sparse_down:  # the mean of sparse messages goes down as (index, float) pairs when that is cheaper
        assert per["down_mean"] <= per["down"]
    else:
        assert per["down_mean"] == per["down"]
    if compressor == "sign":  # the sum of 8 signs takes 9 values: ceil(log2 9) = 4 bits per coordinate
        assert per["down"] == M * 4 * D
    if compressor == "identity":
        assert per["down"] == M * 32 * D


def test_qsgd_measured_bits_match_a_recount_of_the_replayed_messages():
    iters = 25
    engine, problem, model, params, settings, cfg = make_engine(
        problem="quadratic", dim=40, workers=4, noise="gaussian:1", method="sgd", compressor="qsgd:1", lr=0.01,
        iters=iters, eval_every=1, seed=5)
    simulate(engine)
    ref = ReferenceRun(problem, model, params, settings, cfg.workers, cfg.seed)
    per_iter = []
    d, level = 40, 1  # s = 1: L = ceil(log2 2) = 1 bit per level; I = ceil(log2 40) = 6 index bits
    for _ in range(iters):
        # the messages of this iteration, re-drawn as the replay does, counted by docs/theory.md §8.1's formula
        before = [g.bit_generator.state for g in ref.gens]
        bits = 0
        for m in range(cfg.workers):  # sgd: no momentum, no error feedback, the message is C(g)
            grad = ref.stochastic_gradient(m)
            msg = settings.compressor.module.reference(grad, settings.compressor.params, 0, ref.gens[m])
            n = int(np.count_nonzero(msg))
            bits += 32 + 1 + min(d * (1 + level), n * (6 + 1 + level))
        for g, s in zip(ref.gens, before, strict=True):  # the replay's step draws the same again
            g.bit_generator.state = s
        per_iter.append(bits)
        up_before = ref.bits_up
        ref.step()
        assert ref.bits_up - up_before == bits
    np.testing.assert_allclose(engine.x, ref.x, rtol=1e-12)
    from signsim.accounting import bits_per_iteration
    from signsim.commands.run import measured_bits

    declared = bits_per_iteration(settings.compressor, settings.aggregate, 4, d, settings.sign_zero, settings.tie)
    per = measured_bits(declared, engine.tally, iters)
    assert per["up_mean"] == sum(per_iter) / iters
    assert per["up_worst"] == max(per_iter)
    assert per["up"] == 4 * (32 + 1 + d * 2)  # the declared dense worst case
    assert per["up_mean"] < per["up"]  # s = 1 on d = 40: most levels are 0, the sparse form is used


# --- compare, sweeps, the command line ---------------------------------------------------------------------------

def test_compare_at_a_budget(cli, tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('problem = "quadratic"\ndim = 10\nworkers = 8\nnoise = "gaussian:1"\niters = 100\n'
                   'budget_bits = 16000\n'
                   '[[compare]]\nlabel = "sign"\nmethod = "signsgd"\n'
                   '[[compare]]\nlabel = "sgd"\nmethod = "sgd"\nlr = 0.01\n'
                   '[[compare]]\nlabel = "short"\nmethod = "signsgd"\niters = 30\n')
    r = cli("run", "--config", cfg, "--json")
    assert r.code == 0, r.err
    c = r.json()["comparison"]
    assert c["budget_given"] and c["budget_bits"] == 16000
    rows = {row["label"]: row for row in c["rows"]}
    assert rows["sign"]["stopped"] == "budget" and rows["sign"]["iters"] == 16000 // ROUND["signsgd"]
    assert rows["sgd"]["stopped"] == "budget" and rows["sgd"]["iters"] == math.ceil(16000 / ROUND["sgd"])
    assert rows["short"]["stopped"] == "iters" and rows["short"]["iters"] == 30 and rows["short"]["status"] == "ok"
    assert all(row["loss_at_budget"] == row["final_loss"] for row in c["rows"])
    shown = cli("run", "--config", cfg)
    assert shown.code == 0
    assert "the budget" in shown.err and "iters (30)" in shown.err


def test_sweep_with_a_budget(cli, tmp_path):
    p = tmp_path / "s.toml"
    p.write_text('problem = "quadratic"\ndim = 10\nworkers = 8\nmethod = "signsgd"\niters = 50\n'
                 '[grid]\nbudget_bits = [1600, 1e9]\n')
    r = cli("sweep", p, "--out", tmp_path / "out", "--json")
    assert r.code == 0, r.err
    assert r.json()["statuses"] == {"budget": 1, "ok": 1}
    docs = [json.loads(f.read_text()) for f in sorted((tmp_path / "out" / "runs").glob("*.json"))]
    assert sorted(d["final"]["iters_done"] for d in docs) == [10, 50]
    # a rerun finds both finished
    assert cli("sweep", p, "--out", tmp_path / "out", "--json").json()["ran"] == 0
    p.write_text('problem = "quadratic"\ndim = 10\nworkers = 8\nmethod = "signsgd"\niters = 50\nbudget_mb = 0.0002\n')
    r = cli("sweep", p, "--out", tmp_path / "out2", "--json")
    assert r.json()["statuses"] == {"budget": 1}


def test_cli_run_stops_at_the_budget(cli):
    r = cli("run", "--problem", "quadratic", "--dim", "10", "--method", "signsgd", "--iters", "200",
            "--budget-bits", "10000")
    assert r.code == 0
    assert f"stopped at the budget after {math.ceil(10_000 / ROUND['signsgd'])} iterations" in r.err


def test_summary_shows_the_measured_mean_of_a_variable_message():
    from signsim.render.tables import run_summary

    doc = signsim.run(problem="quadratic", dim=40, workers=4, method="sgd", compressor="qsgd:1", lr=0.01,
                      iters=20).to_dict()
    text = " ".join(str(c) for col in run_summary(doc).columns for c in col._cells)
    assert "measured mean" in text
    sign = signsim.run(**QUAD, method="signsgd", iters=20).to_dict()
    assert "measured mean" not in " ".join(str(c) for col in run_summary(sign).columns for c in col._cells)


# --- bad input -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "words"), [
    (["--budget-bits", "100", "--budget-mb", "1"], ["--budget-mb 1", "--budget-bits 100"]),
    (["--budget-bits", "159"], ["--budget-bits 159", "160"]),  # one round of signSGD is 160 bits
    (["--budget-mb", "0.00001"], ["--budget-mb 1e-05", "160"]),
    (["--budget-bits", "0"], ["--budget-bits 0"]),
    (["--budget-mb", "-1"], ["--budget-mb -1"]),
    (["--budget-bits", "nan"], ["--budget-bits nan"]),
])
def test_bad_budgets_exit_2_with_one_line(cli, args, words):
    r = cli("run", "--problem", "quadratic", "--dim", "10", "--method", "signsgd", "--iters", "20", *args)
    assert_one_line_error(r, *words)


def test_one_round_is_the_smallest_budget():
    r = signsim.run(**QUAD, method="signsgd", iters=20, budget_bits=ROUND["signsgd"])
    assert r.status == "budget" and r["final"]["iters_done"] == 1


def test_variable_messages_are_checked_against_the_smallest_round():
    # QSGD's smallest message is 33 bits (norm, flag, no level); the mean of floats goes down at 32 d bits
    least = M * 33 + M * 32 * D
    with pytest.raises(signsim.InputError, match=f"below one round's bits.*{least:,}"):
        signsim.run(**QUAD, method="sgd", compressor="qsgd:4", iters=20, budget_bits=least - 1)
    r = signsim.run(**QUAD, method="sgd", compressor="qsgd:4", lr=0.01, iters=20, budget_bits=least)
    assert r.status == "budget" and r["final"]["iters_done"] == 1


def test_budget_options_in_config_files_and_compare_variants(cli, tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('problem = "quadratic"\ndim = 10\nmethod = "signsgd"\nbudget-bits = 100\n')
    assert_one_line_error(cli("run", "--config", cfg), "--budget-bits 100", "160")
    cfg.write_text('problem = "quadratic"\ndim = 10\nbudget_mb = 1\n[[compare]]\nbudget_bits = 1000\n')
    assert_one_line_error(cli("run", "--config", cfg), "--budget-mb 1", "--budget-bits 1000")


def test_tracked_quantities_are_recorded_up_to_the_stop():
    r = signsim.run(**QUAD, method="signsgd", iters=100, track_spb=10, budget_bits=20 * ROUND["signsgd"])
    assert r.status == "budget" and r["final"]["iters_done"] == 20
    assert [t["iter"] for t in r["tracks"]["spb"]] == [0, 10, 20]


def test_qsgd_elias_measured_bits_match_the_replay():
    iters = 15
    engine, problem, model, params, settings, cfg = make_engine(
        problem="quadratic", dim=40, workers=3, noise="gaussian:1", method="sgd", compressor="qsgd:4:elias",
        lr=0.01, iters=iters, eval_every=1, seed=2)
    simulate(engine)
    ref = ReferenceRun(problem, model, params, settings, cfg.workers, cfg.seed)
    per_iter = []
    for _ in range(iters):
        before = ref.bits_up
        ref.step()
        per_iter.append(ref.bits_up - before)
    from signsim.accounting import bits_per_iteration
    from signsim.commands.run import measured_bits

    declared = bits_per_iteration(settings.compressor, settings.aggregate, 3, 40, settings.sign_zero, settings.tie)
    per = measured_bits(declared, engine.tally, iters)
    assert per["up_mean"] == sum(per_iter) / iters and per["up_worst"] == max(per_iter)
    assert per["up_worst"] < per["up"]


def test_the_smallest_elias_round_is_the_norm_alone():
    least = M * 32 + M * 32 * D  # an Elias-coded QSGD message without a non-zero level is its norm
    with pytest.raises(signsim.InputError, match=f"{least:,}"):
        signsim.run(**QUAD, method="sgd", compressor="qsgd:4:elias", iters=20, budget_bits=least - 1)
