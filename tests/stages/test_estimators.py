"""The gradient estimators (docs/theory.md §8.7): DIANA against the NumPy replay (with sampled clients), with the
identity compressor against plain SGD, its shifts' mean kept exactly, and its refused compositions."""

import numpy as np
import pytest

from signsim.engine.driver import simulate
from signsim.engine.reference import ReferenceRun

from ..conftest import make_engine


@pytest.mark.parametrize("opts", [
    {"compressor": "rand-k:2", "grad_estimator": "diana:0.25"},
    {"compressor": "qsgd:2", "grad_estimator": "diana:0.5", "clients_per_round": 3},
    {"compressor": "natural", "grad_estimator": "diana:1", "local_steps": 2, "server_opt": "fedavgm:0.5"},
])
def test_diana_matches_the_numpy_replay(opts):
    iters = 6
    engine, problem, model, params, settings, cfg = make_engine(
        iters=iters, eval_every=1, problem="quadratic", dim=6, workers=4, noise="gaussian:1", method="sgd",
        aggregate="mean", **opts)
    simulate(engine)
    ref = ReferenceRun(problem, model, params, settings, cfg.workers, cfg.seed)
    for _ in range(iters):
        x = ref.step()
    np.testing.assert_allclose(engine.x, x, rtol=1e-12, atol=1e-14)
    # the server's hbar is the mean of every worker's shift, partial participation included
    np.testing.assert_allclose(engine.hbar[0], engine.shift.mean(axis=0), rtol=1e-12, atol=1e-14)
    assert np.abs(engine.shift).max() > 0


@pytest.mark.parametrize("alpha", ["0.1", "1"])
def test_diana_with_the_identity_compressor_is_sgd(alpha):
    xs = []
    for est in ("none", f"diana:{alpha}"):
        engine, *_ = make_engine(iters=15, problem="quadratic", dim=5, workers=4, method="sgd", compressor="identity",
                                 aggregate="mean", grad_estimator=est, noise="gaussian:1")
        simulate(engine)
        xs.append(engine.x.copy())
    np.testing.assert_allclose(xs[1], xs[0], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(("args", "says"), [
    (("--grad-estimator", "diana"), "needs its parameter alpha"),
    (("--grad-estimator", "diana:0"), "alpha"),
    (("--grad-estimator", "diana:0.5", "--method", "signsgd"), "--aggregate majority"),
    (("--grad-estimator", "diana:0.5", "--method", "topk-ef"), "--error-feedback ef"),
    (("--grad-estimator", "dyana:0.5"), "did you mean 'diana'"),
])
def test_a_refused_estimator_is_one_line(args, says, cli):
    r = cli("run", "--problem", "quadratic", "--iters", "2", *args)
    assert r.code == 2 and says in r.err and len(r.err.strip().splitlines()) == 1, r.err
