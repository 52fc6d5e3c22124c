"""Stages as modules (docs/theory.md §8): every built-in passes its contract test (``signsim check-stage``), the
docs' stage tables come from the modules, and the new stages (noisy sign, natural dithering, Krum, centered
clipping) against oracles that share none of their code."""

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

from signsim import stages
from signsim.codes import SignZero
from signsim.diagnostics import stage_check as check
from signsim.engine import stage_kernels
from signsim.errors import InputError
from signsim.render import stage_tables
from signsim.stages import registry

from ..stages.test_stages import check_replay

ROOT = Path(__file__).resolve().parents[2]


def kernel(spec, v, gen, sign_zero=SignZero.RANDOM):
    return stage_kernels.compress_once(stages.parse_compressor(spec, v.size), v, sign_zero, gen)


@pytest.mark.parametrize("spec", [f"{m.NAME}:3" if m.NAME in ("top-k", "rand-k") else m.NAME
                                  for m in registry.builtin("compressor").values()])
def test_every_builtin_compressor_passes_its_contract_test(spec):
    if spec == "noisy-sign":
        spec = "noisy-sign:uniform:2"
    stage = registry.parse("compressor", spec)
    rows = check.check(stage, samples=200, seed=1)
    assert rows and all(not r.failures for r in rows), check.table(stage, rows)


def test_check_stage_catches_a_wrong_constant(monkeypatch):
    """A compressor that declares a smaller omega than it has fails (the test can fail)."""
    mod = registry.builtin("compressor")["rand-k"]
    monkeypatch.setattr(mod, "constant", lambda d, k: 0.5 * (d / k - 1.0))
    rows = check.check(registry.parse("compressor", "rand-k:1"), samples=200, seed=1)
    assert any("exceeds omega" in f for r in rows for f in r.failures)


def test_check_stage_catches_a_bias(monkeypatch):
    """sto-sign declared unbiased (it is not: E C(x) = x / ||x||) fails the bias test."""
    mod = registry.builtin("compressor")["sto-sign"]
    monkeypatch.setattr(mod, "KIND", "unbiased")
    monkeypatch.setattr(mod, "constant", lambda d: float(d))
    rows = check.check(registry.parse("compressor", "sto-sign"), samples=200, seed=1)
    assert any(f.startswith("biased") for r in rows for f in r.failures)


def test_check_stage_command_prints_a_table_and_exits_by_the_verdict(cli):
    r = cli("check-stage", "qsgd:2", "--samples", "100")
    assert r.code == 0 and "qsgd:2" in r.out and "gaussian" in r.out and "FAIL" not in r.out
    r = cli("check-stage", "zip")
    assert r.code == 2 and "zip" in r.err


def test_reference_md_stage_tables_are_generated_from_the_modules():
    text = (ROOT / "docs" / "reference.md").read_text()
    block = text.split("<!-- stages:begin -->\n", 1)[1].split("<!-- stages:end -->", 1)[0]
    assert block == stage_tables.markdown(), "regenerate with: python tools/generate_stages.py"


def test_every_builtin_stage_cites_a_theory_section_that_exists():
    theory = (ROOT / "docs" / "theory.md").read_text()
    for kind in registry.BUILTIN:
        for mod in registry.builtin(kind).values():
            assert f"### {mod.THEORY} " in theory or f"## {mod.THEORY} " in theory, (kind, mod.NAME)
            assert "docs/theory.md §" in mod.__doc__, (kind, mod.NAME)


def test_every_default_is_resolved_and_recorded(cli):
    assert stages.parse_compressor("qsgd").spec == "qsgd:4"
    assert stages.parse_compressor("top-k", 95).spec == "top-k:10"
    assert stages.parse_compressor("noisy-sign:0.5").spec == "noisy-sign:gaussian:0.5"
    assert stages.parse_aggregate("cclip:2").spec == "cclip:2:1"
    doc = cli("run", "--method", "qsgd", "--iters", "2", "--json").json()
    assert doc["stages"]["compressor"]["spec"] == "qsgd:4"
    doc = cli("run", "--compressor", "qsgd", "--iters", "2", "--json").json()
    assert doc["stages"]["compressor"]["spec"] == "qsgd:4"
    listed = cli("list").out
    assert "default s = 4" in " ".join(listed.split())


@pytest.mark.parametrize(("option", "spec"), [("--compressor", "qsgd:1e160"), ("--compressor", "dither:0"),
                                              ("--compressor", "noisy-sign:0"), ("--compressor", "noisy-sign:x:1"),
                                              ("--compressor", "noisy-sign"), ("--aggregate", "krum"),
                                              ("--aggregate", "cclip:-1"), ("--aggregate", "mean:"),
                                              ("--attack", "invert:2")])
def test_bad_specs_exit_2_naming_them(cli, option, spec):
    r = cli("run", option, spec, "--iters", "2")
    lines = r.err.strip().splitlines()
    assert r.code == 2 and len(lines) == 1 and spec in lines[0], r.err


# --- noisy sign -----------------------------------------------------------------------------------------------

V = np.array([0.3, -0.7, 0.0, 1.0, -1.0, 0.05])


def test_noisy_sign_with_uniform_noise_is_v_over_sigma_in_expectation():
    """For sigma >= |v_i|: P(v_i + xi > 0) = (sigma + v_i) / (2 sigma), so E sign(v_i + xi) = v_i / sigma exactly."""
    sigma, S = 1.5, 20000
    gen = np.random.default_rng(7)
    draws = np.array([kernel(f"noisy-sign:uniform:{sigma}", V, gen)[0] for _ in range(S)])
    se = np.sqrt(np.maximum(1 - (V / sigma) ** 2, 1e-12) / S)  # the exact standard error of a +-1 mean
    assert np.all(np.abs(draws.mean(axis=0) - V / sigma) <= 5 * se)


def test_noisy_sign_with_gaussian_noise_is_2_phi_minus_1_in_expectation():
    sigma, S = 0.8, 20000
    gen = np.random.default_rng(8)
    draws = np.array([kernel(f"noisy-sign:{sigma}", V, gen)[0] for _ in range(S)])
    expect = 2 * norm.cdf(V / sigma) - 1
    se = np.sqrt(np.maximum(1 - expect**2, 1e-12) / S)
    assert np.all(np.abs(draws.mean(axis=0) - expect) <= 5 * se)


def test_noisy_sign_vote_follows_the_mean_on_the_vote_trap():
    """Chen et al.'s point: with enough noise the vote of signs tracks the sign of the mean, not of the median."""
    check_replay(5, method="signsgd", compressor="noisy-sign:uniform:3", problem="vote-trap", workers=3)
    check_replay(5, method="signsgd", compressor="noisy-sign:0.5", problem="quadratic", dim=6, workers=5,
                 sign_zero="zero", tie="zero")


# --- natural dithering -----------------------------------------------------------------------------------------

def dither_exact(v, s):
    """(E C(v), E||C(v) - v||^2) from the definition: levels 0 and 2^-j, j = 0..s-1, of r = |v| / ||v||."""
    nrm = math.sqrt(sum(x * x for x in v))
    levels = [0.0] + [2.0 ** -j for j in range(s - 1, -1, -1)]
    mean, var = [], 0.0
    for x in v:
        r = abs(x) / nrm
        a = max(lv for lv in levels if lv <= r)
        b = min(lv for lv in levels if lv >= r)
        p = 0.0 if b == a else (r - a) / (b - a)
        mean.append(math.copysign(nrm * (a + p * (b - a)), x) if x else 0.0)
        var += nrm * nrm * p * (1 - p) * (b - a) ** 2
    return np.array(mean), var


@pytest.mark.parametrize("s", [1, 2, 3, 8])
def test_dither_is_unbiased_with_its_exact_variance(s):
    v = np.array([0.9, -0.05, 0.3, 0.0, -0.31, 0.001, 0.5])
    mean, var = dither_exact(v, s)
    np.testing.assert_allclose(mean, v, rtol=1e-12, atol=1e-15)
    gen = np.random.default_rng(s)
    S = 20000
    draws = np.array([kernel(f"dither:{s}", v, gen)[0] for _ in range(S)])
    sq = np.sum((draws - v) ** 2, axis=1)
    assert abs(sq.mean() - var) <= 5 * sq.std() / np.sqrt(S) + 1e-15
    se = draws.std(axis=0) / np.sqrt(S)
    assert np.all(np.abs(draws.mean(axis=0) - v) <= 5 * se + 1e-12)


def test_dither_omega_bounds_the_exact_variance():
    rng = np.random.default_rng(0)
    for _ in range(300):
        d = int(rng.integers(1, 400))
        s = int(rng.integers(1, 10))
        v = rng.standard_normal(d) * (rng.standard_cauchy(d) if rng.random() < 0.5 else 1.0)
        _, var = dither_exact(v, s)
        omega = stages.compressor_constant(f"dither:{s}", d)["omega"]
        assert var <= omega * np.sum(v**2) * (1 + 1e-9)


def test_dither_bits_against_the_formula():
    for d, s in [(1, 1), (7, 2), (100, 3), (64, 8)]:
        v = np.random.default_rng(d).standard_normal(d)
        _, bits = kernel(f"dither:{s}", v, None)
        assert bits == 32 + d * (1 + math.ceil(math.log2(s + 1)))


# --- Krum and centered clipping ------------------------------------------------------------------------------

def robust(spec, msg, agg):
    stage = stages.parse_aggregate(spec)
    stage_kernels.stage_function(stage.module, "robust", False)(msg, agg, stage.param_array())
    return agg


def krum_brute_force(msgs, f):
    M = len(msgs)
    scores = []
    for m in range(M):
        dists = sorted(sum((a - b) ** 2 for a, b in zip(msgs[m], msgs[j], strict=True)) for j in range(M) if j != m)
        scores.append(sum(dists[:M - f - 2]))
    return msgs[min(range(M), key=lambda m: (scores[m], m))]


def test_krum_against_brute_force():
    rng = np.random.default_rng(3)
    for _ in range(50):
        f = int(rng.integers(0, 3))
        M = 2 * f + 3 + int(rng.integers(0, 3))
        msgs = rng.integers(-2, 3, size=(M, 3)).astype(float)  # ties in the scores
        got = robust(f"krum:{f}", msgs, np.zeros(3))
        assert got.tolist() == list(krum_brute_force(msgs.tolist(), f))


def test_krum_needs_more_than_2f_plus_2_workers(cli):
    r = cli("run", "--aggregate", "krum:3", "--workers", "8", "--iters", "2")
    assert r.code == 2 and "krum:3" in r.err and "M > 2 f + 2" in r.err


def test_centered_clipping_without_clipping_is_the_mean_and_clips_an_outlier():
    msgs = np.array([[1.0, 2.0], [3.0, 2.0], [2.0, 5.0]])
    agg = robust("cclip:1e9", msgs.copy(), np.zeros(2))  # from v = 0, nothing clipped: the mean
    np.testing.assert_allclose(agg, msgs.mean(axis=0), rtol=1e-15)
    honest = np.ones((4, 2))
    bad = np.vstack([np.array([[1e6, -1e6]]), honest])
    prev = np.ones(2)
    for L in (1, 3):
        agg = robust(f"cclip:0.5:{L}", bad.copy(), prev.copy())
        # each round moves v by at most tau / M per Byzantine message, honest ones sit at v
        assert np.linalg.norm(agg - prev) <= L * 0.5 / 5 * (1 + 1e-12)


NEW_AGGREGATES = ["krum:1", "cclip:0.5", "cclip:2:3"]
NEW_ATTACKS = [{}, {"byzantine": 1, "attack": "invert"}, {"byzantine": 1, "attack": "alie:1.5"}]


def new_aggregation_cases():
    """Every new aggregation with every attack: each composition is a loop of its own, so the fast suite runs each
    aggregation and each attack once (Krum and centered clipping each against an attack), the slow step (.ci/run)
    the rest."""
    for i, aggregate in enumerate(NEW_AGGREGATES):
        for j, attack in enumerate(NEW_ATTACKS):
            fast = j == (i + 1) % len(NEW_ATTACKS)
            yield pytest.param(aggregate, attack, id=f"{aggregate}-attack{j}", marks=() if fast else pytest.mark.slow)


@pytest.mark.parametrize(("aggregate", "attack"), list(new_aggregation_cases()))
def test_new_aggregations_match_the_reference(aggregate, attack):
    check_replay(6, method="signum", momentum=0.5, compressor="scaled-sign", aggregate=aggregate, **attack,
                 problem="quadratic", dim=5, workers=6, noise="gaussian:1")


def test_dither_run_matches_the_reference():
    check_replay(5, method="qsgd", compressor="dither:3", problem="quadratic", dim=9, workers=4, noise="gaussian:1")


def test_parse_errors_are_input_errors_never_overflow():
    for spec in ("qsgd:1e400", "qsgd:1e160", "top-k:-1", "dither:1.5"):
        with pytest.raises(InputError):
            stages.parse_compressor(spec)
