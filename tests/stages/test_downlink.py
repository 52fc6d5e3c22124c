"""The compressed downlink (docs/theory.md §8.8): the server broadcasts C(u) of its update u, with its own error
feedback. Checked against the NumPy replay (stochastic and sparse compressors, every error feedback, sampled
clients, local steps, a server optimizer), against an oracle of the whole run written out here for full-gradient
SGD on a quadratic (no streams at all: the compressor deterministic), the identity downlink against the
uncompressed run bit for bit, the bits counted down against the compressor's message sizes, and bad options."""

from __future__ import annotations

import numpy as np
import pytest

import signsim
from signsim.engine.driver import simulate
from signsim.engine.reference import ReferenceRun

from ..conftest import make_engine

# the fast suite keeps two cases (each a loop of its own to compile); the slow step (.ci/run) runs the rest
SLOW = pytest.mark.slow


@pytest.mark.parametrize(("down", "ef", "extra"), [
    ("top-k:2", "ef", {}),
    ("top-k:2", "ef21", {"clients_per_round": 3}),
    pytest.param("sign", "none", {"local_steps": 2}, marks=SLOW),
    pytest.param("sto-sign", "none", {}, marks=SLOW),  # draws from the server's stream
    pytest.param("qsgd:2", "none", {"server_opt": "fedavgm:0.5"}, marks=SLOW),  # its size varies: bits as sent
    pytest.param("scaled-sign", "ef", {"weight_decay": 0.01}, marks=SLOW),
])
def test_a_run_with_a_compressed_downlink_matches_the_numpy_replay(down, ef, extra):
    iters = 8
    engine, problem, model, params, settings, cfg = make_engine(
        iters=iters, eval_every=1, problem="quadratic", dim=6, workers=4, noise="gaussian:1", method="signum",
        down_compressor=down, down_feedback=ef, **extra)
    simulate(engine)
    ref = ReferenceRun(problem, model, params, settings, cfg.workers, cfg.seed)
    for _ in range(iters):
        x = ref.step()
    np.testing.assert_allclose(engine.x, x, rtol=1e-12, atol=1e-14)
    assert engine.tally[1] == ref.bits_down and engine.tally[0] == ref.bits_up


def _oracle(down: str, ef: str, A: np.ndarray, x0: np.ndarray, lr: float, iters: int, k: int):
    """Full-gradient GD on f(x) = x^T A x / 2 whose update u = lr A x reaches the workers as top-k (k largest |.|,
    ties to the lower index) or sign of: u (none), u + e with e <- u + e - c (EF, Seide et al. 2014; DoubleSqueeze's
    server side), or u - w with w <- w + c and x moving by w (EF21's, Richtarik et al. 2021, on the downlink)."""
    def C(v):
        if down == "sign":
            return np.where(v >= 0, 1.0, -1.0)  # --sign-zero plus
        out = np.zeros_like(v)
        keep = sorted(range(v.size), key=lambda i: (-abs(v[i]), i))[:k]
        out[keep] = v[keep]
        return out

    x, e, w = x0.copy(), np.zeros_like(x0), np.zeros_like(x0)
    for _ in range(iters):
        u = lr * (A @ x)
        if ef == "none":
            x = x - C(u)
        elif ef == "ef":
            c = C(u + e)
            e = u + e - c
            x = x - c
        else:
            c = C(u - w)
            w = w + c
            x = x - w
    return x


@pytest.mark.parametrize(("down", "ef"), [("top-k:2", "none"), ("top-k:2", "ef"), ("top-k:2", "ef21"),
                                           ("sign", "none")])
def test_the_downlink_follows_its_update_written_out(down, ef):
    r = signsim.run(problem="quadratic", dim=5, kappa=10, method="sgd", noise="none", workers=3, iters=40, lr=0.05,
                    x0=1.0, sign_zero="plus", down_compressor=down, down_feedback=ef)
    A = np.diag(np.logspace(0.0, 1.0, 5))  # the quadratic's L_i, log-spaced in [1, kappa] (docs/theory.md §5)
    want = _oracle(down.split(":")[0], ef, A, np.ones(5), 0.05, 40, 2)
    np.testing.assert_allclose(np.asarray(r.to_dict()["x_final"]), want, rtol=1e-12, atol=1e-15)


@pytest.mark.slow
def test_the_identity_downlink_is_the_uncompressed_run_bit_for_bit_and_counts_32_bits_a_coordinate():
    base = dict(problem="logistic", method="signum", workers=6, iters=60, weight_decay=0.001, clients_per_round=4,
                local_steps=2, catch_up="none")  # (the broadcast's bits alone: no catch-up downloads, §12)
    a = signsim.run(**base).to_dict()
    b = signsim.run(**base, down_compressor="identity").to_dict()
    assert a["x_final"] == b["x_final"] and a["final"]["loss"] == b["final"]["loss"]
    d = len(a["x_final"])
    assert b["final"]["bits_down"] == 60 * 4 * 32 * d  # S participants receive 32 d bits each round
    assert b["bits_per_iter"]["down"] == 4 * 32 * d and b["stages"]["downlink"]["compressor"]["spec"] == "identity"
    assert a["stages"]["downlink"] is None


def test_a_sign_downlink_sends_one_bit_a_coordinate_and_changes_the_run():
    base = dict(problem="quadratic", dim=10, method="sgd", workers=4, iters=50)
    a = signsim.run(**base).to_dict()
    b = signsim.run(**base, down_compressor="sign").to_dict()
    assert b["final"]["bits_down"] == 50 * 4 * 10 and a["final"]["bits_down"] == 50 * 4 * 32 * 10
    assert a["x_final"] != b["x_final"]


def test_a_budget_counts_the_compressed_broadcast():
    r = signsim.run(problem="quadratic", dim=10, method="signsgd", workers=4, iters=10_000, budget_bits=4000,
                    down_compressor="sign").to_dict()
    # 4 workers x 10 bits up and 4 x 10 bits down per iteration: the budget is reached after 50 iterations
    assert r["status"] == "budget" and r["final"]["iters_done"] == 50


@pytest.mark.parametrize(("args", "says"), [
    (["--down-feedback", "ef"], "--down-feedback ef needs a --down-compressor"),
    (["--down-compressor", "qsgd:4", "--down-feedback", "ef"], "error feedback needs a contractive"),
    (["--down-compressor", "topk:2"], "did you mean"),
    (["--down-compressor", "top-k:99"], "--down-compressor top-k:99: k exceeds the dimension"),
    (["--down-feedback", "ef22", "--down-compressor", "sign"], "--down-feedback ef22"),
    (["--down-compressor", "sign", "--method", "signsgd", "--votes", "binomial"], "--down-compressor sign does not"),
])
def test_bad_downlink_options_are_one_line(cli, args, says):
    r = cli("run", "--problem", "quadratic", "--dim", "10", "--iters", "2", *args)
    assert r.code == 2, r.err
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], r.err
