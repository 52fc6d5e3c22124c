"""Diversity of transformed per-sample gradients: closed forms against sampling the transformation itself (a
compressor through its compiled kernel), the kernel's draws against the compressor's NumPy reference applied by
hand, and the specs' errors (docs/theory.md §10.4)."""

import math

import numpy as np
import pytest

from signsim.diagnostics import transforms as tr
from signsim.errors import InputError
from signsim.stages import registry

#: the transformations with closed forms: dropout and Langevin, and the compressors whose modules declare moments
SPECS = ["dropout:0.3", "langevin:0.5", "sign", "sto-sign", "qsgd:2", "qsgd:7", "natural"]
#: a spec of every built-in compressor (the parameters small enough for d = 6)
COMPRESSORS = {"identity": "identity", "sign": "sign", "sto-sign": "sto-sign", "scaled-sign": "scaled-sign",
               "qsgd": "qsgd:3", "terngrad": "terngrad", "top-k": "top-k:2", "rand-k": "rand-k:2",
               "natural": "natural", "onebit": "onebit", "noisy-sign": "noisy-sign:0.7", "dither": "dither:3"}
#: the compressors the fast tests compile anyway (their closed forms are checked against the kernel's draws)
FAST = {"sign", "sto-sign", "qsgd", "natural"}
POLICIES = {"random": 0, "plus": 1, "zero": 2}


def gradients(seed=0, n=12, d=6):
    """Per-sample gradients with the awkward cases: a zero row, exact zeros, ties in |g|, powers of two."""
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((n, d)) * rng.choice([0.1, 1.0, 10.0], size=(n, 1)) + 0.3
    G[0] = 0.0
    G[1, :3] = 0.0
    G[2] = [1.0, -1.0, 1.0, -1.0, 2.0, 0.5]
    return G


def test_every_builtin_compressor_is_a_transformation():
    assert set(COMPRESSORS) == set(registry.builtin("compressor"))
    for name, spec in COMPRESSORS.items():
        t = tr.parse(spec).at_dim(6)
        assert t.module is registry.builtin("compressor")[name] and t.spec == t.stage.spec


def draws(t, G, R, seed):
    """R draws of T on the rows of G, all from one generator (a compressor: its kernel, in one compiled call)."""
    rng = np.random.default_rng(seed)
    if t.stage is None:
        return np.stack([tr.sample(t, G, rng) for _ in range(R)])
    keep = np.zeros((R, *G.shape))
    tr._kernel_draws(t, np.ascontiguousarray(G), [rng] * R, np.zeros(R), np.zeros((R, G.shape[1])), keep)
    return keep


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("sign_zero", ["random", "plus", "zero"])
def test_per_row_moments_match_sampling(spec, sign_zero):
    """E||T(g)||^2 and E T(g) in closed form against 20,000 draws, within 5 standard errors per entry."""
    t = tr.parse(spec, sign_zero)
    G = gradients()
    sq, mean = tr.moments(t, G)
    R = 20000
    T = draws(t, G, R, 1)  # R x n x d
    emp_sq = np.einsum("rij,rij->ri", T, T)
    se_sq = emp_sq.std(axis=0) / math.sqrt(R)
    assert np.all(np.abs(emp_sq.mean(axis=0) - sq) <= 5 * se_sq + 1e-9)
    se_mean = T.std(axis=0) / math.sqrt(R)
    assert np.all(np.abs(T.mean(axis=0) - mean) <= 5 * se_mean + 1e-9)


@pytest.mark.parametrize("spec", SPECS)
def test_diversity_closed_form_within_monte_carlo_interval(spec):
    t = tr.parse(spec)
    G = gradients(2)
    exact = tr.closed_form(t, G)
    mc = tr.monte_carlo(t, G, draws=4000, seed=3, z=5.0)
    lo, hi = mc.interval
    assert lo <= exact.B_S <= hi
    assert exact.n == mc.n == len(G) and exact.method == "closed-form" and mc.method == "monte-carlo"


@pytest.mark.parametrize("name", [n if n in FAST else pytest.param(n, marks=pytest.mark.slow) for n in COMPRESSORS])
@pytest.mark.parametrize("sign_zero", ["random", "zero"])
def test_a_compressor_as_a_transformation_is_its_reference_applied_by_hand(name, sign_zero):
    """One draw of the transformation (the compiled kernel, row after row from one generator) against the module's
    NumPy reference applied to each row by hand with a generator of the same seed: the same draws in the same order."""
    G = gradients(7)
    t = tr.parse(COMPRESSORS[name], sign_zero).at_dim(G.shape[1])
    got = tr.sample(t, G, np.random.default_rng(11))
    gen = np.random.default_rng(11)
    mod = registry.builtin("compressor")[name]
    want = np.array([mod.reference(g.copy(), t.stage.params, POLICIES[sign_zero], gen) for g in G])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-300)


def test_monte_carlo_does_not_depend_on_the_blocks_and_is_reproducible():
    """Draw r of the set comes from the r-th stream, rows in order: the rows in blocks or whole, the same numbers."""
    G = gradients(6, n=30)
    t = tr.parse("sto-sign")
    whole = tr.monte_carlo(t, G, draws=50, seed=4)
    parts = tr.monte_carlo(t, iter([G[:7], G[7:8], G[8:]]), draws=50, seed=4)
    assert (whole.A, whole.C, whole.mean_sq) == (parts.A, parts.C, parts.mean_sq)
    other = tr.monte_carlo(t, G, draws=50, seed=5)
    assert other.A == whole.A and other.C != whole.C  # sto-sign: ||T(g)||^2 = d, whatever is drawn


def test_estimate_samples_only_without_a_closed_form():
    G = gradients(3)
    assert tr.estimate(tr.parse("qsgd:3"), G).method == "closed-form"
    assert not tr.has_closed_form(tr.parse("rand-k:2").at_dim(6))
    deterministic = tr.monte_carlo(tr.parse("sign", "plus"), G, draws=3, seed=0)  # (sampled all the same)
    C = np.where(G >= 0, 1.0, -1.0)  # sign(0) = +1
    assert deterministic.A == np.sum(C * C) and deterministic.C == np.sum(C.sum(axis=0) ** 2)
    assert deterministic.interval == (deterministic.B_S, deterministic.B_S)


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


def test_sto_sign_of_a_zero_gradient_is_zero_as_the_compressor_sends_it():
    sq, mean = tr.moments(tr.parse("sto-sign"), np.zeros((1, 4)))
    assert sq[0] == 0.0 and not mean.any()
    assert not tr.sample(tr.parse("sto-sign"), np.zeros((2, 4)), np.random.default_rng(0)).any()


@pytest.mark.parametrize("spec", ["", "dropout", "dropout:1", "dropout:-0.1", "langevin:x", "qsgd:0", "qsgd:2.5",
                                  "sign:1", "topk:3", "langevin:inf", "top-k:0", "noisy-sign", "qsgd:4:gzip"])
def test_bad_transforms_name_the_option(spec):
    with pytest.raises(InputError, match="--transform") as e:
        tr.parse(spec)
    assert "\n" not in str(e.value)


def test_a_compressor_parameter_past_the_dimension_is_named():
    with pytest.raises(InputError, match=r"^--transform top-k:7: k exceeds the dimension 6$"):
        tr.parse("top-k:7").at_dim(6, "top-k:7")


@pytest.mark.parametrize("spec,words", [("topk:3", "unknown transformation"), ("qsgd:0", "s must be >= 1"),
                                        ("top-k:9", "exceeds the dimension 3"), ("dropout:1", "[0, 1)")])
def test_bad_transforms_exit_2_with_one_line(cli, tmp_path, spec, words):
    path = tmp_path / "g.npy"
    np.save(path, np.random.default_rng(1).standard_normal((5, 3)))
    r = cli("diversity", "--grads", path, "--transform", spec, "--quiet")
    lines = [line for line in r.err.splitlines() if line.strip()]
    assert r.code == 2 and len(lines) == 1 and "Traceback" not in r.err, r.err
    assert lines[0].startswith(f"signsim: error: --transform {spec}: ") and words in lines[0], lines[0]


def test_transform_draws_without_a_transform_is_refused(cli, tmp_path):
    path = tmp_path / "g.npy"
    np.save(path, np.random.default_rng(1).standard_normal((5, 3)))
    r = cli("diversity", "--grads", path, "--transform-draws", "50", "--quiet")
    assert r.code == 2 and "--transform-draws 50: has no effect without --transform" in r.err


def test_transform_draws_that_no_transform_uses_is_a_warning():
    import signsim

    with pytest.warns(UserWarning, match=r"--transform-draws 50 is not used: every --transform has closed forms"):
        doc = signsim.diversity(transform="sign", transform_draws=50).to_dict()
    assert doc["options"]["transform_draws"] == 50 and doc["transforms"][1]["method_of_estimate"] == "closed-form"


@pytest.mark.parametrize("name", [n if n in FAST else pytest.param(n, marks=pytest.mark.slow) for n in COMPRESSORS])
def test_a_declared_degree_holds_draw_for_draw(name):
    """C(2^j g) = 2^(jk) C(g) with the same draws, for the degree k the module declares (none: noisy-sign)."""
    mod = registry.builtin("compressor")[name]
    G = gradients(8)
    t = tr.parse(COMPRESSORS[name]).at_dim(G.shape[1])
    k = getattr(mod, "DEGREE", None)
    if k is None:
        assert name == "noisy-sign"  # sign(v + sigma xi) is neither
        return
    base = tr.sample(t, G, np.random.default_rng(2))
    for j in (-7, 5):
        scaled = tr.sample(t, G * 2.0**j, np.random.default_rng(2))
        assert np.array_equal(scaled, base * 2.0 ** (j * k)), (name, j)


@pytest.mark.parametrize("spec", ["sign", "qsgd:3"])
def test_monte_carlo_of_gradients_of_any_magnitude_stays_finite(spec):
    """Sampled in the power-of-two unit of the module's DEGREE: the same numbers at 2^900 and 2^-900."""
    t = tr.parse(spec)
    G = gradients(9)
    base = tr.monte_carlo(t, G, draws=20, seed=1)
    for j in (900, -900):
        big = tr.monte_carlo(t, [G[:5] * 2.0**j, G[5:] * 2.0**j], draws=20, seed=1)
        assert big.B_S == pytest.approx(base.B_S, rel=1e-12) and big.B_simple == pytest.approx(base.B_simple, rel=1e-12)
