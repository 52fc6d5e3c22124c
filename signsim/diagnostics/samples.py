"""Diagnostics of per-sample gradients given by the user: an n x d array G whose row j is grad f_j at the
user's point (from their own model), or an iterable of row blocks so that G never has to be in memory.

A thin layer over the finite-sum estimators: the true gradient is g = (1/n) sum_j G_j; with minibatch 1 and
uniform sampling rho_i is exact (docs/theory.md §1): the fraction of rows whose coordinate i has the sign of
g_i, a zero counted by the sign(0) policy (random: one half, its expectation; plus: as +1; zero: a failure),
as ``signsim.diagnostics.kernels.exact_counts`` counts for the built-in finite sums. The verdict, rho-norms,
the majority-vote rho_M-norm and the sufficient conditions are those of ``signsim.diagnostics.spb``; the
diversity quantities those of ``signsim.diagnostics.diversity.from_sums`` (docs/theory.md §6). One pass
over G for the exact quantities, O(d) memory beyond one block.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from signsim.errors import InputError

#: rows per block when walking through an array (or a memory map): about this many bytes of float64
BLOCK_BYTES = 32 * 2**20
MC_CHUNK = 256  # minibatches drawn at once by the Monte Carlo estimator


def _check_block(b: Any, d: int | None, where: str, first_row: int) -> np.ndarray:
    if hasattr(b, "toarray") and hasattr(b, "nnz"):  # a SciPy sparse block
        b = b.toarray()
    try:
        a = np.asarray(b)
    except (TypeError, ValueError) as e:
        raise InputError(f"{where}: a block is not a numeric array ({' '.join(str(e).split())})") from None
    if not (np.issubdtype(a.dtype, np.number) or a.dtype == bool) or np.iscomplexobj(a):
        raise InputError(f"{where}: expected real numbers, got dtype {a.dtype}")
    if a.ndim == 1:
        a = a.reshape(1, -1)
    if a.ndim != 2:
        raise InputError(f"{where}: expected rows of per-sample gradients (n x d), got a block of shape {a.shape}")
    if d is not None and a.shape[1] != d:
        raise InputError(f"{where}: blocks of different widths ({d} and {a.shape[1]} columns)")
    a = np.asarray(a, dtype=np.float64)
    finite = np.isfinite(a).all(axis=1)
    if not finite.all():
        raise InputError(f"{where}: non-finite value in sample {first_row + int(np.argmin(finite))}")
    return a


def blocks(G: Any, where: str = "G") -> Iterator[np.ndarray]:
    """Checked float64 row blocks of G (an n x d array, memory map or SciPy sparse matrix, or an iterable of
    k x d blocks or of rows)."""
    if isinstance(G, np.ndarray) or (hasattr(G, "shape") and hasattr(G, "ndim") and hasattr(G, "__getitem__")
                                     and not hasattr(G, "__next__")):
        if G.ndim != 2:
            raise InputError(f"{where}: expected an n x d array of per-sample gradients, got shape {tuple(G.shape)}")
        n, d = G.shape
        if n == 0 or d == 0:
            raise InputError(f"{where}: no gradients (shape {tuple(G.shape)})")
        step = max(1, BLOCK_BYTES // (8 * d))
        for lo in range(0, n, step):
            yield _check_block(G[lo:lo + step], d, where, lo)
        return
    try:
        it = iter(G)
    except TypeError:
        raise InputError(f"{where}: expected an n x d array or an iterable of row blocks, got "
                         f"{type(G).__name__}") from None
    d = None
    rows = 0
    for b in it:
        a = _check_block(b, d, where, rows)
        d = a.shape[1]
        rows += a.shape[0]
        yield a
    if rows == 0:
        raise InputError(f"{where}: no gradients (an empty iterable)")


@dataclass
class SampleSums:
    """Per coordinate over the n rows: sum, sum of squares, and how many are > 0, < 0 and = 0."""

    n: int
    s1: np.ndarray
    s2: np.ndarray
    pos: np.ndarray
    neg: np.ndarray
    zero: np.ndarray

    @property
    def grad(self) -> np.ndarray:
        return self.s1 / self.n

    @property
    def sq_norms(self) -> float:
        """sum_j ||G_j||^2."""
        return float(self.s2.sum())


def sums(G: Any, where: str = "G") -> SampleSums:
    """One pass over G."""
    acc = None
    n = 0
    for a in blocks(G, where):
        if acc is None:
            d = a.shape[1]
            acc = [np.zeros(d) for _ in range(5)]
        acc[0] += a.sum(axis=0)
        acc[1] += np.einsum("ij,ij->j", a, a)
        acc[2] += (a > 0).sum(axis=0)
        acc[3] += (a < 0).sum(axis=0)
        acc[4] += (a == 0).sum(axis=0)
        n += a.shape[0]
    return SampleSums(n, *acc)


def exact_successes(S: SampleSums, g: np.ndarray, sign_zero: str) -> np.ndarray:
    """Per coordinate, the number of rows whose sign agrees with sign g_i (zeros by the sign(0) policy)."""
    zero_credit = {"random": 0.5 * S.zero, "plus": np.where(g > 0, S.zero, 0.0), "zero": 0.0}[sign_zero]
    return np.where(g > 0, S.pos, np.where(g < 0, S.neg, 0.0)) + np.where(g != 0, zero_credit, 0.0)


def exact_estimate(S: SampleSums, sign_zero: str):
    from signsim.diagnostics.spb import Estimate

    g = S.grad
    nz = g != 0
    rho = np.where(nz, exact_successes(S, g, sign_zero) / S.n, np.nan)
    sigma = np.sqrt(np.maximum(S.s2 / S.n - g**2, 0.0))
    return Estimate("exact", g, rho, rho.copy(), rho.copy(), sigma, 1)


def monte_carlo_estimate(G: np.ndarray, S: SampleSums, tau: int, samples: int, confidence: float,
                         interval_kind: str, sign_zero: str, seed: int):
    """S minibatches of tau rows drawn uniformly with replacement from an array G (as check-spb's Monte Carlo
    estimator draws from a finite sum): successes with Wilson or Clopper-Pearson intervals; sigma_i is the
    per-sample standard deviation (the minibatch's times sqrt(tau))."""
    from signsim.diagnostics.spb import Estimate, interval

    g = S.grad
    nz = g != 0
    rng = np.random.default_rng(seed)
    succ, m1, m2 = np.zeros(g.size), np.zeros(g.size), np.zeros(g.size)
    chunk = max(1, min(MC_CHUNK, BLOCK_BYTES // (8 * tau * g.size)))
    for lo in range(0, samples, chunk):
        k = min(chunk, samples - lo)
        idx = rng.integers(S.n, size=(k, tau))
        order = np.argsort(idx, axis=None)  # sorted reads are kind to memory maps
        rows = np.asarray(G[idx.ravel()[order]], dtype=np.float64)
        back = np.empty_like(order)
        back[order] = np.arange(order.size)
        batch = rows[back].reshape(k, tau, -1).mean(axis=1)
        agree = np.where(batch > 0, g > 0, np.where(batch < 0, g < 0, False)).astype(float)
        zero = batch == 0
        if sign_zero == "plus":
            agree += zero * (g > 0)
        elif sign_zero == "random":
            agree += zero * (rng.random(batch.shape) < 0.5)
        succ += agree.sum(axis=0)
        m1 += batch.sum(axis=0)
        m2 += (batch * batch).sum(axis=0)
    lo_, hi_ = interval(succ, samples, confidence, interval_kind)
    rho = np.where(nz, succ / samples, np.nan)
    var = np.maximum(m2 / samples - (m1 / samples) ** 2, 0.0) * samples / max(samples - 1, 1)
    return Estimate("monte-carlo", g, rho, np.where(nz, lo_, np.nan), np.where(nz, hi_, np.nan),
                    np.sqrt(var * tau), tau, samples, succ)


def _source(G: Any, n: int, d: int) -> dict[str, Any]:
    return {"name": "per-sample gradients", "dim": d, "n_train": n, "f_star": None, "x_star_known": False,
            "heterogeneous": False, "given_as": "array" if hasattr(G, "shape") else "row blocks"}


def spb_document(G: Any, workers: int | None = None, batch_size: int = 1, sign_zero: str = "random",
                 confidence: float = 0.95, interval: str = "wilson", correction: str = "holm",
                 samples: int = 2000, seed: int = 0, top: int = 10, where: str = "G") -> dict[str, Any]:
    """The fields of ``check-spb --json`` for the finite sum whose per-sample gradients are the rows of G."""
    from signsim import __version__
    from signsim.diagnostics import spb
    from signsim.diagnostics.intervals import CORRECTIONS, INTERVALS

    if sign_zero not in ("random", "plus", "zero"):
        raise InputError(f"--sign-zero {sign_zero}: unknown value; choose from random, plus, zero")
    if not 0 < confidence < 1:
        raise InputError(f"--confidence {confidence}: must lie in (0, 1)")
    if interval not in INTERVALS:
        raise InputError(f"--interval {interval}: choose from {', '.join(INTERVALS)}")
    if correction not in CORRECTIONS:
        raise InputError(f"--correction {correction}: choose from {', '.join(CORRECTIONS)}")
    if not 2 <= samples <= 10**9:
        raise InputError(f"--samples {samples}: must lie between 2 and 10^9")
    if not 0 <= top <= 10**6:
        raise InputError(f"--top {top}: must lie between 0 and 10^6")
    if workers is not None and not 1 <= workers <= 2**31 - 1:
        raise InputError(f"--workers {workers}: must be at least 1")
    if batch_size < 1:
        raise InputError(f"--batch-size {batch_size}: must be at least 1")
    if seed < 0:
        raise InputError(f"--seed {seed}: must be >= 0")
    if batch_size > 1 and not hasattr(G, "shape"):
        raise InputError(f"--batch-size {batch_size}: minibatches are drawn at random from G, which needs G as "
                         "an array (or a memory map), not an iterable of blocks")
    S = sums(G, where)
    d = S.s1.size
    if batch_size == 1:
        est = exact_estimate(S, sign_zero)
    else:
        est = monte_carlo_estimate(G, S, batch_size, samples, confidence, interval, sign_zero, seed)
    ver = spb.decide(est, confidence, correction)
    g, rho = est.grad, est.rho
    nz = g != 0
    tested = ver.status[nz]
    cond = spb.sufficient_conditions(g, est.sigma, batch_size, None)
    worst = np.argsort(np.where(nz, rho, np.inf), kind="stable")[: min(top, int(nz.sum()))]
    doc: dict[str, Any] = {
        "signsim_version": __version__,
        "command": "check-spb",
        "source": "samples",
        "options": {"estimator": est.method, "samples": samples if est.method == "monte-carlo" else None,
                    "confidence": confidence, "interval": interval, "correction": correction, "top": top,
                    "sign_zero": sign_zero, "seed": seed},
        "problem": _source(G, S.n, d),
        "point": f"{S.n} given samples",
        "method_of_estimate": est.method,
        "n": S.n,
        "tau": batch_size,
        "samples": est.samples,
        "dim": d,
        "zero_coordinates": int((~nz).sum()),
        "n_holds": int(np.sum(tested == "holds")),
        "n_violated": int(np.sum(tested == "violated")),
        "n_inconclusive": int(np.sum(tested == "inconclusive")),
        "verdict": ver.verdict,
        "rho_min": float(np.min(rho[nz])) if nz.any() else None,
        "rho": rho, "rho_low": est.rho_low, "rho_high": est.rho_high, "grad": g, "sigma": est.sigma,
        "status": ver.status.tolist(),
        "rho_norm": spb.rho_norm(g, rho),
        "rho_norm_low": spb.rho_norm(g, np.where(nz, est.rho_low, 0.5)),
        "rho_norm_high": spb.rho_norm(g, np.where(nz, est.rho_high, 0.5)),
        "l1_norm": float(np.abs(g).sum()),
        "l2_norm": float(np.linalg.norm(g)),
        "l12_norm": spb.l12_norm(g, est.sigma / np.sqrt(batch_size)),
        "sufficient": {k: (v if v is None else np.asarray(v).tolist()) for k, v in cond.items()},
        "worst": [int(i) for i in worst],
    }
    if ver.p_holds is not None:
        doc["p_holds_corrected"], doc["p_violated_corrected"] = ver.p_holds, ver.p_violated
    if workers is not None:
        doc["workers"] = workers
        doc["rho_M_norm"] = spb.rho_M_norm(g, rho, workers)
        doc["rho_M_lower_bound"] = spb.majority_lower_bound(g, rho, workers) if doc["rho_min"] and \
            doc["rho_min"] > 0.5 else None
    return doc


def diversity_document(G: Any, delta: float = 1.0, where: str = "G") -> dict[str, Any]:
    """The fields of ``diversity --json`` (exact estimator) for the finite sum whose per-sample gradients are
    the rows of G: n, delta_S, B_S, B_simple, the largest batch within delta B_S + 1, the speedup table."""
    import math

    from signsim import __version__
    from signsim.commands.diversity import summary
    from signsim.diagnostics.diversity import from_sums

    if not (delta > 0 and math.isfinite(delta)):
        raise InputError(f"--delta {delta}: must be a finite number > 0")
    S = sums(G, where)
    div = from_sums(S.n, S.sq_norms, S.s1)
    return {"signsim_version": __version__, "command": "diversity", "source": "samples",
            "options": {"estimator": "exact", "delta": delta}, "problem": _source(G, S.n, S.s1.size),
            "point": f"{S.n} given samples", "method_of_estimate": "exact", **summary(div, delta)}
