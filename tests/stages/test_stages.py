"""Methods as composed stages (docs/theory.md §2, §8): every alias and a grid of stage combinations against the
NumPy replay, each compressor's definition, constant and bit count, Lion, EF21, robust rules and attacks."""

import itertools
import math

import numba
import numpy as np
import pytest

import signsim
from signsim import accounting, methods, stages
from signsim.codes import SignZero
from signsim.engine import loop, stage_kernels
from signsim.engine.driver import simulate
from signsim.engine.reference import ReferenceRun
from signsim.errors import InputError
from signsim.stages import registry
from signsim.stages.sorting import sort_in_place, top_k_order

from ..conftest import make_engine, run_engine

ALIASES = list(methods.registry())


def replay(iters, **options):
    engine, problem, model, params, settings, cfg = make_engine(iters=iters, eval_every=1, **options)
    simulate(engine)
    ref = ReferenceRun(problem, model, params, settings, cfg.workers, cfg.seed)
    xs = [ref.x.copy()] + [ref.step().copy() for _ in range(iters)]
    return engine, xs, ref


def check_replay(iters, **options):
    engine, xs, ref = replay(iters, **options)
    np.testing.assert_allclose(engine.x, xs[-1], rtol=1e-12, atol=1e-14)
    assert engine.tally[loop.T_UP] == ref.bits_up
    assert engine.tally[loop.T_DOWN] == ref.bits_down
    return engine, xs


@pytest.mark.parametrize("method", ALIASES)
def test_every_alias_matches_the_reference_and_counts_bits_by_the_formulas(method):
    # (MARINA runs on exact local gradients only: its preset --noise none, theory.md §8.10)
    noise = dict(methods.get(method).presets).get("noise", "gaussian:1")
    engine, xs = check_replay(6, method=method, problem="quadratic", dim=12, workers=5, noise=noise)
    assert not np.allclose(xs[0], xs[-1])  # it moved
    h = engine.history()
    assert h[0, loop.H_BITS_UP] == 0 and h[-1, loop.H_BITS_UP] == engine.tally[loop.T_UP] > 0


# momentum kind (through the alias that carries it) x compressor x error feedback; aggregation and attack
# rotate through their values so that every pair is met across the grid. Every row runs in the fast suite: the
# family's one loop runs every composition of built-in stages without compiling again
MOMENTA = {"signsgd": {}, "signum": {"momentum": 0.5}, "ssdm": {"momentum": 0.5}, "lion": {}}
COMPRESSORS = ["identity", "sign", "sto-sign", "scaled-sign", "qsgd:2", "terngrad", "top-k:3", "rand-k:4",
               "natural", "onebit"]
AGGREGATES = ["mean", "majority", "median", "trimmed:0.2"]
ATTACKS = [{}, {"byzantine": 1, "attack": "invert"}, {"byzantine": 2, "attack": "random"},
           {"byzantine": 1, "attack": "alie:1.5"}, {"byzantine": 2, "attack": "ipm:0.5"}]
GRID = []
for i, (m, c, ef) in enumerate(itertools.product(MOMENTA, COMPRESSORS, ["none", "ef", "ef21"])):
    if ef != "none" and c.partition(":")[0] not in stages.CONTRACTIVE:
        continue
    agg = "mean" if ef == "ef21" else AGGREGATES[i % len(AGGREGATES)]
    if ef == "ef" and agg == "majority":
        agg = "median"
    GRID.append((m, c, ef, agg, i % len(ATTACKS)))


@pytest.mark.parametrize(("method", "compressor", "ef", "aggregate", "attack"), GRID)
def test_stage_grid_matches_the_reference(method, compressor, ef, aggregate, attack):
    check_replay(5, method=method, compressor=compressor, error_feedback=ef, aggregate=aggregate,
                 **MOMENTA[method], **ATTACKS[attack], problem="quadratic", dim=10, workers=6,
                 noise="gaussian:1", weight_decay=0.1 if attack == 0 else 0.0, lr=0.01)


@pytest.mark.parametrize(("aggregate", "attack"), list(itertools.product(AGGREGATES, range(len(ATTACKS)))))
def test_every_aggregate_with_every_attack_matches_the_reference(aggregate, attack):
    check_replay(5, method="signsgd", compressor="scaled-sign", aggregate=aggregate, **ATTACKS[attack],
                 problem="rosenbrock", dim=5, workers=7, noise="student-t:3:1")


def test_nonsense_combinations_exit_2_naming_both_options(cli):
    for args, words in [
        (("--compressor", "sign", "--error-feedback", "ef"), ("--compressor", "--error-feedback")),
        (("--method", "ef21", "--aggregate", "median"), ("--aggregate", "--error-feedback")),
        (("--method", "topk-ef", "--aggregate", "majority"), ("--aggregate", "--error-feedback")),
        (("--attack", "alie:1", "--byzantine", "8", "--workers", "8"), ("--attack", "--byzantine")),
        (("--compressor", "top-k:11", "--dim", "10"), ("--compressor",)),
        (("--compressor", "qsgd:0"), ("--compressor",)),
        (("--compressor", "zip"), ("--compressor",)),
        (("--error-feedback", "ef3"), ("--error-feedback",)),
        (("--momentum2", "0.5"), ("--momentum2",)),
        (("--method", "lion", "--momentum2", "1.5"), ("--momentum2",)),
        (("--weight-decay", "-1"), ("--weight-decay",)),
        (("--attack", "alie:x"), ("--attack",)),
    ]:
        r = cli("run", "--iters", "2", *args)
        assert r.code == 2, (args, r.err)
        lines = r.err.strip().splitlines()
        assert len(lines) == 1 and all(w in lines[0] for w in words), (args, r.err)


# --- compressors, one at a time, through the kernel -------------------------------------------------------

def kernel(spec, v, gen, sign_zero=SignZero.RANDOM):
    return stage_kernels.compress_once(stages.parse_compressor(spec, v.size), v, sign_zero, gen)


UNBIASED = ["identity", "qsgd:1", "qsgd:4", "terngrad", "rand-k:1", "rand-k:3", "natural"]
VECTORS = {
    "random": np.random.default_rng(11).standard_normal(7) * np.array([1, 10, 0.1, 3, 1e-3, 2, 5]),
    "zero": np.zeros(7),
    "one non-zero": np.array([0, 0, -2.5, 0, 0, 0, 0.0]),
    "ties": np.array([1.0, -1.0, 1.0, 0.5, -1.0, 0.25, 0.0]),
}


@numba.njit
def _draws(kern, v, p, sign_zero, gen, S):
    """S draws of C(v) by the compressor's kernel, each into a zeroed message and scratch as ``compress_once`` gives
    them, in one compiled loop: the same draws as S calls of ``kernel`` from Python, without their 50 us each."""
    out = np.zeros((S, v.shape[0]), dtype=v.dtype)
    scratch = np.zeros(v.shape[0], dtype=np.int64)
    for s in range(S):
        scratch[:] = 0
        kern(v, out[s], p, sign_zero, gen, scratch)
    return out


def many(spec, v, gen, S, sign_zero=SignZero.RANDOM):
    stage = stages.parse_compressor(spec, v.size)
    kern = stage_kernels.stage_function(stage.module, "kernel", False)
    return _draws(kern, v, stage.param_array(), int(sign_zero), gen, S)


def test_many_draws_are_the_draws_of_single_calls():
    for spec in UNBIASED:
        v = VECTORS["random"]
        gen = np.random.default_rng(5)
        single = np.array([kernel(spec, v, gen)[0] for _ in range(50)])
        np.testing.assert_array_equal(many(spec, v, np.random.default_rng(5), 50), single)


@pytest.mark.parametrize("spec", UNBIASED)
@pytest.mark.parametrize("name", list(VECTORS))
def test_unbiased_compressors_within_5_standard_errors_and_omega(spec, name):
    v = VECTORS[name]
    S = 20000
    draws = many(spec, v, np.random.default_rng(5), S)
    se = draws.std(axis=0) / np.sqrt(S)
    assert np.all(np.abs(draws.mean(axis=0) - v) <= 5 * se + 1e-12 * (1 + np.abs(v)))
    # E||C(x) - x||^2 <= omega ||x||^2, the sample mean of the squared error within 5 standard errors
    err = np.sum((draws - v) ** 2, axis=1)
    omega = stages.compressor_constant(spec, v.size)["omega"]
    assert err.mean() - 5 * err.std() / np.sqrt(S) <= omega * np.sum(v**2) + 1e-12


@pytest.mark.parametrize("spec", ["identity", "scaled-sign", "top-k:1", "top-k:3", "top-k:7", "onebit"])
@pytest.mark.parametrize("name", list(VECTORS))
def test_contractive_compressors_satisfy_alpha(spec, name):
    rng = np.random.default_rng(3)
    vectors = [VECTORS[name]] + ([rng.standard_normal(7) * rng.exponential(1, 7) for _ in range(200)]
                                 if name == "random" else [])
    for v in vectors:
        out, _ = kernel(spec, v, np.random.default_rng(0), SignZero.ZERO)
        c = stages.compressor_constant(spec, v.size)
        alpha = c.get("alpha", 1.0)
        assert np.sum((out - v) ** 2) <= (1 - alpha) * np.sum(v**2) * (1 + 1e-12) + 1e-300


def test_top_k_breaks_ties_by_the_lower_index():
    out, _ = kernel("top-k:3", VECTORS["ties"], None)
    assert out.tolist() == [1.0, -1.0, 1.0, 0, 0, 0, 0]


def test_deterministic_compressors_by_definition():
    v = np.array([3.0, -1.0, 0.0, -2.0, 6.0])
    assert kernel("onebit", v, None)[0].tolist() == [3.0, -1.5, 3.0, -1.5, 3.0]  # means of {3, 0, 6}, {-1, -2}
    assert kernel("scaled-sign", v, None, SignZero.ZERO)[0].tolist() == [2.4, -2.4, 0.0, -2.4, 2.4]
    out = kernel("natural", np.array([3.0, -0.75, 4.0, 1e-300]), np.random.default_rng(0))[0]
    assert abs(out[0]) in (2.0, 4.0) and abs(out[1]) in (0.5, 1.0) and out[2] == 4.0 and out[1] < 0
    assert abs(out[3]) in (2.0 ** math.floor(math.log2(1e-300)), 2.0 ** (math.floor(math.log2(1e-300)) + 1))
    t = kernel("terngrad", v, np.random.default_rng(1))[0]
    assert set(np.abs(t)) <= {0.0, 6.0} and t[4] == 6.0 and t[2] == 0.0
    q = kernel("qsgd:2", v, np.random.default_rng(2))[0]
    nrm = np.linalg.norm(v)
    assert set(np.round(np.abs(q) / nrm * 2, 12)) <= {0.0, 1.0, 2.0}


def index_bits(d):  # written apart from accounting.index_bits
    return max(1, math.ceil(math.log2(d)))


@pytest.mark.parametrize("d", [1, 2, 7, 8, 1000])
def test_bits_per_message_against_the_formulas(d):
    v = np.random.default_rng(d).standard_normal(d)
    k = max(1, d // 3)
    expect = {"identity": 32 * d, "sign": d, "sto-sign": d, "scaled-sign": d + 32, "terngrad": 32 + 2 * d,
              f"top-k:{k}": k * (32 + index_bits(d)), f"rand-k:{k}": k * (32 + index_bits(d)),
              "natural": 9 * d, "onebit": d + 64}
    for spec, bits in expect.items():
        out, counted = kernel(spec, v, np.random.default_rng(0))
        assert counted == bits, spec
        assert accounting.uplink_bits(stages.parse_compressor(spec, d), d, SignZero.RANDOM) == bits, spec
    assert kernel("sign", v, None, SignZero.ZERO)[1] == 2 * d
    for s in (1, 3, 4, 15):
        out, counted = kernel(f"qsgd:{s}", v, np.random.default_rng(s))
        n, L = np.count_nonzero(out), math.ceil(math.log2(s + 1))
        assert counted == 33 + min(d * (1 + L), n * (index_bits(d) + 1 + L))
        assert counted == accounting.uplink_bits(f"qsgd:{s}", d, SignZero.RANDOM, n)


def test_sparse_broadcast_is_counted_per_iteration(cli):
    doc = cli("run", "--method", "topk-ef", "--workers", "4", "--iters", "20", "--eval-every", "1", "--json").json()
    d, k = doc["problem"]["dim"], doc["stages"]["compressor"]["k"]
    ups = np.diff([r["bits_up"] for r in doc["history"]])
    downs = np.diff([r["bits_down"] for r in doc["history"]])
    assert np.all(ups == 4 * k * (32 + index_bits(d)))
    # the mean of 4 top-k messages has between k and 4k non-zero entries (fewer only by cancellation)
    assert np.all(downs <= 4 * (1 + 4 * k * (32 + index_bits(d)))) and np.all(downs >= 4)
    assert doc["final"]["bits_down"] == doc["history"][-1]["bits_down"]
    assert doc["stages"]["compressor"]["alpha"] == pytest.approx(k / d)


# --- Lion, EF21, robust aggregation, attacks --------------------------------------------------------------

def test_two_lion_steps_equal_the_formula():
    """Quadratic, no noise, one worker: g = L x. m_0 = 0; c = b1 m + (1-b1) g; m <- b2 m + (1-b2) g;
    x <- x - gamma (sign c + lambda x)."""
    b1, b2, lr, lam = 0.8, 0.95, 0.1, 0.3
    engine, problem, *_ = make_engine(problem="quadratic", dim=4, kappa=8.0, noise="none", method="lion",
                                      workers=1, iters=2, lr=lr, momentum=b1, momentum2=b2, weight_decay=lam)
    L = np.logspace(0, np.log10(8.0), 4)
    x = problem.x0.astype(float).copy()
    m = np.zeros(4)
    for _ in range(2):
        g = L * x
        c = b1 * m + (1 - b1) * g
        m = b2 * m + (1 - b2) * g
        x = x - lr * (np.sign(c) + lam * x)
    simulate(engine)
    np.testing.assert_allclose(engine.x, x, rtol=1e-14)


@pytest.mark.parametrize("aggregate", ["majority", "mean"])
def test_distributed_lion_on_heterogeneous_workers_equals_the_algorithm_written_out(aggregate):
    """Distributed Lion (Liu et al. 2024, arXiv:2404.00438): each worker keeps its own Lion state and sends
    delta_m = sign(b1 m_m + (1-b1) g_m), then m_m <- b2 m_m + (1-b2) g_m; the server returns the majority vote
    sign(sum delta_m) (MaVo) or the mean (1/M) sum delta_m (Avg), and x <- x - gamma (Delta + lambda x). The vote
    trap's six workers compute exact gradients of two different local objectives (x - 1 on four, 6 (x + 1) on two),
    so the workers' signs disagree and each worker's momentum is its own; 4 against 2 never ties."""
    b1, b2, lr, lam, iters, M = 0.8, 0.95, 0.05, 0.1, 40, 6
    r = signsim.run(problem="vote-trap", workers=M, x0=0.3, lr=lr, lr_schedule="constant", method="lion",
                    aggregate=aggregate, momentum=b1, momentum2=b2, weight_decay=lam, iters=iters, eval_every=1)
    x, m = 0.3, np.zeros(M)
    for _ in range(iters):
        g = np.array([6.0 * (x + 1.0) if w % 3 == 2 else x - 1.0 for w in range(M)])
        delta = np.sign(b1 * m + (1 - b1) * g)
        m = b2 * m + (1 - b2) * g
        x = x - lr * ((np.sign(delta.sum()) if aggregate == "majority" else delta.mean()) + lam * x)
    doc = r.to_dict()
    assert doc["x_final"][0] == pytest.approx(x, rel=1e-13, abs=1e-15)
    assert doc["final"]["bits_up"] == iters * M  # one bit per worker and coordinate


@pytest.mark.parametrize("method", ["ef21", "topk-ef"])
def test_ef21_and_top_k_with_ef_leave_the_sign_trap(method):
    stuck = run_engine(problem="sign-trap", method="signsgd", workers=1, lr=0.05, iters=3000, sign_zero="zero",
                       tie="zero")
    assert stuck.x.sum() == pytest.approx(2.0, abs=1e-9)
    out = run_engine(problem="sign-trap", method=method, workers=1, lr=0.05, iters=3000, compressor="top-k:1")
    assert abs(out.x.sum() - 2.0) > 0.5
    assert out.history[-1, 1] < 1e-3 * stuck.history[-1, 1]


def robust(spec, msg, agg):
    stage = stages.parse_aggregate(spec)
    stage_kernels.stage_function(stage.module, "robust", False)(msg, agg, stage.param_array())


def omniscient(spec, B, msg):
    stage = stages.parse_attack(spec)
    stage_kernels.stage_function(stage.module, "rows", False)(msg, B, stage.param_array())


def test_median_and_trimmed_mean_exact_on_small_inputs():
    msg = np.array([[1.0, -5.0], [7.0, 2.0], [3.0, 0.0], [100.0, 1.0], [-2.0, 4.0]])
    agg = np.zeros(2)
    robust("median", msg, agg)
    assert agg.tolist() == [3.0, 1.0]
    robust("median", msg[:4], agg)
    assert agg.tolist() == [5.0, 0.5]
    robust("trimmed:0.2", msg, agg)  # drop 1 each end
    assert agg.tolist() == [11 / 3, 1.0]
    robust("trimmed:0", msg, agg)
    assert agg.tolist() == pytest.approx([109 / 5, 2 / 5])


def test_alie_and_ipm_move_the_aggregate_as_defined():
    honest = np.array([[1.0, 4.0], [2.0, 4.0], [3.0, 10.0]])
    mu, sd = honest.mean(axis=0), honest.std(axis=0)
    for attack, value in [("alie:1.5", mu - 1.5 * sd), ("ipm:0.5", -0.5 * mu)]:
        msg = np.vstack([np.zeros((2, 2)), honest])
        omniscient(attack, 2, msg)
        np.testing.assert_allclose(msg[:2], [value, value], rtol=1e-15)
        np.testing.assert_allclose(msg[2:], honest)
        # the mean moves from mu to (3 mu + 2 value) / 5; IPM with eps > 0 flips its inner product with mu
        mean = msg.mean(axis=0)
        np.testing.assert_allclose(mean, (3 * mu + 2 * value) / 5)
    msg = np.vstack([np.zeros((3, 2)), honest])
    omniscient("ipm:2", 3, msg)
    assert msg.mean(axis=0) @ mu < 0


def test_unknown_codes_are_errors_not_fallthrough():
    """The kernels inside the parallel worker loop cannot raise (a raise would make Numba run the loop serially):
    an unknown sign(0) code writes NaN there, and the loop checks its codes before it starts."""
    out = np.zeros(3)
    gen = np.random.default_rng(0)
    out, _ = kernel("sign", np.zeros(3), gen, 9)
    assert np.isnan(out).all()
    majority = registry.parse("aggregation", "majority")
    with pytest.raises(ValueError, match="tie"):
        stage_kernels.stage_function(majority.module, "finish", False)(np.zeros(3), 2, majority.param_array(), 9, gen)
    good = dict(sign_zero=0, tie=0)
    loop.check_settings(**good)
    for name, word in [("sign_zero", "sign-zero"), ("tie", "tie")]:
        with pytest.raises(ValueError, match=word):
            loop.check_settings(**{**good, name: 99})


def test_an_unknown_code_stops_the_run_before_the_loop():
    for index in (loop.I_NOISE, loop.I_PROBLEM, loop.I_SIGN_ZERO, loop.I_TIE, loop.I_CODE_COMPRESSOR,
                  loop.I_CODE_AGGREGATION):
        engine, *_ = make_engine(problem="quadratic", dim=3, iters=2)
        engine.icfg[index] = 99
        with pytest.raises(ValueError, match="unknown"):
            engine.advance(1)


def test_parse_stage_specs():
    top = stages.parse_compressor("top-k", 25)
    assert (top.name, top.params, top.spec) == ("top-k", (3.0,), "top-k:3")
    assert stages.parse_compressor("qsgd").spec == "qsgd:4"
    assert stages.parse_aggregate("trimmed").params == (0.1,)
    assert stages.parse_attack("alie:2").params == (2.0,)
    for spec in ("sign:3", "sign:", "qsgd:1e160", "qsgd:2.5", "qsgd:0", "qsgd:4:4", "qsgd:nan", "zip"):
        with pytest.raises(InputError, match="--compressor") as e:
            stages.parse_compressor(spec)
        assert spec in str(e.value)


def test_written_out_sorts_against_python_sorted():
    rng = np.random.default_rng(0)
    for _ in range(300):
        d = int(rng.integers(1, 30))
        k = int(rng.integers(1, d + 1))
        v = rng.integers(-3, 4, size=d).astype(float)  # many ties in |v|
        heap = np.full(d, -1, dtype=np.int64)
        stage_kernels._helper(top_k_order)(v, k, heap)
        assert list(heap[:k]) == sorted(range(d), key=lambda i: (-abs(v[i]), i))[:k]
        a = rng.standard_normal(int(rng.integers(0, 20)))
        b = a.copy()
        stage_kernels._helper(sort_in_place)(b)
        assert b.tolist() == sorted(a.tolist())
