"""The data problems' exact local gradient (``--batch-size full``, docs/theory.md §5) and the label-flip attack
(docs/theory.md §8.5), each against oracles written here from the formulas: the shard's gradient in NumPy, central
differences of the shard's loss, gradient descent replayed over the shards, and gradients on labels flipped by
hand."""

import numpy as np
import pytest
from scipy.optimize import approx_fprime
from scipy.special import expit

from signsim import problems
from signsim.data.splits import SHARED
from signsim.engine import loop
from signsim.engine.driver import simulate
from signsim.engine.reference import ReferenceRun
from signsim.interface import config
from signsim.problems import glm, mlp
from signsim.problems.finite_sum import with_flipped_labels
from signsim.problems.sampling import FULL_BATCH, P_NTEST, P_NTRAIN

from ..conftest import make_engine
from ..hostile.test_hostile_classes import one_line_error


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """30 samples, 4 features, three classes (0, 1, 2)."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(30, 4))
    y = np.digitize(X @ rng.normal(size=4) + 0.3 * rng.normal(size=30), [-0.5, 0.5]).astype(float)
    path = tmp_path_factory.mktemp("data") / "three.npz"
    np.savez(path, X=X, y=y)
    return str(path)


PROBLEMS = {
    "logistic": {"problem": "logistic", "positive_class": 1.0, "l2": 0.1},
    "least-squares": {"problem": "least-squares", "l2": 0.05},
    "mlp": {"problem": "mlp", "hidden": 3, "activation": "tanh", "l2": 0.01},
}


def build(data, **options):
    return problems.build(config.resolve({"data": data, **options}))


def rows_of(p, m: int) -> np.ndarray:
    """Worker m's rows: all the training rows under ``shared``, its shard otherwise."""
    s = p.finite_sum.split
    g = 0 if s.mode == SHARED else m
    return s.idx[s.ptr[g]: s.ptr[g + 1]]


def shard_loss(p, x, rows, labels=None) -> float:
    """f_m(x) = (1/n_m) sum_{j in rows} f_j(x), from the problem's NumPy loss on a data set of those rows alone."""
    pi = p.pi.copy()
    pi[P_NTRAIN], pi[P_NTEST] = len(rows), 0
    b = p.b[rows] if labels is None else np.asarray(labels, dtype=float)
    loss_ref = mlp.loss_ref if p.name == "mlp" else glm.loss_ref
    return loss_ref(x, p.pf, pi, p.A[rows], b)


def glm_shard_grad(p, x, rows, labels=None) -> np.ndarray:
    """grad f_m(x) = (1/n_m) sum_j phi'(a_j^T x, y_j) a_j + lam x, written from the formulas of docs/theory.md §5."""
    A = p.A[rows]
    y = p.b[rows] if labels is None else np.asarray(labels, dtype=float)
    m = A @ x
    c = -y * expit(-y * m) if p.name == "logistic" else m - y
    return A.T @ c / len(rows) + p.pf[0] * x


def kernel_oracle(p, x, m, gen=None, tau=FULL_BATCH) -> np.ndarray:
    out = np.zeros(p.dim)
    k = mlp.oracle if p.name == "mlp" else glm.oracle
    k(x, np.int64(m), gen or np.random.default_rng(0), np.int64(tau), p.pf, p.pi, p.A, p.b, p.ptr, p.idx, out)
    return out


# --- task 1: the exact local gradient --------------------------------------------------------------------------


@pytest.mark.parametrize("split", ["shared", "iid", "label-skew:0.5"])
@pytest.mark.parametrize("name", list(PROBLEMS))
def test_the_full_batch_oracle_is_the_gradient_of_the_workers_local_objective(data, name, split):
    """Every worker's full-batch oracle against the NumPy gradient of its shard (GLMs: the formula; the MLP:
    backpropagation, row by row) and central differences of its shard's loss; it draws nothing."""
    p = build(data, workers=3, split=split, **PROBLEMS[name])
    rng = np.random.default_rng(3)
    for m in range(3):
        x = 0.5 * rng.normal(size=p.dim)
        rows = rows_of(p, m)
        gen = np.random.default_rng(5)
        before = gen.bit_generator.state
        g = kernel_oracle(p, x, m, gen)
        assert gen.bit_generator.state == before  # no draw
        want = (glm_shard_grad(p, x, rows) if name != "mlp"
                else p.finite_sum.per_sample_grads(x, rows).mean(axis=0))
        np.testing.assert_allclose(g, want, rtol=1e-11, atol=1e-13)
        np.testing.assert_allclose(g, p.oracle_ref(x, m, None, "full"), rtol=1e-11, atol=1e-13)
        fd = approx_fprime(x, lambda w, rows=rows: shard_loss(p, w, rows), 1e-6)
        np.testing.assert_allclose(g, fd, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("split", ["iid", "sorted", "label-skew:0.5", "power-law:1"])
def test_local_objectives_of_a_partition_average_to_f(data, split):
    """For a partition, sum_m (n_m / n) f_m = f and the same for the gradients; with equal shards (iid, M | n) the
    plain mean over the workers is f. Under ``shared`` every worker's f_m is f."""
    p = build(data, workers=4, split=split, test_fraction=0.2, **PROBLEMS["logistic"])
    n = p.finite_sum.n
    x = np.random.default_rng(4).normal(size=p.dim)
    sizes = np.array([len(rows_of(p, m)) for m in range(4)])
    assert sizes.sum() == n and np.array_equal(np.sort(np.concatenate([rows_of(p, m) for m in range(4)])),
                                               np.arange(n))
    grads = np.array([kernel_oracle(p, x, m) for m in range(4)])
    losses = np.array([shard_loss(p, x, rows_of(p, m)) for m in range(4)])
    assert sizes @ losses / n == pytest.approx(p.loss_ref(x), rel=1e-12)
    np.testing.assert_allclose(sizes @ grads / n, p.grad_ref(x), rtol=1e-11, atol=1e-13)
    equal = build(data, workers=4, split="iid", test_fraction=0.2, **PROBLEMS["logistic"])  # 24 rows: 6 each
    assert {len(rows_of(equal, m)) for m in range(4)} == {6}
    np.testing.assert_allclose(np.mean([kernel_oracle(equal, x, m) for m in range(4)], axis=0), equal.grad_ref(x),
                               rtol=1e-11, atol=1e-13)
    shared = build(data, workers=4, **PROBLEMS["logistic"])
    for m in range(4):
        np.testing.assert_allclose(kernel_oracle(shared, x, m), shared.grad_ref(x), rtol=1e-11, atol=1e-13)


ALLOCATIONS = """
import sys
import numpy as np
from numba import njit
from numba.core.runtime import rtsys
from signsim import problems
from signsim.interface import config
from signsim.problems import glm, mlp

@njit
def glm_calls(n, x, worker, gen, tau, pf, pi, A, b, ptr, idx, out):
    for _ in range(n):
        glm.oracle(x, worker, gen, tau, pf, pi, A, b, ptr, idx, out)


@njit
def mlp_calls(n, x, worker, gen, tau, pf, pi, A, b, ptr, idx, out):
    for _ in range(n):
        mlp.oracle(x, worker, gen, tau, pf, pi, A, b, ptr, idx, out)


def allocations(k, n, args):
    before = rtsys.get_allocation_stats().alloc
    k(np.int64(n), *args)
    return rtsys.get_allocation_stats().alloc - before


counts = []
for name, opts in (("logistic", {"positive_class": 1.0}), ("mlp", {"hidden": 3})):
    p = problems.build(config.resolve({"problem": name, "data": sys.argv[1], "workers": 3, "split": "iid", **opts}))
    k = glm_calls if name == "logistic" else mlp_calls
    out, gen = np.zeros(p.dim), np.random.default_rng(0)
    for tau in (0, 4):  # the full batch, a minibatch
        args = (np.zeros(p.dim), np.int64(1), gen, np.int64(tau), p.pf, p.pi, p.A, p.b, p.ptr, p.idx, out)
        k(np.int64(1), *args)  # compiled, and Numba's runtime (with its counters) started
        # per call, without the arguments' unboxing: 11 calls from compiled code less one
        counts.append((allocations(k, 11, args) - allocations(k, 1, args)) // 10)
print(counts)
"""


@pytest.mark.slow  # compiles its two callers in a process of its own (5 s)
def test_the_full_batch_oracle_allocates_what_the_minibatch_one_does(data):
    """On a worker's path: the GLM's oracle allocates nothing, full batch or minibatch; the MLP's its five scratch
    vectors once a call, whatever the batch (Numba's allocation counter, in a process of its own)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_NRT_STATS": "1"}
    r = subprocess.run([sys.executable, "-c", ALLOCATIONS, data], capture_output=True, text=True, env=env,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split()[-4:] == ["[0,", "0,", "5,", "5]"], r.stdout


def gd_replay(p, lr: float, iters: int, workers: int, local_steps: int = 1) -> np.ndarray:
    """Gradient descent with each worker's exact local gradient, written here: H local steps y <- y - lr grad f_m(y)
    from x, u_m = sum of the H gradients, x <- x - lr (1/M) sum_m u_m."""
    x = p.x0.astype(float).copy()
    for _ in range(iters):
        us = []
        for m in range(workers):
            y, u = x.copy(), np.zeros_like(x)
            for _ in range(local_steps):
                g = glm_shard_grad(p, y, rows_of(p, m))
                u += g
                y -= lr * g
            us.append(u)
        x = x - lr * np.mean(us, axis=0)
    return x


@pytest.mark.slow  # the GLMs' loop for sgd (8 CPU-s to compile)
@pytest.mark.parametrize(("split", "local_steps"), [("iid", 1), ("label-skew:0.5", 2), ("shared", 1)])
def test_a_full_batch_run_is_gradient_descent_over_the_shards(data, split, local_steps):
    opts = dict(data=data, method="sgd", workers=3, split=split, batch_size="full", lr=0.3, iters=4,
                local_steps=local_steps, **PROBLEMS["logistic"])
    engine, problem, *_ = make_engine(**opts)
    simulate(engine)
    np.testing.assert_allclose(engine.x, gd_replay(problem, 0.3, 4, 3, local_steps), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("opts", [
    # the composition test_rounds.py compiles (signSGD on the GLMs): fast
    dict(problem="logistic", positive_class=1.0, method="signsgd", workers=4, split="label-skew:0.5",
         noise="gaussian:0.3", clients_per_round=2, local_steps=2),
    pytest.param(dict(problem="logistic", positive_class=1.0, method="sgd", workers=3, split="iid",
                      noise="student-t:3:0.3", clients_per_round=2), marks=pytest.mark.slow),
    pytest.param(dict(problem="mlp", hidden=3, method="sgd", workers=3, split="label-skew:0.5", noise="laplace:0.2",
                      local_steps=2), marks=pytest.mark.slow),
], ids=["signsgd-logistic", "sgd-logistic", "sgd-mlp"])
def test_a_full_batch_run_with_noise_and_rounds_equals_the_numpy_replay(data, opts):
    """Sampled participants, local steps and one draw of the additive noise per gradient, as the replay takes them."""
    engine, problem, model, params, settings, cfg = make_engine(data=data, iters=3, batch_size="full", lr=0.2,
                                                                 **opts)
    simulate(engine)
    ref = ReferenceRun(problem, model, params, settings, cfg.workers, cfg.seed)
    for _ in range(3):
        ref.step()
    np.testing.assert_allclose(engine.x, ref.x, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("method", ["signsgd", pytest.param("sgd", marks=pytest.mark.slow),
                                    pytest.param("ef21", marks=pytest.mark.slow)])
def test_without_noise_a_full_batch_run_does_not_depend_on_the_seed(data, method):
    """No held-out split and a split that draws nothing: the seed reaches nothing (same x, bit for bit)."""
    opts = dict(data=data, method=method, workers=3, split="sorted", batch_size="full", test_fraction=0.0, iters=6,
                lr=0.2, **PROBLEMS["logistic"])
    a, *_ = make_engine(seed=0, **opts)
    b, *_ = make_engine(seed=7, **opts)
    simulate(a)
    simulate(b)
    assert np.array_equal(a.x, b.x) and not np.array_equal(a.x, a.problem.x0)


def test_check_spb_at_full_batch_is_closed_form_from_the_local_gradients(data):
    """Each worker's message is sign(grad f_m + xi), one Gaussian draw: P(+) = Phi(grad f_m / sigma) per worker;
    the Monte Carlo estimator over the same oracle agrees."""
    from scipy.stats import norm

    import signsim

    opts = dict(problem="logistic", data=data, positive_class=1.0, workers=3, split="iid", batch_size="full",
                noise="gaussian:0.2", sign_zero="plus")
    doc = signsim.check_spb(**opts)
    assert doc["method_of_estimate"] == "closed-form" and doc["sampling"]["scheme"] == "full"
    assert doc["tau"] == 1 and doc["sampling"]["distinct_oracles"] == 3
    p = build(data, problem="logistic", workers=3, split="iid", positive_class=1.0)
    x = p.x0
    g = np.asarray(doc["grad"], dtype=float)
    agree = np.mean([norm.cdf(np.sign(g) * kernel_oracle(p, x, m) / 0.2) for m in range(3)], axis=0)
    np.testing.assert_allclose(np.asarray(doc["rho"], dtype=float), agree, rtol=1e-10, atol=1e-12)


@pytest.mark.slow  # the Monte Carlo kernel of the GLMs
def test_check_spb_at_full_batch_by_monte_carlo_agrees_with_the_closed_form(data):
    import signsim

    opts = dict(problem="logistic", data=data, positive_class=1.0, workers=3, split="iid", batch_size="full",
                noise="gaussian:0.2", sign_zero="plus")
    exact = np.asarray(signsim.check_spb(**opts)["rho"], dtype=float)
    mc = signsim.check_spb(**opts, estimator="monte-carlo", samples=4000)
    assert mc["method_of_estimate"] == "monte-carlo" and mc["tau"] == 1
    assert np.max(np.abs(np.asarray(mc["rho"], dtype=float) - exact)) < 0.04  # 12000 draws: sd <= 0.005


@pytest.mark.parametrize(("args", "words"), [
    (("--problem", "rosenbrock", "--batch-size", "full"), ("--batch-size full", "data problems")),
    (("--problem", "logistic", "--split", "split-batch", "--batch-size", "full"), ("--batch-size full", "split-batch")),
    (("--problem", "logistic", "--batch-size", "fill"), ("--batch-size 'fill'", "or 'full'", "did you mean 'full'")),
])
def test_full_batch_where_it_means_nothing_exits_2_in_one_line(cli, args, words):
    one_line_error(cli("run", *args, "--iters", "2", "--quiet"), *words)


def test_a_config_file_takes_batch_size_full_and_the_results_record_it(cli, tmp_path, data):
    path = tmp_path / "full.toml"
    path.write_text(f'problem = "logistic"\npositive-class = 1.0\ndata = "{data}"\nbatch-size = "full"\nworkers = 2\n'
                    'split = "iid"\nmethod = "signsgd"\niters = 2\n')
    r = cli("run", "--config", str(path), "--json")
    assert r.code == 0, r.err
    assert r.json()["config"]["batch_size"] == "full"


# --- task 2: the label-flip attack ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["logistic", "mlp"])
def test_a_byzantine_workers_gradient_is_the_gradient_on_flipped_labels(data, name):
    """Worker 0 of 3 (Byzantine) reads y -> -y (logistic) or y -> C - 1 - y (the MLP's 3 classes), worker 1 its own
    labels; the logistic one against the formula with -y written here, both against central differences."""
    honest = build(data, workers=3, split="iid", **PROBLEMS[name])
    p = with_flipped_labels(honest, 1)
    x = 0.4 * np.random.default_rng(8).normal(size=p.dim)
    rows = rows_of(p, 0)
    y = honest.b[rows]
    flipped = -y if name == "logistic" else 2.0 - y
    assert set(np.unique(honest.b)) == ({-1.0, 1.0} if name == "logistic" else {0.0, 1.0, 2.0})
    g = kernel_oracle(p, x, 0)
    if name == "logistic":  # phi'(m, -y) = y sigma(y m)
        m = p.A[rows] @ x
        want = p.A[rows].T @ (y * expit(y * m)) / len(rows) + p.pf[0] * x
        np.testing.assert_allclose(g, want, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(g, approx_fprime(x, lambda w: shard_loss(p, w, rows, flipped), 1e-6), rtol=1e-4,
                               atol=1e-6)
    np.testing.assert_allclose(kernel_oracle(p, x, 1), kernel_oracle(honest, x, 1), rtol=0, atol=0)
    # a minibatch draws the same rows, read with flipped labels
    g_mini = kernel_oracle(p, x, 0, np.random.default_rng(2), 5)
    drawn = p.finite_sum.split.idx[np.random.default_rng(2).integers(0, len(rows), 5) + p.finite_sum.split.ptr[0]]
    flip = {j: f for j, f in zip(rows, flipped, strict=True)}
    want = p.finite_sum.per_sample_grads(x, drawn, [flip[j] for j in drawn]).mean(axis=0)
    np.testing.assert_allclose(g_mini, want, rtol=1e-11, atol=1e-13)
    # the evaluation of f reads the true labels
    assert np.array_equal(p.b[: p.A.shape[0]], honest.b)


def hand_flipped(p, byzantine: int):
    """A copy of ``p`` whose Byzantine workers' shard rows carry flipped labels in b itself (a partition: no honest
    worker reads them), for a replay without the attack: -y for logistic's +-1, 2 - y for the three classes."""
    from dataclasses import replace

    b = p.b.copy()
    for m in range(byzantine):
        rows = rows_of(p, m)
        b[rows] = -b[rows] if p.name == "logistic" else 2.0 - b[rows]
    q = replace(p, b=b)
    fs = p.finite_sum
    pf, pi, A = p.pf, p.pi, p.A
    grads = (lambda x, r: mlp.per_sample_grads_ref(x, pf, pi, A, b, r)) if p.name == "mlp" else \
        (lambda x, r: glm.per_sample_grads_ref(x, pf, pi, A, b, r))
    from signsim.problems.finite_sum import oracle_ref_from

    return replace(q, oracle_ref=oracle_ref_from(grads, fs.split, p.dim))


@pytest.mark.slow  # each composes the attack into a loop of its own (8 CPU-s to compile)
@pytest.mark.parametrize(("name", "batch_size", "method"), [("logistic", 2, "signum"), ("mlp", "full", "sgd"),
                                                            ("logistic", "full", "ef21")])
def test_a_label_flip_run_equals_a_replay_with_the_labels_flipped_by_hand(data, name, batch_size, method):
    """Byzantine workers 0 and 1 of 4 on iid shards: the run with --attack label-flip, and the NumPy replay of the
    same run without an attack on data whose shard labels were flipped by hand, give the same iterates."""
    opts = dict(data=data, method=method, workers=4, split="iid", batch_size=batch_size, lr=0.1, iters=4,
                **PROBLEMS[name])
    engine, problem, model, params, settings, cfg = make_engine(byzantine=2, attack="label-flip", **opts)
    simulate(engine)
    _, _, _, _, clean, _ = make_engine(**opts)
    ref = ReferenceRun(hand_flipped(problem, 2), model, params, clean, cfg.workers, cfg.seed)
    for _ in range(4):
        ref.step()
    np.testing.assert_allclose(engine.x, ref.x, rtol=1e-11, atol=1e-13)
    honest_run, *_ = make_engine(**opts)
    simulate(honest_run)
    assert not np.allclose(engine.x, honest_run.x)  # the attack moved the run


@pytest.mark.slow  # the attack composed into the GLMs' loop for sgd (8 CPU-s to compile)
def test_under_shared_data_only_the_byzantine_workers_read_flipped_labels(data):
    """``shared``: every worker reads every row, so the labels cannot be flipped in the data itself. The run is gradient
    descent whose Byzantine worker takes the gradient of f on flipped labels, written here."""
    opts = dict(data=data, method="sgd", workers=3, batch_size="full", lr=0.3, iters=3, **PROBLEMS["logistic"])
    engine, problem, *_ = make_engine(byzantine=1, attack="label-flip", **opts)
    simulate(engine)
    n = problem.finite_sum.n
    rows = np.arange(n)
    x = problem.x0.astype(float).copy()
    for _ in range(3):
        clean = glm_shard_grad(problem, x, rows)
        bad = glm_shard_grad(problem, x, rows, -problem.b[:n])
        x = x - 0.3 * (bad + 2 * clean) / 3
    np.testing.assert_allclose(engine.x, x, rtol=1e-12, atol=1e-14)
    final = engine.history()[-1]  # f on the true labels
    assert final[loop.H_ITER] == 3 and final[loop.H_LOSS] == pytest.approx(problem.loss_ref(engine.x), rel=1e-12)


@pytest.mark.parametrize(("args", "words"), [
    (("--problem", "quadratic"), ("--attack label-flip", "quadratic has no labels")),
    (("--problem", "least-squares"), ("--attack label-flip", "least-squares fits real-valued targets")),
])
def test_label_flip_without_class_labels_exits_2_in_one_line(cli, args, words):
    one_line_error(cli("run", *args, "--byzantine", "1", "--attack", "label-flip", "--iters", "2", "--quiet"),
                   *words)


def test_label_flip_without_byzantine_workers_exits_2_in_one_line(cli):
    """As every attack: with f = 0 it has no effect (a sweep may still pair it with byzantine = 0 as its baseline)."""
    one_line_error(cli("run", "--problem", "logistic", "--attack", "label-flip", "--iters", "2", "--quiet"),
                   "--attack label-flip", "--byzantine is 0")


def test_label_flip_is_read_from_the_attack_kinds_setup_flag_not_its_name():
    """The data setup asks ``kinds.setup_flag("LABELS", module)``: the flag is in the table of kinds, the built-in
    label-flip declares it, no other built-in attack does, and any module that declares it (a plugin) is read alike."""
    import types

    from signsim.stages import kinds, registry

    assert kinds.BY_NAME["attack"].setup_flags == {"LABELS": "LABELS"}
    assert kinds.SETUP_FLAGS["LABELS"][0].name == "attack"
    flags = {name: kinds.setup_flag("LABELS", mod) for name, mod in registry.builtin("attack").items()}
    assert flags == {name: name == "label-flip" for name in flags}
    assert kinds.setup_flag("LABELS", types.SimpleNamespace(NAME="anything", LABELS=True))
    assert "LABELS" not in kinds.FLAGS  # the loop never reads it


# --- MARINA on data, as its paper states it (exact local gradients) ----------------------------------------------


@pytest.mark.slow  # MARINA composed into the GLMs' loop (8 CPU-s to compile)
def test_marina_at_full_batch_is_algorithm_1_with_the_shards_gradients(data):
    """MARINA (theory.md §8.10) on logistic regression with --batch-size full: the engine against Gorbunov et al.'s
    Algorithm 1 written out (tests/stages/test_marina.py) with each worker's gradient the formula of its shard."""
    from ..stages.test_marina import marina_written_out

    K, M, p, gamma = 12, 3, 0.3, 0.2
    engine, problem, *_ = make_engine(data=data, iters=K, eval_every=K, workers=M, split="iid", batch_size="full",
                                      method="marina", compressor="top-k:2", grad_estimator=f"marina:{p}", lr=gamma,
                                      seed=7, **PROBLEMS["logistic"])
    simulate(engine)
    grads = [lambda x, m=m: glm_shard_grad(problem, x, rows_of(problem, m)) for m in range(M)]
    x, up, down = marina_written_out(grads, problem.x0.astype(float), gamma, p, K, 2, 7, problem.dim)
    np.testing.assert_allclose(engine.x, x, rtol=1e-12, atol=1e-14)
    assert (engine.tally[loop.T_UP], engine.tally[loop.T_DOWN]) == (up, down)


def test_marina_takes_a_data_problem_at_full_batch_and_refuses_its_minibatches(data):
    """The check before a run (``build.prepare``, nothing compiled): a minibatch is not an exact local gradient, the
    full batch is."""
    from signsim.engine.build import prepare
    from signsim.errors import InputError

    opts = dict(data=data, workers=3, split="iid", method="marina", noise="none", **PROBLEMS["logistic"])
    with pytest.raises(InputError, match=r"exact local gradient.*--batch-size full"):
        prepare(config.resolve({**opts, "batch_size": 4}))
    prepare(config.resolve({**opts, "batch_size": "full"}))
