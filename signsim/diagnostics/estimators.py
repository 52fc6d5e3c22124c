"""Estimators of each worker's sign law: P(g_hat_i > 0), P(g_hat_i = 0), P(g_hat_i < 0) for the oracle the
worker actually uses (docs/theory.md §1; docs/theory.md §9), chosen automatically:

* ``exact``: a finite sum at tau = 1 without added noise, by enumerating the rows each worker samples:
  ``shared`` all rows; a shard split (``iid``, ``sorted``, ``label-skew``) worker m's own rows;
  ``split-batch`` the mixture (1/2) law(first group) + (1/2) law(second group);
* ``closed-form``: an exact-gradient oracle plus a synthetic noise model (Gaussian at any tau, another model
  at tau = 1 from its CDF, no noise at any tau), one law for all workers; or workers with exact *local*
  gradients (vote-trap), one law per worker from its local gradient;
* ``monte-carlo``: otherwise, S independent minibatch gradients from each distinct worker's oracle, with
  Wilson or Clopper-Pearson intervals.

The sampling scheme decides how many distinct laws there are: one when every worker draws from the same
distribution (``shared``, ``split-batch``, homogeneous synthetic problems), one per worker otherwise (shards,
partitioned objectives). sigma is the single-sample standard deviation of a worker's oracle: exact for the
``exact`` estimator and, under split-batch sampling, for every estimator (one pass over the data: a minibatch
shares one group, so its variance is not sigma^2 / tau); otherwise tau times the Monte Carlo variance of the
minibatch gradient, whose samples are independent.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from signsim.diagnostics.spb import Estimate, interval
from signsim.diagnostics.votes import Law, agree_disagree, message_law
from signsim.errors import InputError
from signsim.noise.base import NoiseModel
from signsim.problems.base import ProblemInstance

METHODS = ("auto", "exact", "closed-form", "monte-carlo")
MC_CHUNKS = 16  # fixed, so that the estimate does not depend on the number of threads
#: problems whose workers compute exact gradients of their own local objectives (no sampling)
LOCAL_EXACT = frozenset({"vote-trap"})


@dataclass
class Sampling:
    """How the workers draw their stochastic gradients."""

    scheme: str  # shared | shard | split-batch | local | identical
    description: str
    #: per worker m, the row of the sign laws it follows (all 0 when every worker draws alike)
    worker_class: np.ndarray

    @property
    def distinct(self) -> int:
        return int(self.worker_class.max()) + 1

    @property
    def weights(self) -> np.ndarray:
        """Weight of each law in the average over workers."""
        return np.bincount(self.worker_class, minlength=self.distinct) / self.worker_class.size


def sampling(problem: ProblemInstance, workers: int, batch_size=1) -> Sampling:
    """How the workers draw their gradients; ``batch_size`` ``full`` (docs/theory.md §5): each computes the exact
    gradient of its local objective (scheme ``full``: one law under ``shared``, one per worker on shards)."""
    from signsim.data.splits import SHARD, SHARED, SPLIT_BATCH
    from signsim.problems.sampling import is_full
    from signsim.resources import check_workers

    check_workers(workers)
    same = np.zeros(workers, dtype=np.int64)
    each = np.arange(workers, dtype=np.int64)
    fs = problem.finite_sum
    if fs is not None:
        split = fs.split
        sizes = np.diff(split.ptr)
        if is_full(batch_size) and split.mode == SHARED:
            return Sampling("full", f"every worker computes the exact gradient of all {fs.n} rows (--batch-size "
                            "full)", same)
        if is_full(batch_size) and split.mode == SHARD:
            return Sampling("full", f"{split.name}: worker m computes the exact gradient of its own shard "
                            f"({sizes.min()} to {sizes.max()} rows; --batch-size full)",
                            each[: split.groups] if split.groups == workers else each % split.groups)
        if split.mode == SHARED:
            return Sampling("shared", f"every worker samples all {fs.n} rows uniformly", same)
        if split.mode == SPLIT_BATCH:
            return Sampling("split-batch", f"each minibatch from the first ({sizes[0]} rows) or the second "
                            f"({sizes[1]} rows) label group, probability 1/2 each, the same for every worker",
                            same)
        if split.mode == SHARD:
            return Sampling("shard", f"{split.name}: worker m samples its own shard "
                            f"({sizes.min()} to {sizes.max()} rows)", each[: split.groups] if
                            split.groups == workers else each % split.groups)
    if problem.name in LOCAL_EXACT:
        return Sampling("local", "each worker computes the exact gradient of its own local objective", each)
    if problem.heterogeneous:
        return Sampling("local", "each worker samples its own local objective", each)
    return Sampling("identical", "every worker draws from the same oracle", same)


def applicable(problem: ProblemInstance, noise: NoiseModel, tau) -> list[str]:
    """The estimators that apply, the automatic choice first; ``tau`` the batch size (an integer, or ``full``: each
    worker's exact local gradient plus one noise draw, whose law is closed-form, docs/theory.md §5)."""
    from signsim.problems.sampling import is_full

    if is_full(tau):
        return ["closed-form", "monte-carlo"]
    out = []
    if problem.finite_sum is not None and tau == 1 and noise.name == "none":
        out.append("exact")
    exact_oracle = (problem.exact_oracle and not problem.heterogeneous) or problem.name in LOCAL_EXACT
    if exact_oracle and (noise.name == "none" or tau == 1 or noise.mean_of is not None):
        out.append("closed-form")
    out.append("monte-carlo")
    return out


def choose(problem: ProblemInstance, noise: NoiseModel, tau: int, requested: str) -> str:
    options = applicable(problem, noise, tau)
    if requested == "auto":
        return options[0]
    if requested not in METHODS:
        raise InputError(f"--estimator {requested}: choose from {', '.join(METHODS)}")
    if requested not in options:
        why = {"exact": "needs a finite-sum problem with --batch-size 1 and no added noise",
               "closed-form": "needs an exact-gradient oracle with synthetic noise (Gaussian, Cauchy and "
                              "alpha-stable at any batch size, other models at batch size 1)"}[requested]
        raise InputError(f"--estimator {requested} does not apply to {problem.name} here: it {why}")
    return requested


def true_gradient(problem: ProblemInstance, x: np.ndarray) -> np.ndarray:
    if problem.external is not None:  # a PyTorch model: its full-data gradient (docs/theory.md §13)
        return np.asarray(problem.grad_ref(x), dtype=np.float64)
    from signsim.engine import dispatch

    g = np.zeros(problem.dim)
    dispatch.loss_grad(dispatch.Problems(dispatch.family_of(problem.code)), problem.code, x, problem.pf, problem.pi,
                       problem.A, problem.b, g)
    return g


@dataclass
class WorkerLaws:
    """Each distinct worker oracle's sign law and moments at x (rows: ``sampling.distinct`` laws)."""

    method: str
    sampling: Sampling
    grad: np.ndarray
    raw: Law  # law of sign g_hat_i of the minibatch gradient (tau samples)
    mean: np.ndarray  # E g_hat of each law
    sigma: np.ndarray  # single-sample standard deviation of each worker's oracle
    sigma_minibatch: np.ndarray  # standard deviation of each worker's minibatch gradient
    tau: int
    samples: int | None = None  # Monte Carlo draws per distinct oracle
    pos: np.ndarray | None = None  # Monte Carlo counts of g_hat_i > 0 and = 0
    zero: np.ndarray | None = None


def noise_variance(noise: NoiseModel, nparams: np.ndarray, d: int) -> np.ndarray:
    """Per-coordinate variance sigma_i^2 = (s_i sigma)^2 of one noise draw (inf where it is infinite)."""
    from signsim.noise.base import sigma_vector

    return sigma_vector(noise, nparams, d) ** 2


def group_moments(problem: ProblemInstance, x: np.ndarray, rows: np.ndarray):
    """(count > 0, count = 0, sum, sum of squares) of the per-sample gradients of ``rows``."""
    if problem.external is not None:  # a PyTorch model's per-sample gradients (docs/theory.md §13)
        return problem.external.group_moments(x, np.asarray(rows, dtype=np.int64))
    from signsim.diagnostics.kernels import group_sign_moments

    return group_sign_moments(problem, x, np.ascontiguousarray(rows, dtype=np.int64))


def finite_sum_laws(problem: ProblemInstance, x: np.ndarray, samp: Sampling, tau: int, noise_var: float):
    """Exact tau = 1 sign laws and exact moments of each worker's oracle over the data it samples."""
    split = problem.finite_sum.split
    groups = [group_moments(problem, x, split.group(k)) for k in range(split.groups)]
    sizes = np.diff(split.ptr).astype(float)
    plus = np.array([p / n for (p, _, _, _), n in zip(groups, sizes, strict=True)])
    zero = np.array([z / n for (_, z, _, _), n in zip(groups, sizes, strict=True)])
    mu = np.array([s1 / n for (_, _, s1, _), n in zip(groups, sizes, strict=True)])
    m2 = np.array([s2 / n for (_, _, _, s2), n in zip(groups, sizes, strict=True)])
    var = np.maximum(m2 - mu**2, 0.0)
    if samp.scheme == "split-batch":  # the oracle: a group with probability 1/2, then tau rows from it
        plus, zero = plus.mean(axis=0, keepdims=True), zero.mean(axis=0, keepdims=True)
        mean = mu.mean(axis=0, keepdims=True)
        single = np.maximum(m2.mean(axis=0, keepdims=True) - mean**2, 0.0)
        mini = np.maximum((var / tau + mu**2).mean(axis=0, keepdims=True) - mean**2, 0.0)
    else:
        if samp.scheme == "shard" and split.groups != samp.worker_class.size:
            raise InputError(f"--workers {samp.worker_class.size}: the split has {split.groups} shards")
        mean, single, mini = mu, var, var / tau
    minus = np.array([(n - p - z) / n for (p, z, _, _), n in zip(groups, sizes, strict=True)])
    if samp.scheme == "split-batch":
        minus = minus.mean(axis=0, keepdims=True)
    law = Law(plus, zero, minus)
    return law, mean, np.sqrt(single + noise_var), np.sqrt(mini + noise_var / tau)


def _closed_form(noise: NoiseModel, nparams: np.ndarray, h: np.ndarray, tau: int) -> Law:
    """Law of sign(h_i + s_i * mean of tau noise draws), h exact (rows: workers), from the CDF of the mean of
    tau draws (docs/theory.md §1, §10): P(h_i + s_i xi > 0) = F(h_i / s_i) for symmetric noise,
    1 - F(-h_i / s_i) otherwise; deterministic where s_i = 0 or there is no noise."""
    from signsim.noise.base import degenerate, scales

    sc = scales(nparams, h.shape[-1])
    fixed = np.broadcast_to(degenerate(noise, nparams) | (sc == 0), h.shape)
    det = Law((h > 0).astype(float), (h == 0).astype(float), (h < 0).astype(float))
    if fixed.all():
        return det
    mp = noise.mean_params(nparams, tau)
    z = np.divide(h, sc, out=np.zeros_like(h, dtype=float), where=sc > 0)
    symmetric = noise.unimodal_symmetric or noise.name == "bimodal"
    up = noise.cdf(z, mp) if symmetric else 1.0 - noise.cdf(-z, mp)
    up = np.where(fixed, det.plus, up)
    zero = np.where(fixed, det.zero, 0.0)
    return Law(up, zero, np.where(fixed, det.minus, 1.0 - up))


def local_gradients(problem: ProblemInstance, x: np.ndarray, samp: Sampling) -> np.ndarray:
    """The exact local gradient of each distinct worker law of ``samp`` (``--batch-size full``; rows: the laws, each
    from its first worker), by the problem's compiled oracle."""
    from signsim.diagnostics.kernels import full_local_gradients

    rows = [int(np.flatnonzero(samp.worker_class == w)[0]) for w in range(samp.distinct)]
    return full_local_gradients(problem, x, rows)


def worker_laws(problem: ProblemInstance, noise: NoiseModel, nparams: np.ndarray, x: np.ndarray, tau,
                method: str, samples: int, seed: int, workers: int, salt: int = 0) -> WorkerLaws:
    """Each distinct worker oracle's sign law and moments at x. ``tau``: the batch size, or ``full`` (each worker's
    exact local gradient plus one draw of the noise: ``WorkerLaws.tau`` is then 1, the draws its noise averages)."""
    from signsim.problems.sampling import is_full, noise_draws, tau_code

    x = np.ascontiguousarray(x, dtype=np.float64)
    g = true_gradient(problem, x)
    samp = sampling(problem, workers, tau)
    full, draws = is_full(tau), noise_draws(tau)
    tau = draws if full else tau
    nvar = noise_variance(noise, nparams, problem.dim)
    exact_moments = None
    if method == "exact" or (problem.finite_sum is not None and samp.scheme == "split-batch"):
        # split-batch: Monte Carlo minibatches cannot give the single-sample sigma (the group is shared by the
        # whole minibatch), so the moments come from one pass over the data
        exact_moments = finite_sum_laws(problem, x, samp, tau, nvar)
    if method == "exact":
        law, mean, sigma, mini = exact_moments
        return WorkerLaws("exact", samp, g, law, mean, sigma, mini, tau)
    if method == "closed-form":
        if full:
            h = local_gradients(problem, x, samp)
        elif samp.scheme == "local":
            h = np.array([problem.oracle_ref(x, m, None, tau) for m in range(workers)])
        else:
            h = g[None, :]
        s = np.sqrt(nvar)
        return WorkerLaws("closed-form", samp, g, _closed_form(noise, nparams, h, tau), h,
                          np.broadcast_to(s, h.shape).astype(float), np.broadcast_to(s / np.sqrt(tau), h.shape)
                          .astype(float), tau)
    from numba.typed import List

    from signsim.diagnostics.kernels import monte_carlo_worker_counts
    from signsim.seeding import diagnostic_streams

    W = samp.distinct
    if problem.external is not None:  # a PyTorch model: its batched oracle draws the minibatches
        pos, zero, s1, s2 = problem.external.sample_moments(x, tau, W, diagnostic_streams(seed, MC_CHUNKS, salt),
                                                            samples)
    else:
        gens = List(diagnostic_streams(seed, MC_CHUNKS, salt))
        pos, zero, s1, s2 = monte_carlo_worker_counts(problem, x, noise.code, nparams,
                                                      tau_code("full") if full else tau, W, gens, samples)
    law = Law(pos / samples, zero / samples, (samples - pos - zero) / samples)
    if exact_moments is not None:
        _, mean, sigma, mini = exact_moments
    else:  # shared, shard and synthetic oracles draw the tau samples of a minibatch independently
        mean = s1 / samples
        var = np.maximum(s2 / samples - mean**2, 0.0) * samples / max(samples - 1, 1)
        # no finite variance (noise.base.no_variance): the sample variance estimates nothing, sigma is infinite
        var = np.where(np.isinf(nvar), np.inf, var)
        sigma, mini = np.sqrt(var * tau), np.sqrt(var)
    return WorkerLaws("monte-carlo", samp, g, law, mean, sigma, mini, tau, samples, pos, zero)


def _average(weights: np.ndarray, a: np.ndarray) -> np.ndarray:
    return np.tensordot(weights, a, axes=1)


def summarize(laws: WorkerLaws, sign_zero: str, confidence: float, interval_kind: str) -> Estimate:
    """The average worker's success probabilities (a worker picked uniformly at random): raw P(agree),
    P(zero), P(disagree), and those of its message under the sign(0) policy, with intervals (Monte Carlo)."""
    g, nz = laws.grad, laws.grad != 0
    w = laws.sampling.weights
    msg = message_law(laws.raw, sign_zero)
    a_raw, d_raw = agree_disagree(laws.raw, g[None, :])
    a_msg, d_msg = agree_disagree(msg, g[None, :])
    p_agree, p_disagree = _average(w, a_raw), _average(w, d_raw)
    p_zero = np.where(nz, _average(w, laws.raw.zero), np.nan)
    agree, disagree = _average(w, a_msg), _average(w, d_msg)
    # agree - disagree without the rounding of adding the same zero mass to both sides
    margin = p_agree - p_disagree
    if sign_zero == "plus":
        margin = margin + np.where(g > 0, 1.0, -1.0) * _average(w, laws.raw.zero)
    sigma = np.sqrt(_average(w, laws.sigma**2))
    sigma_mini = np.sqrt(_average(w, laws.sigma_minibatch**2))
    common = dict(p_agree=p_agree, p_disagree=p_disagree, p_zero=p_zero, agree=agree, disagree=disagree,
                  sign_zero=sign_zero, sigma_minibatch=sigma_mini, laws=laws,
                  exact_margin=np.where(nz, margin, np.nan))
    if laws.method != "monte-carlo":
        return Estimate(laws.method, g, agree, agree.copy(), agree.copy(), sigma, laws.tau, **common)
    # pooled counts over the distinct oracles (each drawn S times): the average worker, stratified
    S, W = laws.samples, laws.sampling.distinct
    n = S * W
    pos, zero = laws.pos.sum(axis=0), laws.zero.sum(axis=0)
    neg = n - pos - zero
    k_agree = np.where(g > 0, pos, neg)
    k_disagree = np.where(g > 0, neg, pos)
    if sign_zero == "plus":
        k_agree, k_disagree = k_agree + np.where(g > 0, zero, 0), k_disagree + np.where(g < 0, zero, 0)
    # the tests of agree > disagree: the policy 'random' adds zeros to both sides equally, so they drop out
    succ = k_agree + (zero / 2 if sign_zero == "random" else 0.0)
    lo, hi = interval(succ, n, confidence, interval_kind)
    dlo, dhi = interval(k_disagree + (zero / 2 if sign_zero == "random" else 0.0), n, confidence, interval_kind)
    est = Estimate("monte-carlo", g, np.where(nz, succ / n, np.nan), np.where(nz, lo, np.nan),
                   np.where(nz, hi, np.nan), sigma, laws.tau, n, succ, **common)
    est.test_counts = (np.where(nz, k_agree, 0), np.where(nz, k_disagree, 0))
    est.margin_low, est.margin_high = np.where(nz, lo - dhi, np.nan), np.where(nz, hi - dlo, np.nan)
    return est


def estimate(problem: ProblemInstance, noise: NoiseModel, nparams: np.ndarray, x: np.ndarray, tau: int,
             method: str, samples: int, confidence: float, interval_kind: str, sign_zero: str, seed: int,
             workers: int, salt: int = 0) -> Estimate:
    laws = worker_laws(problem, noise, nparams, x, tau, method, samples, seed, workers, salt)
    return summarize(laws, sign_zero, confidence, interval_kind)


def vote(laws: WorkerLaws, sign_zero: str, tie: str, byzantine: int = 0, attack: str = "invert",
         clients: int | None = None):
    """The law of the majority vote of the M workers (each following its own oracle, the first ``byzantine``
    attacked), or None for an attack whose law is not modelled here. With ``clients`` S < M: the vote of S
    workers sampled uniformly without replacement, exact over the sampling (docs/theory.md §12.1): for
    identical workers the vote of S of them, otherwise ``sampled_vote.sampled_vote_law``."""
    from signsim.diagnostics.votes import ATTACKS, Law, vote_law, worker_messages

    if byzantine and attack not in ATTACKS:
        return None
    from signsim.resources import check_workers

    M = int(laws.sampling.worker_class.size)
    check_workers(M, int(laws.grad.size))
    if clients is not None and clients < M:
        if laws.sampling.distinct == 1 and byzantine == 0:  # identical workers: any S of them vote alike
            msg = worker_messages(laws.raw, laws.sampling.worker_class[:1], sign_zero)
            return vote_law(Law(*(np.repeat(a, clients, axis=0) for a in (msg.plus, msg.zero, msg.minus))), tie)
        from signsim.diagnostics.sampled_vote import memory, sampled_vote_law
        from signsim.resources import require

        require(memory(M, clients, int(laws.grad.size)), f"--clients-per-round {clients}: the law of the vote of "
                f"{clients} sampled of {M} workers over {laws.grad.size} coordinates", "reduce --clients-per-round")
        msgs = worker_messages(laws.raw, laws.sampling.worker_class, sign_zero, byzantine, attack)
        return sampled_vote_law(msgs, clients, tie)
    msgs = worker_messages(laws.raw, laws.sampling.worker_class, sign_zero, byzantine, attack)
    return vote_law(msgs, tie)


def per_worker(laws: WorkerLaws, sign_zero: str, byzantine: int = 0) -> list[dict]:
    """One row per worker: its own success probabilities, E<g, sign g_hat_m> and the bias of its oracle."""
    g, nz = laws.grad, laws.grad != 0
    a, d = agree_disagree(message_law(laws.raw, sign_zero), g[None, :])
    rows = []
    gn = float(np.linalg.norm(g))
    for m, c in enumerate(laws.sampling.worker_class):
        margin = a[c] - d[c]
        bias = float(np.linalg.norm(laws.mean[c] - g))
        rows.append({"worker": m, "byzantine": m < byzantine,
                     "rho_min": float(np.min(a[c][nz])) if nz.any() else None,
                     "n_violated": int(np.sum(margin[nz] <= 0)),
                     "rho_norm": float(np.sum(margin[nz] * np.abs(g[nz]))),
                     "bias": bias, "relative_bias": bias / gn if gn > 0 else None})
    return rows


def oracle_sample_ref(problem: ProblemInstance, noise: NoiseModel, nparams: np.ndarray, sc: np.ndarray,
                      x: np.ndarray, w: int, gen, tau: int) -> np.ndarray:
    """Worker w's stochastic gradient at x by the NumPy references: the problem's oracle, plus the mean of tau
    noise draws scaled per coordinate by ``sc``, drawn from ``gen`` in the kernels' order."""
    d = x.shape[0]
    v = np.array(problem.oracle_ref(x, w, gen, tau), dtype=np.float64)
    if noise.name == "gaussian":
        return v + sc * (float(nparams[0]) / np.sqrt(tau) * gen.standard_normal(d))
    if noise.name != "none":
        return v + sc * noise.sample(gen, (d, tau), nparams).mean(axis=1)
    return v


def monte_carlo_worker_counts_ref(problem: ProblemInstance, noise: NoiseModel, nparams: np.ndarray, x: np.ndarray,
                                  tau: int, W: int, gens: list, S: int):
    """NumPy reference of ``kernels.monte_carlo_worker_counts``: the same draws from the same generators, in the
    same order (chunk, worker, sample), through the problem's and the noise model's NumPy references."""
    from signsim.noise.base import scales

    d = x.shape[0]
    sc = scales(nparams, d)
    C = len(gens)
    pos, zero, s1, s2 = (np.zeros((W, d)) for _ in range(4))
    for c in range(C):
        gen = gens[c]
        for w in range(W):
            for _ in range(c * S // C, (c + 1) * S // C):
                v = oracle_sample_ref(problem, noise, nparams, sc, x, w, gen, tau)
                pos[w] += v > 0
                zero[w] += v == 0
                s1[w] += v
                s2[w] += v * v
    return pos, zero, s1, s2
