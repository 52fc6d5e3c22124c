"""MARINA and PP-MARINA (docs/theory.md §8.10): the engine against Algorithm 1 of Gorbunov et al. (2021) written out
here line by line, against the NumPy replay (sampled clients, several compressors and problems), its bits and oracle
calls counted round by round, and its refused compositions."""

import numpy as np
import pytest

from signsim.engine import loop
from signsim.engine.driver import simulate
from signsim.engine.reference import ReferenceRun
from signsim.seeding import server_stream

from ..conftest import make_engine
from ..stages.test_ef21_family import top_k


def marina_written_out(grads, x0, gamma, p, K, k_top, seed, d):
    """Algorithm 1 of Gorbunov, Burlachenko, Li and Richtarik (2021): g^0 = grad f(x^0); each k: x^{k+1} = x^k -
    gamma g^k, c_k ~ Be(p); g_i^{k+1} = grad f_i(x^{k+1}) if c_k = 1, else g^k + Q(grad f_i(x^{k+1}) -
    grad f_i(x^k)); g^{k+1} = mean g_i^{k+1}. The coins come from the run's server stream, as signsim draws them
    (round 0 draws none). Returns x^K and the bits up and down: a full gradient is 32 d bits up and their mean 32 d
    down to each worker; a top-k message k (32 + index) bits up, and the mean of the messages goes down to every worker
    as its (index, float) pairs, 1 + min(32 d, nonzero (32 + index)) bits (docs/theory.md §7)."""
    M = len(grads)
    coins = server_stream(seed)
    x = x0.copy()
    g = np.mean([gi(x) for gi in grads], axis=0)
    up = down = M * 32 * d
    index = int(np.ceil(np.log2(d)))
    for _ in range(1, K):
        x_new = x - gamma * g
        if coins.random() < p:
            g = np.mean([gi(x_new) for gi in grads], axis=0)
            up += M * 32 * d
            down += M * 32 * d
        else:
            mean = np.mean([top_k(gi(x_new) - gi(x), k_top) for gi in grads], axis=0)
            g = g + mean
            up += M * k_top * (32 + index)
            down += M * (1 + min(32 * d, np.count_nonzero(mean) * (32 + index)))
        x = x_new
    return x - gamma * g, up, down


def test_marina_is_algorithm_1_written_out():
    K, d, M, p, gamma = 25, 8, 3, 0.3, 0.02
    engine, problem, *_ = make_engine(iters=K, eval_every=K, problem="quadratic", dim=d, workers=M, noise="none",
                                      method="marina", compressor="top-k:2", grad_estimator=f"marina:{p}",
                                      lr=gamma, seed=7)
    simulate(engine)
    L = problem.L
    grads = [lambda x: L * x] * M  # every worker's exact gradient of f = 1/2 sum L_i x_i^2
    x, up, down = marina_written_out(grads, problem.x0.astype(float), gamma, p, K, 2, 7, d)
    np.testing.assert_allclose(engine.x, x, rtol=1e-12, atol=1e-14)
    assert (engine.tally[loop.T_UP], engine.tally[loop.T_DOWN]) == (up, down)


@pytest.mark.parametrize("opts", [
    {"problem": "quadratic", "dim": 6, "workers": 4, "compressor": "rand-k:2", "grad_estimator": "marina:0.3"},
    # PP-MARINA: 3 of 5 clients in the compressed rounds, all 5 in the rounds of exact gradients
    {"problem": "quadratic", "dim": 6, "workers": 5, "clients_per_round": 3, "compressor": "natural",
     "grad_estimator": "marina:0.25"},
    {"problem": "rosenbrock", "dim": 5, "workers": 3, "oracle": "full", "compressor": "qsgd:2",
     "grad_estimator": "marina:0.5", "lr": 1e-4},
    {"problem": "vote-trap", "workers": 3, "compressor": "sto-sign", "grad_estimator": "marina:0.2", "lr": 0.01},
    # a sign-sum broadcast in the compressed rounds, floats in the others, every worker receiving each
    {"problem": "vote-trap", "workers": 6, "clients_per_round": 2, "compressor": "sto-sign",
     "grad_estimator": "marina:0.3", "lr": 0.01},
])
def test_marina_matches_the_numpy_replay(opts):
    iters = 12
    opts = {"lr": 0.01, **opts}
    engine, problem, model, params, settings, cfg = make_engine(iters=iters, eval_every=1, noise="none",
                                                                method="marina", **opts)
    out = simulate(engine)
    ref = ReferenceRun(problem, model, params, settings, cfg.workers, cfg.seed)
    for _ in range(iters):
        x = ref.step()
    np.testing.assert_allclose(engine.x, x, rtol=1e-12, atol=1e-14)
    assert (engine.tally[loop.T_UP], engine.tally[loop.T_DOWN]) == (ref.bits_up, ref.bits_down)
    # oracle calls: M in a round of exact gradients (round 0 is one), 2 S in another
    calls = out.history[:, loop.H_GRAD_CALLS]
    steps = np.diff(calls)
    S, M = settings.participants(cfg.workers), cfg.workers
    assert steps[0] == M and set(steps) <= {M, 2 * S} and calls[-1] == engine.tally[loop.T_CALLS]


def test_marina_with_the_identity_compressor_is_gradient_descent():
    xs = []
    for est in ("none", "marina:0.3"):
        engine, *_ = make_engine(iters=20, problem="quadratic", dim=5, workers=4, method="sgd", compressor="identity",
                                 aggregate="mean", grad_estimator=est, noise="none", lr=0.01)
        simulate(engine)
        xs.append(engine.x.copy())
    np.testing.assert_allclose(xs[1], xs[0], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(("args", "says"), [
    (("--noise", "gaussian:1"), "with --noise gaussian:1"),
    (("--problem", "rosenbrock", "--oracle", "term"), "rosenbrock's sampled oracle"),
    (("--local-steps", "2"), "--local-steps 2"),
    (("--byzantine", "1"), "--byzantine 1"),
    (("--server-opt", "fedadam"), "--server-opt fedadam"),
    (("--aggregate", "median"), "--aggregate median"),
    (("--method", "signum", "--aggregate", "mean", "--grad-estimator", "marina", "--noise", "none"),
     "--method signum (its momentum"),
    (("--down-compressor", "top-k:2"), "--down-compressor top-k:2"),
    (("--grad-estimator", "marina:0"), "marina:0"),
])
def test_a_refused_marina_is_one_line(args, says, cli):
    problem = () if "--problem" in args else ("--problem", "quadratic")
    r = cli("run", "--method", "marina", "--iters", "2", *problem, *args)
    assert r.code == 2 and says in r.err and len(r.err.strip().splitlines()) == 1, r.err
