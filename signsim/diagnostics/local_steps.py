"""The sign law of a round's pseudo-gradient u = sum_{h<H} g(y^h) after H local steps (docs/theory.md §12.2).

* ``closed-form``: where each worker's oracle is the exact gradient of a separable quadratic, h_m(y) =
  c_m (y - t_m) coordinate by coordinate (``quadratic``: c = L, t = 0; ``vote-trap``: each worker's local
  objective), plus Gaussian noise of per-draw standard deviation s_i / sqrt(tau) (or none), the local
  iterates are linear in the noise. With a = 1 - gamma c,

      u = h_m(x) A1 + sum_{h<H} a^{H-1-h} xi^h,   A1 = sum_{k<H} a^k,   A2 = sum_{k<H} a^{2k},

  so u_i ~ N(h_i A1, (s_i^2 / tau) A2) and P(u_i > 0) = Phi(h_i A1 / (s_i sqrt(A2 / tau))) (a point mass
  at h_i A1 without noise);
* ``monte-carlo``: everywhere else (Rosenbrock, the traps' sampled oracles, the data problems, noise other
  than Gaussian): N rounds of H local steps per distinct worker oracle, simulated with the run's oracle
  (``local_kernels``), with Wilson or Clopper-Pearson intervals as for one gradient (docs/theory.md §1.5).
"""

from __future__ import annotations

import numpy as np

from signsim.diagnostics.votes import Law
from signsim.errors import InputError

#: problems whose workers' oracles are exact gradients of separable quadratics (per worker: curvature c_m)
SEPARABLE_QUADRATIC = frozenset({"quadratic", "vote-trap"})
#: noise models for which the round's u is Gaussian (or deterministic)
GAUSSIAN = frozenset({"gaussian", "none"})


def curvature(problem, worker: int) -> np.ndarray:
    """c_m: worker m's oracle is h_m(y) = c_m (y - t_m) + noise (``SEPARABLE_QUADRATIC`` problems only)."""
    if problem.name == "quadratic":
        return np.asarray(problem.pf, dtype=np.float64)
    if problem.name == "vote-trap":
        return np.array([float(problem.pf[0]) if worker % 3 == 2 else 1.0])
    raise ValueError(f"no closed form for {problem.name}")


def why_no_closed_form(problem, noise) -> str | None:
    """Why u has no closed form here (None when it has one)."""
    if problem.name not in SEPARABLE_QUADRATIC:
        return f"no closed form for H local steps on {problem.name}"
    if noise.name not in GAUSSIAN:
        return f"no closed form for H local steps with {noise.name} noise (only Gaussian or none)"
    return None


def geometric(a: np.ndarray, H: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A1 / sqrt(A2), A1, sqrt(A2)) with A1 = sum_{k<H} a^k and A2 = sum_{k<H} a^{2k}: the ratio without
    overflow for |a| > 1 (A1 and sqrt(A2) may overflow to inf there) and without cancellation for a close to 1."""
    a = np.asarray(a, dtype=np.float64)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        small = np.abs(a) <= 1
        # 0 < a < 1: 1 - a^H = -expm1(H log a), accurate when a is close to 1
        pos = small & (a > 0) & (a < 1)
        la = np.log(np.where(pos, a, 0.5))
        s1 = -np.expm1(H * la) / np.where(pos, 1 - a, 1.0)
        s2 = -np.expm1(2 * H * la) / np.where(pos, 1 - a * a, 1.0)
        # -1 < a <= 0: direct sums (no overflow, no cancellation); a = -1 and a = 1: the sums' limits
        an = np.where(small & ~pos, a, 0.0)
        s1 = np.where(pos, s1, (1 - an**H) / (1 - an))
        s2 = np.where(pos, s2, (1 - an ** (2 * H)) / np.where(an == -1, 1.0, 1 - an * an))
        s1 = np.where(a == -1, (1 - (-1.0) ** H) / 2, np.where(a == 1, float(H), s1))
        s2 = np.where(np.abs(a) == 1, float(H), s2)
        # |a| > 1: with r = 1/|a| < 1 and e = sign a, A1 = |a|^(H-1) e^(H-1) (1 - (e r)^H)/(1 - e r) and
        # A2 = |a|^(2(H-1)) (1 - r^(2H))/(1 - r^2)
        ab = np.where(small, 2.0, np.abs(a))
        e = np.where(small, 1.0, np.sign(a))
        r = 1.0 / ab
        t1 = e ** (H - 1) * (1 - (e * r) ** H) / (1 - e * r)
        t2 = (1 - r ** (2 * H)) / (1 - r * r)
        scale = ab ** (H - 1)
        ratio = np.where(small, s1 / np.sqrt(s2), t1 / np.sqrt(t2))
        A1 = np.where(small, s1, t1 * scale)
        root = np.where(small, np.sqrt(s2), np.sqrt(t2) * scale)
    return ratio, A1, root


def closed_form_round(problem, noise, nparams, x: np.ndarray, tau: int, H: int, gamma: float, workers: int,
                      worker_rows: list[int]):
    """Per distinct worker law (rows: the workers ``worker_rows``): the law of sign u_i, E u_i and the standard
    deviation of u_i, for a ``SEPARABLE_QUADRATIC`` problem with Gaussian or no noise."""
    from scipy.special import ndtr

    from signsim.noise.base import sigma_vector

    d = problem.dim
    s = sigma_vector(noise, nparams, d) / np.sqrt(tau)  # per-draw standard deviation of the minibatch's noise
    plus, zero, minus, mean, std = ([] for _ in range(5))
    for m in worker_rows:
        h = np.asarray(problem.oracle_ref(x, m, None, tau), dtype=np.float64)
        a = 1.0 - gamma * np.broadcast_to(curvature(problem, m), h.shape)
        ratio, A1, root = geometric(a, H)
        with np.errstate(over="ignore", invalid="ignore"):
            mu = np.where(h == 0, 0.0, h * A1)
            sd = np.where(s > 0, s * root, 0.0)
        det_sign = np.sign(h) * np.sign(ratio)  # the sign of h A1 (A1 and ratio share their sign)
        noisy = s > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(noisy, h * ratio / np.where(noisy, s, 1.0), 0.0)
        up = np.where(noisy, ndtr(z), (det_sign > 0).astype(float))
        down = np.where(noisy, ndtr(-z), (det_sign < 0).astype(float))
        plus.append(up)
        minus.append(down)
        zero.append(np.where(noisy, 0.0, (det_sign == 0).astype(float)))
        mean.append(mu)
        std.append(sd)
    return Law(np.array(plus), np.array(zero), np.array(minus)), np.array(mean), np.array(std)


def choose(problem, noise, requested: str, H: int) -> str:
    """The estimator of a round of H > 1 local steps: closed form where ``why_no_closed_form`` is None, Monte
    Carlo otherwise; ``exact`` never applies (the local steps leave the finite sum's enumeration)."""
    why = why_no_closed_form(problem, noise)
    if requested == "auto":
        return "monte-carlo" if why else "closed-form"
    if requested == "exact":
        raise InputError(f"--estimator exact does not apply with --local-steps {H}: the round's pseudo-gradient is "
                         "a sum of H gradients at points that depend on the draws (closed-form or monte-carlo)")
    if requested == "closed-form" and why:
        raise InputError(f"--estimator closed-form does not apply with --local-steps {H}: {why} "
                         "(use monte-carlo)")
    return requested


def round_laws(problem, noise, nparams, x: np.ndarray, tau: int, H: int, gamma: float, method: str, samples: int,
               seed: int, workers: int, salt: int = 0):
    """``estimators.WorkerLaws`` of the round's message sign u (one row per distinct worker oracle), and
    (E u, std u) per row. ``sigma`` and ``sigma_minibatch`` hold sqrt(tau) std u and std u; the reports null
    them (u is not an unbiased gradient)."""
    if problem.external is not None:
        from signsim.errors import InputError

        raise InputError(f"--local-steps {H}: the success probabilities of a round of local steps are not estimated "
                         "for --model yet (its rounds' local iterates run in torch); estimate at H = 1")
    from signsim.diagnostics.estimators import WorkerLaws, sampling, true_gradient
    from signsim.problems.sampling import is_full, noise_draws, tau_code

    x = np.ascontiguousarray(x, dtype=np.float64)
    g = true_gradient(problem, x)
    samp = sampling(problem, workers, tau)
    # --batch-size full (docs/theory.md §5): every local step takes the exact local gradient plus one noise draw
    code, tau = tau_code(tau), (noise_draws(tau) if is_full(tau) else tau)
    rows = [int(np.flatnonzero(samp.worker_class == w)[0]) for w in range(samp.distinct)]
    if method == "closed-form":
        law, mean, std = closed_form_round(problem, noise, nparams, x, tau, H, gamma, workers, rows)
        return WorkerLaws("closed-form", samp, g, law, mean, std * np.sqrt(tau), std, tau), mean, std
    from numba.typed import List

    from signsim.diagnostics.estimators import MC_CHUNKS
    from signsim.diagnostics.local_kernels import local_round_counts
    from signsim.seeding import diagnostic_streams

    W = samp.distinct
    gens = List(diagnostic_streams(seed, MC_CHUNKS, salt))
    pos, zero, s1, s2 = local_round_counts(problem, x, noise.code, nparams, code, W, gens, samples, H, float(gamma))
    law = Law(pos / samples, zero / samples, (samples - pos - zero) / samples)
    mean = s1 / samples
    var = np.maximum(s2 / samples - mean**2, 0.0) * samples / max(samples - 1, 1)
    std = np.sqrt(var)
    return WorkerLaws("monte-carlo", samp, g, law, mean, std * np.sqrt(tau), std, tau, samples, pos, zero), mean, std


def note(problem, noise, method: str, H: int, rounds: int | None) -> str:
    """How the round's law was obtained, in words (the ``round.note`` of check-spb and bound)."""
    if method == "closed-form":
        return (f"closed form: with H = {H} local steps on {problem.name} the round's u is "
                + ("Gaussian" if noise.name == "gaussian" else "deterministic") + " (docs/theory.md §12.2)")
    why = why_no_closed_form(problem, noise) or f"--estimator monte-carlo with H = {H} local steps"
    return f"{why}: Monte Carlo over {rounds} rounds per worker oracle"


def unbiased_note(H: int) -> str:
    """Why the sigma-based fields (sigma, the sufficient conditions, l^{1,2}) are null for a round of H > 1."""
    return (f"H = {H} local steps: the message is the sign of the round's pseudo-gradient u (docs/theory.md §12), "
            "not of an unbiased gradient, so the sigma-based conditions do not apply")


def at_point(problem, model, params, x, cfg, rnd, method: str, samples: int, confidence: float, interval: str,
             correction: str, salt: int = 0):
    """The estimate of the round's success probabilities at x, P(sign u_i = sign g_i) under the sign(0)
    policy, the SPB verdict on it, and the ``round`` fields (E u and its standard deviation, averaged over the
    workers; the note on the method)."""
    from signsim.diagnostics import spb
    from signsim.diagnostics.estimators import _average, summarize

    laws, mean, std = round_laws(problem, model, params, x, cfg.batch_size, rnd.local_steps, rnd.step, method,
                                 samples, cfg.seed, cfg.workers, salt)
    est = summarize(laws, cfg.sign_zero, confidence, interval)
    ver = spb.decide(est, confidence, correction)
    w = laws.sampling.weights
    fields = {"message": f"sign of the round's pseudo-gradient u, the sum of H = {rnd.local_steps} local gradients",
              "method": laws.method, "note": note(problem, model, laws.method, rnd.local_steps, laws.samples),
              "rounds": laws.samples, "u_mean": _average(w, mean), "u_std": np.sqrt(_average(w, std**2))}
    return est, ver, fields
