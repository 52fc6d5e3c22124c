"""Algorithmic stability of a run, measured on two coupled runs (docs/theory.md §6.1).

Two training sets S and S' differ in one sample: S' is S with training row ``i`` replaced by a held-out row
``j`` (already prepared with the same standardization, so the two sets differ in that row and nothing else).
Both runs use the same configuration and seed, so every worker draws the same minibatch indices, and index i
picks the differing sample at the same position. Along the run, at the same iterations, this module records

    ||w_S - w_S'||_2   and   mean and max over the held-out points z of |f_z(w_S) - f_z(w_S')|,

the empirical counterpart of uniform stability (Hardt, Recht and Singer; used by Yin et al. for mini-batch
SGD), over the held-out rows other than j. ``f_z`` is the loss of one sample with the regularizer, as in the
objective (§5). The per-sample losses are plain NumPy (no kernel), one formula per data problem.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from signsim.errors import InputError


def sample_losses(problem, x: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """f_j(x) for the given rows of the problem's data matrix (training or held-out), in NumPy:
    logistic log(1 + exp(-y a^T x)), least squares (a^T x - y)^2 / 2, MLP cross-entropy; plus (lam/2)||x||^2."""
    from signsim.problems import glm, mlp
    from signsim.problems.sampling import P_FEATURES

    A, b, pi, lam = problem.A, problem.b, problem.pi, float(problem.pf[0])
    a, y = np.asarray(A[rows], dtype=np.float64), b[rows]
    if problem.name in ("logistic", "least-squares"):
        m = a @ x
        data = np.logaddexp(0.0, -y * m) if int(pi[glm.P_KIND]) == glm.LOGISTIC else 0.5 * (m - y) ** 2
    elif problem.name == "mlp":
        p, H, C, act = (int(pi[k]) for k in (P_FEATURES, mlp.P_HIDDEN, mlp.P_CLASSES, mlp.P_ACT))
        W1, b1, W2, b2 = mlp.unpack(x, p, H, C)
        z = a @ W1.T + b1
        h = np.maximum(z, 0.0) if act == mlp.RELU else np.tanh(z)
        logits = h @ W2.T + b2
        top = logits.max(axis=1)
        lse = top + np.log(np.exp(logits - top[:, None]).sum(axis=1))
        data = lse - logits[np.arange(len(rows)), y.astype(int)]
    else:
        raise InputError(f"--problem {problem.name}: the stability experiment needs a data problem "
                         "(logistic, least-squares, mlp)")
    return data + 0.5 * lam * float(x @ x)


@dataclass
class Pair:
    """The two problems of a coupled pair and where they differ."""

    S: object  # ProblemInstance
    S_prime: object
    #: the training row replaced, the held-out row that replaces it, the held-out rows evaluated
    position: int
    replacement: int
    held_out: np.ndarray


def neighbour(problem, position: int, replacement: int | None) -> Pair:
    """S' = S with training row ``position`` replaced by held-out row ``replacement`` (an index among the held-out
    rows), or by an identical copy of itself when ``replacement`` is None (then S' = S, a check of the coupling)."""
    from signsim.problems.sampling import P_NTEST, P_NTRAIN

    n, n_test = int(problem.pi[P_NTRAIN]), int(problem.pi[P_NTEST])
    if not 0 <= position < n:
        raise InputError(f"stability: position {position} is not a training row (0 .. {n - 1})")
    A, b = problem.A.copy(), problem.b.copy()
    if replacement is None:
        held = np.arange(n, n + n_test)
    else:
        if n_test < 2:
            raise InputError("stability: needs at least two held-out samples (one replaces a training sample, the "
                             "others measure the loss difference); raise --test-fraction")
        j = n + replacement
        A[position], b[position] = problem.A[j], problem.b[j]
        held = np.array([r for r in range(n, n + n_test) if r != j])
    fs = problem.finite_sum
    from signsim.problems.finite_sum import FiniteSum

    other = replace(problem, A=A, b=b)
    if fs is not None:  # per-sample access reads the new arrays (the diagnostics are not used here, but stay true)
        other.finite_sum = FiniteSum(fs.n, fs.split, fs.per_sample_grads, fs.per_sample_sq_norms, fs.classes)
    return Pair(problem, other, position, -1 if replacement is None else replacement, held)


def coupled_runs(cfg, pair: Pair, every: int):
    """Run cfg on S and on S' (same seed: the same minibatch indices); return (records, out_S, out_S'), a record
    every ``every`` iterations (and at the end): iter, distance, loss_diff_mean, loss_diff_max."""
    from signsim.engine.build import build
    from signsim.engine.driver import simulate

    snaps: tuple[dict[int, np.ndarray], dict[int, np.ndarray]] = ({}, {})
    outs = []
    for problem, store in ((pair.S, snaps[0]), (pair.S_prime, snaps[1])):
        engine = build(cfg, problem).engine
        out = simulate(engine, None, [(every, lambda k, x, store=store: store.__setitem__(k, x.copy()))])
        if out.status == "interrupted":
            raise KeyboardInterrupt
        store.setdefault(out.iters_done, out.x.copy())
        outs.append(out)
    records = []
    for k in sorted(set(snaps[0]) & set(snaps[1])):
        w, v = snaps[0][k], snaps[1][k]
        diff = np.abs(sample_losses(pair.S, w, pair.held_out) - sample_losses(pair.S, v, pair.held_out))
        records.append({"iter": k, "distance": float(np.linalg.norm(w - v)),
                        "loss_diff_mean": float(diff.mean()), "loss_diff_max": float(diff.max())})
    return records, outs[0], outs[1]
