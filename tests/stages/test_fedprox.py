"""FedProx (docs/theory.md §12.5): the local steps with the proximal term against the algorithm written out here
(Li et al. 2020, Algorithm 2, with plain GD as the local solver) and against the NumPy replay (sampled clients,
noise, a compressor), mu = 0 against FedAvg bit for bit, the alias against its composition, and refusals."""

from __future__ import annotations

import numpy as np
import pytest

import signsim
from signsim.engine.driver import simulate
from signsim.engine.reference import ReferenceRun

from ..conftest import make_engine


def test_fedprox_follows_the_algorithm_written_out():
    # every worker's f_m(y) = y^T A y / 2 (no noise): each takes H GD steps on f_m(y) + mu/2 ||y - x||^2 from the
    # server's x, and the server averages the local models (identity messages, the mean, server lr 1)
    d, H, lr, mu, iters = 5, 4, 0.05, 0.7, 25
    r = signsim.run(problem="quadratic", dim=d, kappa=10, noise="none", x0=1.0, method="fedprox", workers=3,
                    local_steps=H, lr=lr, prox_mu=mu, iters=iters)
    A = np.diag(np.logspace(0.0, 1.0, d))  # the quadratic's L_i, log-spaced in [1, kappa] (docs/theory.md §5)
    x = np.ones(d)
    for _ in range(iters):
        y = x.copy()
        for _ in range(H):
            y = y - lr * (A @ y + mu * (y - x))
        x = y
    np.testing.assert_allclose(np.asarray(r.to_dict()["x_final"]), x, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("extra", [{}, {"compressor": "top-k:2", "error_feedback": "ef"}])
def test_fedprox_matches_the_numpy_replay(extra):
    iters = 6
    engine, problem, model, params, settings, cfg = make_engine(
        iters=iters, eval_every=1, problem="quadratic", dim=6, workers=5, noise="gaussian:1", method="fedprox",
        clients_per_round=3, local_steps=3, prox_mu=0.5, **extra)
    simulate(engine)
    ref = ReferenceRun(problem, model, params, settings, cfg.workers, cfg.seed)
    for _ in range(iters):
        x = ref.step()
    np.testing.assert_allclose(engine.x, x, rtol=1e-12, atol=1e-14)


def test_mu_zero_is_fedavg_and_the_alias_is_its_composition():
    common = dict(problem="quadratic", dim=6, noise="gaussian:1", workers=5, clients_per_round=3, iters=20)
    fedavg = signsim.run(**common, method="sgd", local_steps=5).to_dict()
    zero = signsim.run(**common, method="fedprox", prox_mu=0).to_dict()
    assert zero["x_final"] == fedavg["x_final"]
    alias = signsim.run(**common, method="fedprox").to_dict()
    spelled = signsim.run(**common, method="sgd", compressor="identity", local_steps=5, prox_mu=0.01).to_dict()
    assert alias["x_final"] == spelled["x_final"] and alias["x_final"] != fedavg["x_final"]


@pytest.mark.parametrize(("args", "says"), [
    (("run", "--prox-mu", "-1"), "--prox-mu -1"),
    (("run", "--prox-mu", "0.1"), "--local-steps 1"),
    (("check-spb", "--method", "fedprox"), "proximal"),
])
def test_a_refused_proximal_term_is_one_line(args, says, cli):
    r = cli(*args, "--problem", "quadratic", "--iters", "2") if args[0] == "run" else cli(*args, "--problem",
                                                                                        "quadratic")
    assert r.code == 2 and says in r.err and len(r.err.strip().splitlines()) == 1, r.err
