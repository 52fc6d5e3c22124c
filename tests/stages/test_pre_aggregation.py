"""The pre-aggregations (docs/theory.md §8.9): each kernel and its NumPy reference against an oracle written here with
plain loops (messages with ties and a duplicated row), ByzFL's documented examples, a chain in a run against the NumPy
replay (the mean after bucketing, which leaves fewer rows; the median after clipping; an omniscient attack), and bad
chains (one line each)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import signsim
from signsim.engine import stage_kernels
from signsim.engine.driver import simulate
from signsim.engine.reference import ReferenceRun
from signsim.stages import registry

from ..conftest import make_engine


def _norm(row):
    return math.sqrt(sum(x * x for x in row))


def oracle(name: str, param: float, rows: list[list[float]], seed: int) -> list[list[float]]:
    """Each rule from its paper's definition, on lists of floats."""
    n = len(rows)
    if name == "nnm":  # Allouah et al. 2023: the mean of the n - f nearest (itself included; ties: lower index)
        k = n - int(param)
        out = []
        for a in range(n):
            dist = [sum((x - y) ** 2 for x, y in zip(rows[a], rows[b], strict=True)) for b in range(n)]
            near = sorted(range(n), key=lambda b: (dist[b], b))[:k]
            out.append([sum(rows[b][i] for b in near) / k for i in range(len(rows[0]))])
        return out
    if name == "bucketing":  # Karimireddy et al. 2022: shuffled, means of s consecutive
        s = int(param)
        gen = np.random.default_rng(seed)
        order = list(range(n))
        for i in range(n):
            j = i + int(gen.integers(0, n - i))
            order[i], order[j] = order[j], order[i]
        return [[sum(rows[b][i] for b in order[lo:lo + s]) / len(order[lo:lo + s]) for i in range(len(rows[0]))]
                for lo in range(0, n, s)]
    if name == "clip":
        return [[x * min(1.0, param / _norm(r)) if _norm(r) > 0 else x for x in r] for r in rows]
    if name == "arc":  # Allouah et al. 2024: clip the floor(2f(n-f)/n) largest to the next largest norm
        f = int(param)
        k = (2 * f * (n - f)) // n
        by_norm = sorted(range(n), key=lambda a: (_norm(rows[a]), a))
        out = [list(r) for r in rows]
        if k > 0:
            tau = _norm(rows[by_norm[n - k - 1]])
            for a in by_norm[n - k:]:
                if _norm(rows[a]) > tau:
                    out[a] = [x * tau / _norm(rows[a]) for x in rows[a]]
        return out
    raise ValueError(name)


CASES = [("nnm", 1), ("nnm", 2), ("bucketing", 2), ("bucketing", 3), ("clip", 3.0), ("arc", 1), ("arc", 2)]


@pytest.mark.parametrize("n", [7, 8])
@pytest.mark.parametrize(("name", "param"), CASES)
def test_each_kernel_and_reference_follow_the_definition(name, param, n):
    rng = np.random.default_rng(n)
    msgs = rng.integers(-3, 4, size=(n, 5)).astype(float)  # integer entries: tied distances and norms
    msgs[1] = msgs[0]  # a duplicated row
    msgs[-1] *= 10  # one far away
    want = np.array(oracle(name, param, msgs.tolist(), seed=5))
    stage = registry.parse("pre_aggregation", f"{name}:{param:g}")
    kernel = stage_kernels.stage_function(stage.module, "pre", False)
    got = msgs.copy()
    rows = kernel(got, n, stage.param_array(), np.random.default_rng(5))
    assert rows == len(want) == stage.module.rows(n, stage.params)
    np.testing.assert_allclose(got[:rows], want, rtol=1e-13, atol=1e-13)
    ref = stage.module.reference(msgs.copy(), stage.params, np.random.default_rng(5))
    np.testing.assert_allclose(ref, want, rtol=1e-13, atol=1e-13)


def test_byzfls_documented_examples():
    x = np.array([[1.0, 2, 3], [4, 5, 6], [7, 8, 9]])
    nnm = registry.parse("pre_aggregation", "nnm:1").module.reference(x, (1.0,), None)
    np.testing.assert_allclose(nnm, [[2.5, 3.5, 4.5], [2.5, 3.5, 4.5], [5.5, 6.5, 7.5]])
    clip = registry.parse("pre_aggregation", "clip:2").module.reference(x, (2.0,), None)
    np.testing.assert_allclose(clip, [[0.53452248, 1.06904497, 1.60356745], [0.91168461, 1.13960576, 1.36752692],
                                      [1.00514142, 1.14873305, 1.29232469]], rtol=1e-8)
    arc = registry.parse("pre_aggregation", "arc:1").module.reference(x, (1.0,), None)
    np.testing.assert_allclose(arc[:2], x[:2])  # k = floor(2 * 1 * 2 / 3) = 1: only the largest is clipped
    np.testing.assert_allclose(np.linalg.norm(arc[2]), np.linalg.norm(x[1]))


@pytest.mark.parametrize(("chain", "aggregate"), [("nnm:1,bucketing:2", "mean"), ("clip:1,arc:2", "median"),
                                                  ("bucketing:3", "majority")])
def test_a_chain_in_a_run_matches_the_numpy_replay(chain, aggregate):
    iters = 6
    engine, problem, model, params, settings, cfg = make_engine(
        iters=iters, eval_every=1, problem="quadratic", dim=6, workers=9, clients_per_round=7, noise="gaussian:1",
        method="signum" if aggregate == "majority" else "sgd", aggregate=aggregate, byzantine=2, attack="alie",
        pre_aggregate=chain)
    simulate(engine)
    ref = ReferenceRun(problem, model, params, settings, cfg.workers, cfg.seed)
    for _ in range(iters):
        x = ref.step()
    np.testing.assert_allclose(engine.x, x, rtol=1e-12, atol=1e-14)


def test_the_results_record_the_chain_and_none_changes_nothing():
    common = dict(problem="quadratic", dim=6, workers=5, iters=10, noise="gaussian:1", method="sgd")
    plain = signsim.run(**common).to_dict()
    none = signsim.run(**common, pre_aggregate="none").to_dict()
    assert none["x_final"] == plain["x_final"] and none["stages"]["pre_aggregate"] == []
    chained = signsim.run(**common, pre_aggregate="nnm:1,clip").to_dict()
    assert chained["stages"]["pre_aggregate"] == ["nnm:1", "clip:2"]


@pytest.mark.parametrize(("args", "says"), [
    (("--pre-aggregate", "nnn:1"), "did you mean 'nnm'"),
    (("--pre-aggregate", "nnm:1,,clip"), "empty link"),
    (("--pre-aggregate", "clip,clip,clip,clip"), "at most 3"),
    (("--pre-aggregate", "none,clip"), "'none'"),
    (("--pre-aggregate", "nnm:9"), "more than f = 9"),
    (("--pre-aggregate", "bucketing:3", "--aggregate", "krum:1"), "leaves 3 messages"),
    (("--pre-aggregate", "clip:0"), "--pre-aggregate clip:0"),
    (("--pre-aggregate", "clip", "--votes", "binomial", "--method", "signsgd"), "--votes binomial"),
])
def test_a_bad_chain_is_one_line(args, says, cli):
    r = cli("run", "--problem", "quadratic", "--iters", "2", "--workers", "9", *args)
    assert r.code == 2 and says in r.err and len(r.err.strip().splitlines()) == 1, r.err
