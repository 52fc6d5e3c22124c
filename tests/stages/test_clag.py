"""CLAG and LAG (docs/theory.md §8.2; Richtárik et al. 2022, the 3PC paper): the engine against the lazy rule written
out here, against the NumPy replay (stochastic oracles, an attack), zeta = 0 against EF21, and its refusals."""

import numpy as np
import pytest

from signsim.engine import loop
from signsim.engine.driver import simulate
from signsim.engine.reference import ReferenceRun

from ..conftest import make_engine
from ..stages.test_ef21_family import top_k


def clag_written_out(grad, x0, gamma, zeta, K, M, k_top, d):
    """CLAG on M workers with the same exact gradient: g_m = y_m = 0; each round worker m computes v = grad(x); it
    sends c = C(v - g_m) (and g_m += c) if it is its first round or ||v - g_m||^2 > zeta ||v - y_m||^2, else
    nothing; y_m = v; the server's g += mean of what was sent; x -= gamma g. Returns x, the uplink bits (top-k:
    k (32 + index) bits a message) and how many messages were sent."""
    x = x0.copy()
    g_m = np.zeros((M, d))
    y_m = np.zeros((M, d))
    g = np.zeros(d)
    bits = sent = 0
    index = int(np.ceil(np.log2(d)))
    for k in range(K):
        total = np.zeros(d)
        for m in range(M):
            v = grad(x)
            if k == 0 or np.sum((v - g_m[m]) ** 2) > zeta * np.sum((v - y_m[m]) ** 2):
                c = top_k(v - g_m[m], k_top)
                g_m[m] += c
                total += c
                bits += k_top * (32 + index)
                sent += 1
            y_m[m] = v
        g += total / M
        x = x - gamma * g
    return x, bits, sent


def test_clag_is_the_lazy_rule_written_out():
    K, d, M, zeta, gamma = 40, 8, 3, 2.0, 0.02
    engine, problem, *_ = make_engine(iters=K, eval_every=K, problem="quadratic", dim=d, workers=M, noise="none",
                                      method="clag", compressor="top-k:2", error_feedback=f"clag:{zeta}", lr=gamma)
    simulate(engine)
    L = problem.L
    x, bits, sent = clag_written_out(lambda x: L * x, problem.x0.astype(float), gamma, zeta, K, M, 2, d)
    np.testing.assert_allclose(engine.x, x, rtol=1e-12, atol=1e-14)
    assert engine.tally[loop.T_UP] == bits
    assert M < sent < M * K  # the trigger both fired and held back


def test_lag_charges_no_broadcast_in_a_round_where_nobody_sent():
    """LAG (identity compressor): each round that some worker sent, the server broadcasts d floats to each of the M
    workers; a round that nobody sent, nothing (each worker steps with the g it holds; docs/theory.md §8.2)."""
    K, d, M, zeta, gamma = 30, 5, 3, 4.0, 0.05
    engine, problem, *_ = make_engine(iters=K, eval_every=K, problem="quadratic", dim=d, workers=M, noise="none",
                                      method="clag", compressor="identity", error_feedback=f"clag:{zeta}", lr=gamma)
    simulate(engine)
    L = problem.L
    x, g_m, y_m, g = problem.x0.astype(float), np.zeros((M, d)), np.zeros((M, d)), np.zeros(d)
    up = down = rounds_sent = 0
    for k in range(K):
        total, sent = np.zeros(d), 0
        for m in range(M):
            v = L * x
            if k == 0 or np.sum((v - g_m[m]) ** 2) > zeta * np.sum((v - y_m[m]) ** 2):
                total += v - g_m[m]
                g_m[m] = v.copy()
                up += 32 * d
                sent += 1
            y_m[m] = v
        down += M * 32 * d if sent else 0
        rounds_sent += sent > 0
        g += total / M
        x = x - gamma * g
    np.testing.assert_allclose(engine.x, x, rtol=1e-12, atol=1e-14)
    assert 1 < rounds_sent < K  # some rounds silent, some not: the test can fail either way
    assert (engine.tally[loop.T_UP], engine.tally[loop.T_DOWN]) == (up, down)


@pytest.mark.parametrize("opts", [
    {"problem": "rosenbrock", "dim": 5, "oracle": "term", "noise": "gaussian:1", "compressor": "top-k:2",
     "error_feedback": "clag:0.5"},
    {"problem": "quadratic", "dim": 6, "noise": "gaussian:0.1", "compressor": "scaled-sign", "error_feedback": "clag:3",
     "byzantine": 1, "attack": "invert"},
    {"problem": "quadratic", "dim": 6, "noise": "none", "compressor": "identity", "error_feedback": "clag:1"},  # LAG
])
def test_clag_matches_the_numpy_replay(opts):
    iters = 15
    engine, problem, model, params, settings, cfg = make_engine(iters=iters, eval_every=1, workers=4, method="clag",
                                                                lr=0.01, **opts)
    simulate(engine)
    ref = ReferenceRun(problem, model, params, settings, cfg.workers, cfg.seed)
    for _ in range(iters):
        x = ref.step()
    np.testing.assert_allclose(engine.x, x, rtol=1e-12, atol=1e-14)
    assert (engine.tally[loop.T_UP], engine.tally[loop.T_DOWN]) == (ref.bits_up, ref.bits_down)
    assert engine.err.shape == (4, 2 * problem.dim)  # g_m and y_m per worker


def test_clag_with_zeta_zero_moves_as_ef21():
    xs = []
    for ef in ("ef21", "clag:0"):
        engine, *_ = make_engine(iters=20, problem="quadratic", dim=5, workers=4, method="ef21", compressor="top-k:2",
                                 error_feedback=ef, noise="gaussian:1", lr=0.01)
        simulate(engine)
        xs.append(engine.x.copy())
    np.testing.assert_array_equal(xs[1], xs[0])


@pytest.mark.parametrize(("args", "says"), [
    (("--clients-per-round", "4"), "--clients-per-round 4 (4 of 8 workers"),
    (("--participation", "0.5"), "--participation 0.5 (4 of 8 workers"),
    (("--aggregate", "median"), "--aggregate median"),
    (("--error-feedback", "clag:-1"), "clag:-1"),
    (("--down-compressor", "top-k:2", "--down-feedback", "clag"), "--down-feedback clag"),
])
def test_a_refused_clag_is_one_line(args, says, cli):
    r = cli("run", "--method", "clag", "--iters", "2", "--problem", "quadratic", *args)
    assert r.code == 2 and says in r.err and len(r.err.strip().splitlines()) == 1, r.err
