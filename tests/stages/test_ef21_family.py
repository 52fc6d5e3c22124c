"""EF21's family and the method aliases over stages (docs/theory.md §8.2, §8.7, §12): EF21-PP (EF21 with sampled
clients) against the NumPy replay and against the algorithm written out here; EF21-BC and EF21-HB written out for
full-gradient GD on a quadratic; each alias (``diana``, ``ef21-bc``, ``ef21-hb``) equal to the composition it names,
bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import signsim
from signsim.engine.driver import simulate
from signsim.engine.reference import ReferenceRun
from signsim.seeding import participation_stream

from ..conftest import make_engine

QUAD = dict(problem="quadratic", dim=5, kappa=10, noise="none", x0=1.0, sign_zero="plus")
A = np.diag(np.logspace(0.0, 1.0, 5))  # the quadratic's L_i, log-spaced in [1, kappa] (docs/theory.md §5)


def top_k(v: np.ndarray, k: int) -> np.ndarray:
    """The k entries largest in |.|, ties to the lower index."""
    out = np.zeros_like(v)
    keep = sorted(range(v.size), key=lambda i: (-abs(v[i]), i))[:k]
    out[keep] = v[keep]
    return out


def rounds(seed: int, M: int, S: int, iters: int) -> list[list[int]]:
    """Each round's S participants: the first S of a Fisher-Yates shuffle of 0..M-1, position i swapped with
    i + integers(0, M - i), from the server's sampling stream (docs/theory.md §12)."""
    gen = participation_stream(seed)
    out = []
    for _ in range(iters):
        order = list(range(M))
        for i in range(S):
            j = i + int(gen.integers(0, M - i))
            order[i], order[j] = order[j], order[i]
        out.append(sorted(order[:S]))
    return out


def test_ef21_pp_follows_the_algorithm_written_out():
    # Fatkhullin et al. 2021 (arXiv:2110.03294), EF21-PP: the round's participants send c_i = C(grad f(x) - g_i),
    # g_i <- g_i + c_i, the others keep g_i; the server's g <- g + (1/M) sum c_i, x <- x - gamma g
    M, S, iters, lr, k = 6, 2, 30, 0.05, 2
    r = signsim.run(**QUAD, method="ef21", compressor=f"top-k:{k}", workers=M, clients_per_round=S, iters=iters,
                    lr=lr, seed=11)
    x, g_i, g = np.ones(5), np.zeros((M, 5)), np.zeros(5)
    for part in rounds(11, M, S, iters):
        c_sum = np.zeros(5)
        for i in part:
            c = top_k(A @ x - g_i[i], k)
            g_i[i] += c
            c_sum += c
        g = g + c_sum / M
        x = x - lr * g
    np.testing.assert_allclose(g, g_i.mean(axis=0), rtol=1e-12, atol=1e-15)  # g stays the mean of every g_i
    np.testing.assert_allclose(np.asarray(r.to_dict()["x_final"]), x, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("extra", [{}, {"local_steps": 2}])
def test_ef21_pp_matches_the_numpy_replay(extra):
    iters = 8
    engine, problem, model, params, settings, cfg = make_engine(
        iters=iters, eval_every=1, problem="quadratic", dim=6, workers=5, noise="gaussian:1", method="ef21",
        clients_per_round=2, **extra)
    simulate(engine)
    ref = ReferenceRun(problem, model, params, settings, cfg.workers, cfg.seed)
    for _ in range(iters):
        x = ref.step()
    np.testing.assert_allclose(engine.x, x, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(engine.srv, engine.err.mean(axis=0), rtol=1e-12, atol=1e-14)


def test_ef21_bc_and_ef21_hb_follow_their_algorithms_written_out():
    # EF21-BC: the server compresses gamma g - w with top-k (the alias's --down-compressor top-k, whose default k is
    # ceil(d/10) = 1 here), w <- w + c, x <- x - w; EF21-HB: v <- beta v + g, x <- x - gamma v (beta 0.9); both on
    # EF21's g (every worker's gradient is A x here, so one g_i)
    lr, iters, k = 0.02, 40, 2
    for method in ("ef21-bc", "ef21-hb"):
        r = signsim.run(**QUAD, method=method, compressor=f"top-k:{k}", workers=3, iters=iters, lr=lr)
        x, gi, w, v = np.ones(5), np.zeros(5), np.zeros(5), np.zeros(5)
        for _ in range(iters):
            gi = gi + top_k(A @ x - gi, k)
            if method == "ef21-bc":
                w = w + top_k(lr * gi - w, 1)
                x = x - w
            else:
                v = 0.9 * v + gi
                x = x - lr * v
        np.testing.assert_allclose(np.asarray(r.to_dict()["x_final"]), x, rtol=1e-12, atol=1e-15, err_msg=method)


@pytest.mark.parametrize(("method", "composition"), [
    ("diana", dict(method="sgd", compressor="natural", grad_estimator="diana:0.5", lr=1e-3)),
    ("ef21-bc", dict(method="ef21", down_compressor="top-k", down_feedback="ef21")),
    ("ef21-hb", dict(method="ef21", server_opt="fedavgm:0.9", lr=1e-4)),
])
def test_an_alias_is_the_composition_it_names(method, composition):
    common = dict(problem="quadratic", dim=8, noise="gaussian:1", workers=4, iters=30, clients_per_round=3)
    a = signsim.run(**common, method=method).to_dict()
    b = signsim.run(**common, **composition).to_dict()
    assert a["x_final"] == b["x_final"] and a["final"]["bits_up"] == b["final"]["bits_up"]
    assert a["final"]["bits_down"] == b["final"]["bits_down"] and a["stages"] == b["stages"]
