"""The three estimators of per-coordinate success probabilities (math.md §1), chosen automatically:

* ``exact``: finite sum, tau = 1, uniform sampling: rho_i = (1/n) #{j : sign d_i f_j = sign g_i};
* ``closed-form``: an exact-gradient oracle plus a synthetic noise model: Gaussian at any tau,
  rho_i = Phi(sqrt(tau) |g_i| / sigma); any other model at tau = 1 from its CDF;
* ``monte-carlo``: otherwise, S independent minibatch gradients (with replacement), Wilson or
  Clopper-Pearson intervals.
"""

from __future__ import annotations

import numpy as np

from signsim.codes import SignZero, choice
from signsim.diagnostics.spb import Estimate, interval
from signsim.errors import InputError
from signsim.noise.base import NoiseModel
from signsim.problems.base import ProblemInstance

METHODS = ("auto", "exact", "closed-form", "monte-carlo")
MC_CHUNKS = 16  # fixed, so that the estimate does not depend on the number of threads


def applicable(problem: ProblemInstance, noise: NoiseModel, tau: int) -> list[str]:
    out = []
    if problem.finite_sum is not None and tau == 1 and noise.name == "none":
        out.append("exact")
    if problem.exact_oracle and not problem.heterogeneous and (noise.name == "gaussian" or tau == 1):
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
               "closed-form": "needs an exact-gradient oracle with synthetic noise (Gaussian at any batch size, "
                              "other models at batch size 1)"}[requested]
        raise InputError(f"--estimator {requested} does not apply to {problem.name} here: it {why}")
    return requested


def true_gradient(problem: ProblemInstance, x: np.ndarray) -> np.ndarray:
    from signsim.engine.dispatch import problem_loss_grad

    g = np.zeros(problem.dim)
    problem_loss_grad(problem.code, x, problem.pf, problem.pi, problem.A, problem.b, g)
    return g


def estimate(problem: ProblemInstance, noise: NoiseModel, nparams: np.ndarray, x: np.ndarray, tau: int,
             method: str, samples: int, confidence: float, interval_kind: str, sign_zero: str, seed: int,
             workers: int, salt: int = 0) -> Estimate:
    x = np.ascontiguousarray(x, dtype=np.float64)
    g = true_gradient(problem, x)
    nz = g != 0
    if method == "exact":
        from signsim.diagnostics.kernels import exact_counts

        n = problem.finite_sum.n
        succ, s1, s2 = exact_counts(problem.code, x, g, problem.pf, problem.pi, problem.A, problem.b, n,
                                    choice(SignZero, sign_zero), np.random.default_rng(0))
        rho = np.where(nz, succ / n, np.nan)
        sigma = np.sqrt(np.maximum(s2 / n - (s1 / n) ** 2, 0.0))
        return Estimate("exact", g, rho, rho.copy(), rho.copy(), sigma, tau)
    if method == "closed-form":
        sigma_noise = float(nparams[0])
        if noise.name == "gaussian":
            from scipy.stats import norm

            with np.errstate(divide="ignore"):
                rho = norm.cdf(np.sqrt(tau) * np.abs(g) / sigma_noise) if sigma_noise > 0 else np.ones_like(g)
        else:
            rho = noise.success_probability(g, nparams)
        rho = np.where(nz, rho, np.nan)
        return Estimate("closed-form", g, rho, rho.copy(), rho.copy(), np.full(g.shape, sigma_noise), tau)
    from numba.typed import List

    from signsim.diagnostics.kernels import monte_carlo_counts
    from signsim.seeding import diagnostic_streams

    gens = List(diagnostic_streams(seed, MC_CHUNKS, salt))
    succ, s1, s2 = monte_carlo_counts(problem.code, x, g, problem.pf, problem.pi, problem.A, problem.b,
                                      problem.ptr, problem.idx, noise.code, np.asarray(nparams, dtype=np.float64),
                                      tau, workers, gens, samples, choice(SignZero, sign_zero))
    lo, hi = interval(succ, samples, confidence, interval_kind)
    rho = np.where(nz, succ / samples, np.nan)
    var = np.maximum(s2 / samples - (s1 / samples) ** 2, 0.0) * samples / max(samples - 1, 1)
    return Estimate("monte-carlo", g, rho, np.where(nz, lo, np.nan), np.where(nz, hi, np.nan),
                    np.sqrt(var * tau), tau, samples, succ)
