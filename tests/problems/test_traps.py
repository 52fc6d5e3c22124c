"""The counterexamples of docs/theory.md §4 and Byzantine robustness, run through the engine."""

import numpy as np
import pytest

from ..conftest import run_engine


@pytest.mark.parametrize("lr", [1e-3, 0.01, 0.1, 0.5, 1.0])
@pytest.mark.parametrize("schedule", ["constant", "sqrt"])
def test_signsgd_stays_on_the_sign_trap_line(lr, schedule):
    """sign_zero = tie = zero: where <a_i, x> = 0 exactly (reachable with lr = 0.1 from (1, 1)) the oracle is the zero
    vector, and a random or +1 sign(0) (or a random tie-break of the zero vote) would step off the line."""
    out = run_engine(problem="sign-trap", method="signsgd", workers=1, lr=lr, lr_schedule=schedule, iters=2000,
                     sign_zero="zero", tie="zero")
    assert out.x.sum() == pytest.approx(2.0, abs=1e-9)
    assert np.linalg.norm(out.x) >= np.sqrt(2) - 1e-9  # the closest point of the line to x* = 0
    assert out.history[-1, 1] > 0.5  # f >= 1/2 <a, (1,1)>^2 ... far from f* = 0


def test_error_feedback_escapes_the_sign_trap():
    out = run_engine(problem="sign-trap", method="ef-signsgd", workers=1, lr=0.05, iters=3000)
    assert np.linalg.norm(out.x) < 0.05
    assert out.history[-1, 1] < 1e-3


def test_majority_vote_falls_into_the_vote_trap_and_sgd_does_not():
    mv = run_engine(problem="vote-trap", method="signsgd", iters=5000)
    assert abs(mv.x[0] - 1.0) < 0.1  # settles near 1, where f'(1) = 2 lambda / 3 = 4
    sgd = run_engine(problem="vote-trap", method="sgd", iters=5000)
    assert abs(sgd.x[0] - (-0.5)) < 1e-3


def test_majority_vote_survives_three_of_31_inverting_workers():
    common = dict(problem="quadratic", dim=20, kappa=10.0, noise="gaussian:1", method="signsgd", workers=31,
                  lr=1e-3, lr_schedule="constant", iters=3000)
    attacked = run_engine(**common, byzantine=3, attack="invert")
    start, end = attacked.history[0, 1], attacked.history[-1, 1]
    assert end < 0.01 * start
    # half of the workers inverting cancels the signal: no progress
    broken = run_engine(**{**common, "workers": 30}, byzantine=15, attack="invert")
    assert broken.history[-1, 1] > 0.5 * broken.history[0, 1]


def test_divergence_is_detected_and_history_kept():
    out = run_engine(problem="quadratic", dim=5, kappa=100.0, method="sgd", lr=0.5, iters=5000, eval_every=10)
    assert out.status == "diverged"
    assert out.iters_done < 5000
    assert len(out.history) >= 2 and np.isfinite(out.history[0, 1])
    assert not np.isfinite(out.history[-1, 1])
