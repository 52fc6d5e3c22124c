"""Every method, server rule, sign policy and attack against the plain NumPy replay (engine/reference.py)."""

import itertools

import numpy as np
import pytest

from signsim import methods, stages
from signsim.codes import SignZero
from signsim.engine import stage_kernels
from signsim.engine.driver import simulate
from signsim.engine.reference import ReferenceRun

from ..conftest import make_engine

METHODS = list(methods.registry())


def exact_only(method):
    """A method that runs on exact local gradients only (MARINA, theory.md §8.10: it presets --noise none and is
    refused on sampled oracles, with noise or Byzantine workers: tests/stages/test_marina.py)."""
    return dict(methods.get(method).presets).get("noise") == "none"


def replay(iters, **options):
    engine, problem, model, params, settings, cfg = make_engine(iters=iters, eval_every=1, **options)
    simulate(engine)
    ref = ReferenceRun(problem, model, params, settings, cfg.workers, cfg.seed)
    xs = [ref.x.copy()] + [ref.step().copy() for _ in range(iters)]
    return engine, xs


@pytest.mark.parametrize("method", METHODS)
def test_one_step_matches_reference(method):
    engine, xs = replay(1, method=method, problem="quadratic", dim=5, workers=4,
                        noise="none" if exact_only(method) else "gaussian:1")
    np.testing.assert_allclose(engine.x, xs[1], rtol=1e-13, atol=1e-15)
    assert not np.allclose(xs[0], xs[1])  # it moved


CASES = [
    # problem options, method options
    ({"problem": "rosenbrock", "dim": 5, "oracle": "term", "noise": "student-t:3:1", "batch_size": 3}, {}),
    ({"problem": "quadratic", "dim": 6, "noise": "bimodal:2"}, {"byzantine": 2, "attack": "invert"}),
    ({"problem": "quadratic", "dim": 6, "noise": "skewed:1"}, {"byzantine": 1, "attack": "random"}),
    ({"problem": "sign-trap"}, {"lr_schedule": "sqrt"}),
    ({"problem": "vote-trap", "workers": 6}, {}),
]


def whole_runs():
    """Every method on every case; with an attack (a composition of stages of its own, a loop compiled for it alone)
    the fast suite runs each case with one method of each aggregation, the rest are ``slow`` (.ci/run runs them)."""
    shown = set()
    for method in METHODS:
        for i, (problem_opts, method_opts) in enumerate(CASES):
            if exact_only(method) and (problem_opts.get("noise") or method_opts or problem_opts["problem"] not in
                                       ("quadratic", "vote-trap")):
                continue  # (its refusals: tests/stages/test_marina.py)
            feature = (i, methods.get(method).default_aggregate)
            fast = "attack" not in method_opts or feature not in shown
            shown.add(feature)
            yield pytest.param(method, problem_opts, method_opts, id=f"{method}-problem_opts{i}-method_opts{i}",
                               marks=() if fast else pytest.mark.slow)


@pytest.mark.parametrize(("method", "problem_opts", "method_opts"), list(whole_runs()))
def test_whole_run_matches_reference(method, problem_opts, method_opts):
    options = {"workers": 5, **problem_opts, **method_opts}
    engine, xs = replay(6, method=method, **options)
    np.testing.assert_allclose(engine.x, xs[-1], rtol=1e-12, atol=1e-14)
    # the recorded losses are those of the reference iterates
    losses = engine.history()[:, 1]
    np.testing.assert_allclose(losses, [engine.problem.loss_ref(x) for x in xs], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(("sign_zero", "tie"), list(itertools.product(["random", "plus", "zero"],
                                                                      ["random", "zero"])))
@pytest.mark.parametrize("workers", [2, 3, 4])
def test_sign_and_tie_policies_match_reference(sign_zero, tie, workers):
    """A noiseless quadratic started at x* = 0 has g = 0: every message is sign(0) on the first step, and
    every vote may tie; later steps leave x* and mix zero and non-zero coordinates."""
    for method in ("signsgd", "signum", "ef-signsgd"):
        engine, xs = replay(4, method=method, problem="quadratic", dim=8, x0=0.0, noise="none",
                            workers=workers, sign_zero=sign_zero, tie=tie,
                            aggregate="mean" if method == "ef-signsgd" else "majority")
        np.testing.assert_allclose(engine.x, xs[-1], rtol=1e-13, atol=1e-15)


def test_sign_zero_policies_on_a_zero_coordinate():
    gen = np.random.default_rng(0)
    v = np.array([2.0, 0.0, -3.0])
    sign = stages.parse_compressor("sign")
    assert stage_kernels.compress_once(sign, v, SignZero.PLUS, gen)[0].tolist() == [1, 1, -1]
    assert stage_kernels.compress_once(sign, v, SignZero.ZERO, gen)[0].tolist() == [1, 0, -1]
    seen = set()
    for _ in range(50):
        seen.add(stage_kernels.compress_once(sign, v, SignZero.RANDOM, gen)[0][1])
    assert seen == {-1.0, 1.0}


def test_stochastic_sign_is_unbiased_after_scaling():
    """||v||_2 E[sign~(v)] = v (docs/theory.md §2): mean of S compressions within 5 standard errors."""
    v = np.array([0.3, -1.2, 0.0, 2.0])
    gen = np.random.default_rng(4)
    S = 40000
    sto = stages.parse_compressor("sto-sign")
    draws = np.array([sto.module.reference(v, sto.params, SignZero.RANDOM, gen) for _ in range(S)])
    est = np.linalg.norm(v) * draws.mean(axis=0)
    se = np.linalg.norm(v) * draws.std(axis=0) / np.sqrt(S)
    assert np.all(np.abs(est - v) <= 5 * se)


def test_error_feedback_compressor_is_scaled_sign():
    """Delta = (||p||_1 / d) sign(p); the error e = p - Delta is what is kept."""
    p = np.array([1.0, -3.0, 0.5, 0.5])
    out, _ = stage_kernels.compress_once(stages.parse_compressor("scaled-sign"), p, SignZero.RANDOM,
                                         np.random.default_rng(0))
    np.testing.assert_allclose(out, 1.25 * np.sign(p))


@pytest.mark.parametrize(("method", "lr"), [("signsgd", 0.05), ("sgd", 0.001), ("ssdm", 0.05)])
def test_monotone_variant_matches_reference_and_never_increases_f(method, lr):
    engine, xs = replay(40, method=method, problem="rosenbrock", dim=4, workers=3, noise="gaussian:20",
                        lr=lr, monotone=True)
    np.testing.assert_allclose(engine.x, xs[-1], rtol=1e-12, atol=1e-14)
    losses = engine.history()[:, 1]
    assert np.all(np.diff(losses) <= 1e-12)
    plain, _ = replay(40, method=method, problem="rosenbrock", dim=4, workers=3, noise="gaussian:20", lr=lr)
    assert np.any(np.diff(plain.history()[:, 1]) > 0)  # without it, this noisy run does go up
