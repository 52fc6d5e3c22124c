"""The searching attacks alie-opt and ipm-opt (docs/theory.md §8.5): runs against the NumPy replay (whose search is
ByzFL's written out again), and the search against its closed form where the distance grows with the factor (the
mean: every expansion step succeeds, so the factor is START + DELTA (2^(EVALS-1) - 1))."""

from __future__ import annotations

import numpy as np
import pytest

import signsim
from signsim.engine.driver import simulate
from signsim.engine.reference import ReferenceRun

from ..conftest import make_engine


@pytest.mark.parametrize(("attack", "aggregate", "chain"), [
    ("alie-opt", "trimmed:0.25", "none"),
    ("ipm-opt:8:0:2:0.7", "median", "bucketing:2"),
    ("alie-opt:6", "cclip:1", "clip:3"),
])
def test_a_searching_attack_matches_the_numpy_replay(attack, aggregate, chain):
    iters = 5
    engine, problem, model, params, settings, cfg = make_engine(
        iters=iters, eval_every=1, problem="quadratic", dim=6, workers=9, noise="gaussian:1", method="sgd",
        aggregate=aggregate, byzantine=2, attack=attack, pre_aggregate=chain, clients_per_round=8)
    simulate(engine)
    ref = ReferenceRun(problem, model, params, settings, cfg.workers, cfg.seed)
    for _ in range(iters):
        x = ref.step()
    np.testing.assert_allclose(engine.x, x, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(("opt", "plain", "evals", "start", "delta"), [
    ("alie-opt", "alie", 20, 0.0, 10.0), ("ipm-opt:5:1:0.5:0.8", "ipm", 5, 1.0, 0.5)])
def test_against_the_mean_every_expansion_succeeds(opt, plain, evals, start, delta):
    # the mean moves by B/S times the Byzantine rows' offset, which grows with the factor: expansion never fails
    factor = start + delta * (2 ** (evals - 1) - 1)
    common = dict(problem="quadratic", dim=5, noise="gaussian:1", workers=7, byzantine=2, method="sgd",
                  aggregate="mean", iters=6)
    a = signsim.run(**common, attack=opt).to_dict()
    b = signsim.run(**common, attack=f"{plain}:{factor:.17g}").to_dict()
    assert a["x_final"] == b["x_final"]
