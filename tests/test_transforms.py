"""Diversity of transformed per-sample gradients: closed forms against sampling the transformation itself."""

import math

import numpy as np
import pytest

from signsim.diagnostics import transforms as tr
from signsim.errors import InputError

SPECS = ["dropout:0.3", "langevin:0.5", "sign", "sto-sign", "qsgd:2", "qsgd:7", "natural"]


def gradients(seed=0, n=12, d=6):
    """Per-sample gradients with the awkward cases: a zero row, exact zeros, ties in |g|, powers of two."""
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((n, d)) * rng.choice([0.1, 1.0, 10.0], size=(n, 1)) + 0.3
    G[0] = 0.0
    G[1, :3] = 0.0
    G[2] = [1.0, -1.0, 1.0, -1.0, 2.0, 0.5]
    return G


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("sign_zero", ["random", "plus", "zero"])
def test_per_row_moments_match_sampling(spec, sign_zero):
    """E||T(g)||^2 and E T(g) in closed form against 20,000 draws, within 5 standard errors per entry."""
    t = tr.parse(spec, sign_zero)
    G = gradients()
    sq, mean = tr.moments(t, G)
    rng = np.random.default_rng(1)
    R = 20000
    draws = np.stack([tr.sample(t, G, rng) for _ in range(R)])  # R x n x d
    emp_sq = np.einsum("rij,rij->ri", draws, draws)
    se_sq = emp_sq.std(axis=0) / math.sqrt(R)
    assert np.all(np.abs(emp_sq.mean(axis=0) - sq) <= 5 * se_sq + 1e-9)
    se_mean = draws.std(axis=0) / math.sqrt(R)
    assert np.all(np.abs(draws.mean(axis=0) - mean) <= 5 * se_mean + 1e-9)


@pytest.mark.parametrize("spec", SPECS)
def test_diversity_closed_form_within_monte_carlo_interval(spec):
    t = tr.parse(spec)
    G = gradients(2)
    exact = tr.closed_form(t, G)
    mc = tr.monte_carlo(t, G, draws=4000, seed=3, z=5.0)
    lo, hi = mc.interval
    assert lo <= exact.B_S <= hi
    assert exact.n == mc.n == len(G)


def test_unbiased_transforms_leave_the_mean_and_add_variance():
    G = gradients(4)
    raw_A = float(np.sum(G * G))
    raw_C = float(np.sum(G.sum(axis=0) ** 2))
    n, d = G.shape
    t = tr.closed_form(tr.parse("langevin:2"), G)
    assert t.A == pytest.approx(raw_A + n * d * 4.0)
    assert t.C == pytest.approx(raw_C + n * d * 4.0)
    drop = tr.closed_form(tr.parse("dropout:0.5"), G)
    assert drop.A == pytest.approx(2 * raw_A)
    assert drop.C == pytest.approx(raw_C + raw_A)
    assert drop.mean_sq == pytest.approx(raw_C)
    # B_simple of SGD on the transformed gradients: n A_T / ||sum g||^2 - 1
    assert drop.B_simple == pytest.approx(n * 2 * raw_A / raw_C - 1)


def test_no_transformation_noise_reduces_to_raw_diversity():
    G = gradients(5)
    n = len(G)
    raw_B_S = n * float(np.sum(G * G)) / float(np.sum(G.sum(axis=0) ** 2))
    for spec in ("dropout:0", "langevin:0"):
        t = tr.closed_form(tr.parse(spec), G)
        assert t.B_S == pytest.approx(raw_B_S)
        assert t.B_simple == pytest.approx(raw_B_S - 1)


def test_blocks_equal_whole_array():
    G = gradients(6, n=30)
    for spec in SPECS:
        t = tr.parse(spec)
        whole = tr.closed_form(t, G)
        parts = tr.closed_form(t, iter([G[:7], G[7:8], G[8:]]))
        assert parts.A == pytest.approx(whole.A) and parts.C == pytest.approx(whole.C)


def test_natural_compression_of_powers_of_two_is_exact():
    G = np.array([[1.0, -2.0, 0.25, 0.0, 1024.0]])
    sq, mean = tr.moments(tr.parse("natural"), G)
    assert sq[0] == pytest.approx(float(G[0] @ G[0]))
    rng = np.random.default_rng(0)
    assert np.array_equal(tr.sample(tr.parse("natural"), G, rng), G)


@pytest.mark.parametrize("spec", ["", "dropout", "dropout:1", "dropout:-0.1", "langevin:x", "qsgd:0", "qsgd:2.5",
                                  "sign:1", "topk:3", "langevin:inf"])
def test_bad_transforms_name_the_option(spec):
    with pytest.raises(InputError, match="--transform"):
        tr.parse(spec)
