"""ByzFL's robust aggregators as signsim stages (issue 32, item 3; docs/theory.md §8.4): geomed, multikrum, meamed,
monna, mda, caf, smea. Each compiled kernel against an oracle written here in plain Python loops (sharing nothing
with the module), on random messages with ties and duplicate rows; the geometric median against scipy's minimizer
and ByzFL's documented examples; each in a whole run against the NumPy replay; bad specs."""

from __future__ import annotations

import itertools
import math
import statistics

import numpy as np
import pytest

from signsim.stages import registry

from ..stages.test_stages import check_replay


def kernel(spec: str, msgs: np.ndarray) -> np.ndarray:
    stage = registry.parse("aggregation", spec)
    p = np.zeros(4)
    p[:len(stage.params)] = stage.params
    from signsim.engine.stage_kernels import stage_function

    robust = stage_function(stage.module, "robust", False)
    out = np.zeros(msgs.shape[1])
    robust(msgs.copy(), out, p)
    return out


def dist2(a, b):
    return sum((x - y) ** 2 for x, y in zip(a, b, strict=True))


def mean_rows(rows):
    return [sum(col) / len(rows) for col in zip(*rows, strict=True)]


def oracle_multikrum(X, f, k, byzfl=False):
    """Blanchard et al.'s scores over the M - f - 2 nearest others; ByzFL's: the mean of row m's sorted squared
    distances to all M messages, itself (0) dropped, up to its n - f nearest (``dist[:, 1:n - f]``)."""
    M = len(X)
    scores = []
    for m in range(M):
        if byzfl:
            row = sorted(dist2(X[m], X[j]) for j in range(M))[1:M - f]
            scores.append(sum(row) / len(row))
            continue
        others = sorted(dist2(X[m], X[j]) for j in range(M) if j != m)
        scores.append(sum(others[:M - f - 2]))
    order = sorted(range(M), key=lambda m: (scores[m], m))
    return mean_rows([X[m] for m in order[:k]])


def oracle_meamed(X, f):
    M, d = len(X), len(X[0])
    out = []
    for i in range(d):
        col = [X[m][i] for m in range(M)]
        med = statistics.median(col)
        keep = sorted(range(M), key=lambda m: (abs(col[m] - med), m))[:M - f]
        out.append(sum(col[m] for m in keep) / (M - f))
    return out


def oracle_monna(X, f):
    M = len(X)
    keep = sorted(range(M), key=lambda m: (dist2(X[m], X[-1]), m))[:M - f]
    return mean_rows([X[m] for m in keep])


def oracle_mda(X, f):
    M = len(X)
    best, best_diameter = None, math.inf
    for subset in itertools.combinations(range(M), M - f):
        diameter = max((math.sqrt(dist2(X[a], X[b])) for a, b in itertools.combinations(subset, 2)), default=0.0)
        if diameter < best_diameter:
            best, best_diameter = subset, diameter
    return mean_rows([X[m] for m in best])


def oracle_smea(X, f):
    """Every subset of M - f rows, its covariance written out, numpy's eigvalsh; the first subset whose largest
    eigenvalue is within a relative 1e-9 of the smallest."""
    M, d = len(X), len(X[0])
    scores = []
    for subset in itertools.combinations(range(M), M - f):
        mu = mean_rows([X[m] for m in subset])
        cov = [[sum((X[m][i] - mu[i]) * (X[m][j] - mu[j]) for m in subset) / len(subset) for j in range(d)]
               for i in range(d)]
        scores.append((float(np.linalg.eigvalsh(np.array(cov))[-1]), subset))
    low = min(lam for lam, _ in scores)
    best = next(subset for lam, subset in scores if lam <= low + 1e-9 * low)
    return mean_rows([X[m] for m in best])


def oracle_caf(X, f):
    """Allouah, Guerraoui and Stephan's CAF (their Algorithm 2, as ByzFL states it) step by step on the d x d
    weighted covariance, with signsim's conventions (max tau over the weighted rows; stop once they coincide; the
    earliest lambda within a relative 1e-9 of the smallest). None when a step's top eigenvalue is not simple (its
    eigenvector, hence the filter, is then not determined by the messages)."""
    M, d = len(X), len(X[0])
    c = [1.0] * M
    candidates = []
    while True:
        total = sum(c)
        mu = [sum(c[m] * X[m][i] for m in range(M)) / total for i in range(d)]
        cov = [[sum(c[m] * (X[m][i] - mu[i]) * (X[m][j] - mu[j]) for m in range(M)) / total for j in range(d)]
               for i in range(d)]
        w, V = np.linalg.eigh(np.array(cov))
        lam = max(float(w[-1]), 0.0)
        candidates.append((lam, mu))
        square = sum(c[m] * dist2(X[m], X[-1]) for m in range(M)) / total
        if lam <= 1e-12 * square:
            break
        if d > 1 and w[-1] - w[-2] <= 1e-6 * w[-1]:
            return None
        v = V[:, -1]
        tau = [sum((X[m][i] - mu[i]) * v[i] for i in range(d)) ** 2 for m in range(M)]
        top = max(tau[m] for m in range(M) if c[m] > 0)
        c = [c[m] * (1 - tau[m] / top) if c[m] > 0 else 0.0 for m in range(M)]
        if sum(c) <= M - 2 * f:
            break
    low = min(lam for lam, _ in candidates)
    return next(mu for lam, mu in candidates if lam <= low + 1e-9 * low)


def messages(seed: int, M: int, d: int) -> np.ndarray:
    """Small integers (ties within columns and between distances) and a duplicated row."""
    rng = np.random.default_rng(seed)
    X = rng.integers(-3, 4, size=(M, d)).astype(float)
    X[1] = X[0]
    return X


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("M", "d"), [(7, 3), (8, 5)])
def test_each_kernel_against_its_oracle_with_ties_and_duplicates(seed, M, d):
    X = messages(seed, M, d)
    rows = X.tolist()
    for f in (1, 2):
        for k in (1, 2, M - f):
            np.testing.assert_allclose(kernel(f"multikrum:{f}:{k}", X), oracle_multikrum(rows, f, k), rtol=1e-12)
        np.testing.assert_allclose(kernel(f"multikrum:{f}", X), oracle_multikrum(rows, f, M - f), rtol=1e-12)
        np.testing.assert_allclose(kernel(f"meamed:{f}", X), oracle_meamed(rows, f), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(kernel(f"monna:{f}", X), oracle_monna(rows, f), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(kernel(f"mda:{f}", X), oracle_mda(rows, f), rtol=1e-12, atol=1e-15)
        # ByzFL's convention (M - f - 1 nearest), Krum and Multi-Krum
        for k in (1, M - f):
            np.testing.assert_allclose(kernel(f"multikrum:{f}:{k}:byzfl", X), oracle_multikrum(rows, f, k, True),
                                       rtol=1e-12)
        np.testing.assert_array_equal(kernel(f"krum:{f}:byzfl", X), oracle_multikrum(rows, f, 1, True))
        np.testing.assert_array_equal(kernel(f"krum:{f}", X), oracle_multikrum(rows, f, 1))
    # Multi-Krum of one message is Krum
    np.testing.assert_array_equal(kernel("multikrum:1:1", X), kernel("krum:1", X))
    np.testing.assert_array_equal(kernel("multikrum:2:1:byzfl", X), kernel("krum:2:byzfl", X))


def test_krum_conventions_differ_where_the_extra_neighbour_decides():
    """Five points on a line, f = 1: Blanchard et al.'s 2 nearest others pick -2 (1 + 4 = 5: -3 and 0; 0 scores 4 + 4
    = 8), ByzFL's 3 nearest pick 0 (4 + 4 + 9 = 17 against -2's 1 + 4 + 16 = 21)."""
    X = np.array([[4.0], [2.0], [0.0], [-3.0], [-2.0]])
    assert kernel("krum:1", X)[0] == -2.0 and kernel("krum:1:byzfl", X)[0] == 0.0
    assert registry.parse("aggregation", "krum:1:blanchard").spec == "krum:1"  # the default is not written out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("M", "d"), [(7, 3), (8, 5)])
def test_caf_and_smea_against_their_oracles_with_ties_and_duplicates(seed, M, d):
    X = messages(seed, M, d)
    rows = X.tolist()
    for f in (1, 2):
        np.testing.assert_allclose(kernel(f"smea:{f}", X), oracle_smea(rows, f), rtol=1e-12, atol=1e-14)
        expected = oracle_caf(rows, f)
        if expected is not None:  # (a tied top eigenvalue: no eigenvector to compare; counted below)
            np.testing.assert_allclose(kernel(f"caf:{f}", X), expected, rtol=1e-9, atol=1e-12)


def test_caf_oracle_meets_a_simple_top_eigenvalue_on_most_seeds():
    checked = sum(oracle_caf(messages(seed, M, d).tolist(), f) is not None
                  for seed in range(6) for M, d in ((7, 3), (8, 5)) for f in (1, 2))
    assert checked >= 20, checked


def test_caf_and_smea_degenerate_cases():
    rng = np.random.default_rng(4)
    X = rng.integers(-3, 4, size=(7, 4)).astype(float)
    for spec in ("caf:0", "smea:0"):  # f = 0: the mean
        np.testing.assert_allclose(kernel(spec, X), X.mean(axis=0), rtol=1e-14, atol=1e-15)
    same = np.tile([1.5, -2.0, 0.25], (7, 1))  # all rows equal: that row
    for spec in ("caf:2", "smea:2"):
        np.testing.assert_array_equal(kernel(spec, same), same[0])
    Y = rng.standard_normal((8, 4))
    Y[2] = 1e6  # one outlier far away: filtered
    honest = np.delete(Y, 2, axis=0)
    np.testing.assert_allclose(kernel("caf:1", Y), honest.mean(axis=0), rtol=1e-6, atol=1e-9)
    assert np.linalg.norm(kernel("caf:2", Y) - honest.mean(axis=0)) < 1.0
    np.testing.assert_allclose(kernel("smea:1", Y), honest.mean(axis=0), rtol=1e-12, atol=1e-14)
    Y[5] = np.inf  # a message with an infinite entry: never chosen by SMEA, weight 0 in CAF
    np.testing.assert_allclose(kernel("smea:2", Y), np.delete(Y, [2, 5], axis=0).mean(axis=0), rtol=1e-12)
    assert np.all(np.isfinite(kernel("caf:2", Y)))
    # ByzFL's documented examples
    Z = np.array([[1., 2., 3.], [4., 5., 6.], [7., 8., 9.]])
    np.testing.assert_allclose(kernel("caf:1", Z), [4., 5., 6.], rtol=1e-12)
    np.testing.assert_allclose(kernel("smea:1", Z), [2.5, 3.5, 4.5], rtol=1e-12)


def test_each_module_reference_agrees_with_its_kernel():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((9, 6))
    X[3] = X[5]
    X[0] *= 30
    for spec in ("geomed", "geomed:0.5:10", "multikrum:2", "multikrum:2:3", "meamed:3", "monna:2", "mda:2",
                 "caf:0", "caf:2", "caf:4", "smea:0", "smea:2", "smea:4"):
        stage = registry.parse("aggregation", spec)
        ref = stage.module.reference(X.copy(), np.asarray(stage.params), 0, None, None)
        np.testing.assert_allclose(kernel(spec, X), ref, rtol=1e-12, atol=1e-15, err_msg=spec)


def test_geomed_gives_byzfls_documented_example_and_converges_to_the_geometric_median():
    X = np.array([[1., 2., 3.], [4., 5., 6.], [7., 8., 9.]])
    np.testing.assert_allclose(kernel("geomed", X), [3.78788764, 4.78788764, 5.78788764], rtol=1e-8)
    from scipy.optimize import minimize

    rng = np.random.default_rng(3)
    Y = rng.standard_normal((7, 3)) * [1, 2, 3]
    best = minimize(lambda y: np.linalg.norm(Y - y, axis=1).sum(), Y.mean(axis=0), method="Nelder-Mead",
                    options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000}).x
    np.testing.assert_allclose(kernel("geomed:1e-9:500", Y), best, atol=1e-6)
    Y[2] = np.inf  # a message with an infinite entry is left out
    np.testing.assert_allclose(kernel("geomed", Y), kernel("geomed", np.delete(Y, 2, axis=0)), rtol=1e-14)
    assert np.all(kernel("geomed:0.1:0", Y) == 0)  # no step: the start, 0


@pytest.mark.parametrize("aggregate", ["geomed", "multikrum:1", *(pytest.param(a, marks=pytest.mark.slow)
                                                                  for a in ("meamed:1", "monna:1", "mda:1"))])
def test_a_run_with_each_aggregator_matches_the_numpy_replay(aggregate):
    check_replay(6, method="signum", momentum=0.5, compressor="scaled-sign", aggregate=aggregate, byzantine=1,
                 attack="invert", problem="quadratic", dim=5, workers=6, noise="gaussian:1")


@pytest.mark.parametrize("aggregate", ["caf:2", pytest.param("smea:2", marks=pytest.mark.slow)])
def test_a_run_with_caf_or_smea_under_alie_matches_the_numpy_replay(aggregate):
    check_replay(20, method="signum", momentum=0.5, compressor="scaled-sign", aggregate=aggregate, byzantine=2,
                 attack="alie", problem="quadratic", dim=5, workers=9, noise="gaussian:1")


@pytest.mark.parametrize(("args", "says"), [
    (["--aggregate", "multikrum:2", "--workers", "6"], "Multi-Krum needs M > 2 f + 2"),
    (["--aggregate", "multikrum:1:9", "--workers", "6"], "averages k <= M messages"),
    (["--aggregate", "krum:3:byzfl", "--workers", "6"], "ByzFL's Krum needs M > 2 f"),
    (["--aggregate", "krum:1:blanchrd"], "krum:1:blanchrd"),
    (["--aggregate", "meamed:3", "--workers", "6"], "needs M > 2 f"),
    (["--aggregate", "mda:12", "--workers", "40"], "more than 200,000"),
    (["--aggregate", "geomed:0"], "nu must be > 0"),
    (["--aggregate", "monna"], "monna"),
    (["--aggregate", "caf:-1"], "caf:-1"),
    (["--aggregate", "caf:3", "--workers", "6"], "CAF needs M > 2 f"),
    (["--aggregate", "smea:x"], "smea:x"),
    (["--aggregate", "smea:3", "--workers", "6"], "SMEA needs M > 2 f"),
    (["--aggregate", "smea:5", "--workers", "30"], "more than 20,000"),
])
def test_bad_specs_are_one_line(cli, args, says):
    r = cli("run", "--problem", "quadratic", "--iters", "2", "--method", "sgd", *args)
    assert r.code == 2, r.err
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], r.err


# --- ByzFL's attacks: gaussian, inf, mimic ------------------------------------------------------------------------


@pytest.mark.parametrize(("aggregate", "attack"), [("median", "gaussian:2:0.5"), *(
    pytest.param(a, b, marks=pytest.mark.slow) for a, b in (("geomed", "inf"), ("trimmed:0.2", "mimic:1"),
                                                             ("mean", "mimic")))])
def test_a_run_with_each_attack_matches_the_numpy_replay(aggregate, attack):
    check_replay(6, method="signum", momentum=0.5, compressor="scaled-sign", aggregate=aggregate, byzantine=2,
                 attack=attack, problem="quadratic", dim=5, workers=7, noise="gaussian:1")


def test_the_attacks_send_what_they_say():
    from signsim.engine.stage_kernels import stage_function

    rng = np.random.default_rng(0)
    msgs = rng.standard_normal((6, 4))
    mimic = registry.parse("attack", "mimic:1")
    rows = stage_function(mimic.module, "rows", False)
    out = msgs.copy()
    rows(out, 2, np.array([1.0, 0, 0, 0]))
    assert np.array_equal(out[0], msgs[3]) and np.array_equal(out[1], msgs[3]) and np.array_equal(out[2:], msgs[2:])
    out = msgs.copy()
    rows(out, 2, np.array([9.0, 0, 0, 0]))  # beyond the honest participants: the last
    assert np.array_equal(out[0], msgs[5])
    inf = stage_function(registry.parse("attack", "inf").module, "row", True)
    v = msgs[0].copy()
    inf(v, np.zeros(4), np.random.default_rng(1))
    assert np.all(v == np.inf)
    # gaussian: 20,000 draws of N(0.5, 2^2): mean within 4 standard errors, variance within 4 of its standard errors
    g = stage_function(registry.parse("attack", "gaussian:2:0.5").module, "row", True)
    v = np.zeros(20_000)
    g(v, np.array([2.0, 0.5, 0, 0]), np.random.default_rng(2))
    n = v.size
    assert abs(v.mean() - 0.5) < 4 * 2 / math.sqrt(n) and abs(v.var() - 4) < 4 * 4 * math.sqrt(2 / n)


def test_an_inf_attack_against_the_mean_diverges_and_says_so(cli):
    r = cli("run", "--problem", "quadratic", "--method", "sgd", "--iters", "20", "--byzantine", "1", "--attack", "inf",
            "--json")
    assert r.code == 0 and r.json()["status"] == "diverged", r.err
