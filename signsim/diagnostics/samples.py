"""Diagnostics of per-sample gradients given by the user: an n x d array G whose row j is grad f_j at the
user's point (from their own model), or an iterable of row blocks so that G never has to be in memory.

A thin layer over check-spb's estimators (docs/theory.md §9.1-§9.3): the true gradient is
g = (1/n) sum_j G_j and every worker samples the rows uniformly (shared sampling, identical workers). With
minibatch 1 the sign law of g_hat_i is exact: P(agree), P(zero), P(disagree) are the fractions of rows whose
coordinate i has the sign of g_i, is 0, has the other sign; with minibatch tau > 1 (G an array) they are counted
over Monte Carlo minibatches. ``estimators.summarize`` turns the law into the message's under the sign(0)
policy (random: a fair +-1; plus: +1; zero: 0), ``spb.decide`` decides P(agree) > P(disagree) per coordinate,
and ``spb_report.estimate_fields`` / ``workers_fields`` report rho_norm = E<g, sign g_hat> and
rho_M_norm = E<g, vote> from the law of the vote of M workers (``diagnostics.votes``): the same fields and
numbers as ``check-spb --json`` for a finite sum with these per-sample gradients. The diversity quantities
are those of ``signsim.diagnostics.diversity.from_sums`` (docs/theory.md §6). One pass over G for the exact
quantities, O(d) memory beyond one block.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from signsim.data.base import is_real
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
    if not is_real(a.dtype):
        raise InputError(f"{where}: expected real numbers, got dtype {a.dtype}")
    if a.ndim == 1:
        a = a.reshape(1, -1)
    if a.ndim != 2:
        raise InputError(f"{where}: expected rows of per-sample gradients (n x d), got a block of shape {a.shape}")
    if a.shape[1] == 0:
        raise InputError(f"{where}: a block with 0 columns (no coordinates), shape {a.shape}")
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
    """Per coordinate over the n rows: sum, sum of squares (in units of ``unit`` and ``unit``^2, see
    ``signsim.diagnostics.scaling``), and how many are > 0, < 0 and = 0."""

    n: int
    s1: np.ndarray
    s2: np.ndarray
    pos: np.ndarray
    neg: np.ndarray
    zero: np.ndarray
    unit: float = 1.0

    @property
    def grad(self) -> np.ndarray:
        return self.s1 / self.n * self.unit


#: float64 vectors of the dimension d held at once besides the blocks: the five sums of ``sums`` and what the
#: diversity (``DIVERSITY_VECTORS``) or the sign laws, moments and intervals of check-spb (``SPB_VECTORS``)
#: compute from them
DIVERSITY_VECTORS = 8
SPB_VECTORS = 32


def check_memory(G: Any, vectors: int, where: str, batch_size: int = 1) -> None:
    """InputError (the documented estimate line) when ``vectors`` float64 vectors of G's dimension, a few row
    blocks and a minibatch of ``batch_size`` rows cannot fit in memory, before anything is allocated. Only for
    an array (an iterable's blocks are the caller's)."""
    from signsim.resources import require

    if not hasattr(G, "shape") or len(G.shape) != 2:
        return
    d = int(G.shape[1])
    block = max(8 * d, BLOCK_BYTES)
    minibatch = 8 * batch_size * (d + 3) if batch_size > 1 else 0  # the rows of one minibatch and its indices
    require(8 * d * vectors + 3 * block + minibatch,
            f"{where}: the diagnostics of {int(G.shape[0])} x {d} gradients" +
            (f" in minibatches of {batch_size}" if batch_size > 1 else ""),
            "reduce --batch-size" if minibatch > 8 * d * vectors + 3 * block else "use fewer coordinates")


def sums(G: Any, where: str = "G") -> SampleSums:
    """One pass over G (its sums in a power-of-two unit: finite and exact however large or small G's entries)."""
    from signsim.diagnostics.scaling import Units

    acc = None
    n = 0
    units = Units()
    for a in blocks(G, where):
        if acc is None:
            d = a.shape[1]
            acc = [np.zeros(d) for _ in range(5)]
        r = units.fit(max(-float(a.min()), float(a.max())))  # no copy of the block
        if r != 1.0:
            acc[0] *= r
            acc[1] *= r * r
        if units.unit != 1.0:
            a = a / units.unit
        acc[0] += a.sum(axis=0)
        acc[1] += np.einsum("ij,ij->j", a, a)
        acc[2] += (a > 0).sum(axis=0)
        acc[3] += (a < 0).sum(axis=0)
        acc[4] += (a == 0).sum(axis=0)
        n += a.shape[0]
    return SampleSums(n, *acc, unit=units.unit)


def _sampling(n: int, workers: int):
    """Every worker samples all n rows uniformly (check-spb's ``shared`` scheme): one law for everybody."""
    from signsim.diagnostics.estimators import Sampling
    from signsim.resources import check_workers

    check_workers(workers)
    return Sampling("shared", f"every worker samples all {n} rows uniformly", np.zeros(workers, dtype=np.int64))


def exact_laws(S: SampleSums, workers: int):
    """tau = 1: the exact sign law of one uniformly drawn row and its moments, as check-spb's exact estimator
    computes them for a finite sum (``estimators.finite_sum_laws`` under shared sampling)."""
    from signsim.diagnostics.estimators import WorkerLaws
    from signsim.diagnostics.votes import Law

    n = S.n
    law = Law((S.pos / n)[None, :], (S.zero / n)[None, :], ((n - S.pos - S.zero) / n)[None, :])
    mu = S.s1 / n  # in units of S.unit
    sigma = np.sqrt(np.maximum(S.s2 / n - mu**2, 0.0))[None, :] * S.unit
    return WorkerLaws("exact", _sampling(n, workers), S.grad, law, mu[None, :] * S.unit, sigma, sigma.copy(), 1)


def monte_carlo_laws(G: np.ndarray, S: SampleSums, tau: int, samples: int, seed: int, workers: int):
    """tau > 1: counts of g_hat_i > 0 and = 0 over ``samples`` minibatches of tau rows drawn uniformly with
    replacement from an array G (as check-spb's Monte Carlo estimator draws from a finite sum under shared
    sampling); sigma is tau times the sample variance of the minibatch gradient, square-rooted."""
    from signsim.diagnostics.estimators import WorkerLaws
    from signsim.diagnostics.votes import Law

    d = S.s1.size
    rng = np.random.default_rng(seed)
    pos, zero, m1, m2 = np.zeros(d), np.zeros(d), np.zeros(d), np.zeros(d)
    chunk = max(1, min(MC_CHUNK, BLOCK_BYTES // (8 * tau * d)))
    for lo in range(0, samples, chunk):
        k = min(chunk, samples - lo)
        idx = rng.integers(S.n, size=(k, tau))
        order = np.argsort(idx, axis=None)  # sorted reads are kind to memory maps
        rows = np.asarray(G[idx.ravel()[order]], dtype=np.float64) / S.unit  # S's unit: finite squares
        back = np.empty_like(order)
        back[order] = np.arange(order.size)
        batch = rows[back].reshape(k, tau, -1).mean(axis=1)
        pos += (batch > 0).sum(axis=0)
        zero += (batch == 0).sum(axis=0)
        m1 += batch.sum(axis=0)
        m2 += (batch * batch).sum(axis=0)
    law = Law((pos / samples)[None, :], (zero / samples)[None, :], ((samples - pos - zero) / samples)[None, :])
    mean = m1 / samples
    var = np.maximum(m2 / samples - mean**2, 0.0) * samples / max(samples - 1, 1)
    sd = np.sqrt(var) * S.unit
    return WorkerLaws("monte-carlo", _sampling(S.n, workers), S.grad, law, mean[None, :] * S.unit,
                      (sd * np.sqrt(tau))[None, :], sd[None, :], tau, samples, pos[None, :], zero[None, :])


def _source(G: Any, n: int, d: int) -> dict[str, Any]:
    return {"name": "per-sample gradients", "dim": d, "n_train": n, "f_star": None, "x_star_known": False,
            "heterogeneous": False, "given_as": "array" if hasattr(G, "shape") else "row blocks"}


def spb_document(G: Any, workers: int | None = None, batch_size: int = 1, sign_zero: str = "random",
                 tie: str = "random", confidence: float = 0.95, interval: str = "wilson",
                 correction: str = "holm", samples: int = 2000, seed: int = 0, top: int = 10,
                 where: str = "G") -> dict[str, Any]:
    """The fields of ``check-spb --json`` for the finite sum whose per-sample gradients are the rows of G
    (shared sampling: every worker draws its tau rows uniformly from all n), computed by the same code: the
    sign laws go through ``estimators.summarize``, ``spb.decide`` and ``spb_report.estimate_fields`` and,
    with ``workers``, ``workers_fields`` (E<g, vote> from the law of the vote, ties by ``tie``)."""
    from signsim import __version__
    from signsim.diagnostics import spb
    from signsim.diagnostics.estimators import summarize
    from signsim.diagnostics.spb_report import UNKNOWN_NOISE, estimate_fields, workers_fields
    from signsim.errors import shown
    from signsim.interface.options import check as check_option
    from signsim.interface.options import of_function

    given = dict(workers=workers, batch_size=batch_size, sign_zero=sign_zero, tie=tie, confidence=confidence,
                 interval=interval, correction=correction, samples=samples, seed=seed, top=top)
    for name, o in of_function("spb_from_samples").items():  # ranges and choices: signsim.interface.options
        if given[name] is not None:
            check_option(o, given[name], f"{o.flag} {shown(given[name])}")
    if batch_size == "full":  # (the word the option takes for the data problems, docs/theory.md §5)
        raise InputError("--batch-size full: with given gradients every worker would send the mean of all the rows, "
                         "the same sign for everyone (each success probability 0 or 1); give a batch size")
    if batch_size > 1 and not hasattr(G, "shape"):
        raise InputError(f"--batch-size {batch_size}: minibatches are drawn at random from G, which needs G as "
                         "an array (or a memory map), not an iterable of blocks")
    check_memory(G, SPB_VECTORS, where, batch_size)
    S = sums(G, where)
    M = 1 if workers is None else workers
    if workers is not None:  # the vote's law: M message laws and the law of their sum, per coordinate
        from signsim.resources import require

        require(8.0 * S.s1.size * (6 * M + 2), f"--workers {M}: the law of the vote of {M} workers over "
                f"{S.s1.size} coordinates", "reduce --workers")
    if batch_size == 1:
        laws = exact_laws(S, M)
    else:
        laws = monte_carlo_laws(G, S, batch_size, samples, seed, M)
    import numpy as np

    # entries near the float range overflow when squared: the noise-scale fields become inf (said below), the
    # sign laws stay exact; NumPy's RuntimeWarnings would otherwise reach the user's terminal
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        est = summarize(laws, sign_zero, confidence, interval)
        ver = spb.decide(est, confidence, correction)
        fields = estimate_fields(est, ver, top, UNKNOWN_NOISE)
        overflow = not np.all(np.isfinite(np.square(np.asarray(laws.sigma, dtype=float))))
    doc: dict[str, Any] = {
        "signsim_version": __version__,
        "command": "check-spb",
        "source": "samples",
        "options": {"estimator": est.method, "samples": samples if est.method == "monte-carlo" else None,
                    "confidence": confidence, "interval": interval, "correction": correction, "top": top,
                    "sign_zero": sign_zero, "tie": tie, "seed": seed},
        "problem": _source(G, S.n, S.s1.size),
        "point": f"{S.n} given samples",
        "n": S.n,
        # the user's gradients are data: nothing says their noise is unimodal and symmetric
        **fields,
        "warnings": [f"{where}: gradients this large overflow float64 when squared: the noise-scale fields (sigma, "
                     "its signal-to-noise ratio, the l1,2 quantity) are infinite or null; the sign probabilities "
                     "and the verdict are exact"] if overflow else [],
    }
    if workers is not None:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            doc.update(workers_fields(est, sign_zero, tie))
    return doc


def diversity_document(G: Any, delta: float = 1.0, where: str = "G") -> dict[str, Any]:
    """The fields of ``diversity --json`` (exact estimator) for the finite sum whose per-sample gradients are
    the rows of G: n, delta_S, B_S, B_simple, the largest batch within delta B_S + 1, the speedup table."""

    from signsim import __version__
    from signsim.diagnostics.diversity import from_sums
    from signsim.diagnostics.diversity_report import summary
    from signsim.interface.options import check as check_option
    from signsim.interface.options import of_function

    check_option(of_function("diversity_from_samples")["delta"], delta, f"--delta {delta}")
    check_memory(G, DIVERSITY_VECTORS, where)
    S = sums(G, where)
    div = from_sums(S.n, float(S.s2.sum()), S.s1, S.unit)
    return {"signsim_version": __version__, "command": "diversity", "source": "samples",
            "options": {"estimator": "exact", "delta": delta}, "problem": _source(G, S.n, S.s1.size),
            "point": f"{S.n} given samples", "method_of_estimate": "exact", **summary(div, delta)}
