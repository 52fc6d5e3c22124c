"""Exact vote counts without simulating workers: ``--votes binomial`` (docs/theory.md §11).

For signSGD with majority vote (or the mean of signs), without momentum or error feedback, on a shared
exact-gradient oracle with synthetic noise independent across coordinates and workers, each worker's
message on coordinate i at iterate x is sign(g_i + xi_mi) with xi_mi i.i.d. So, given x, worker m's
message is +1, 0 or -1 with probabilities (p+, p0, p-) that depend on i alone, independently across m and
i, and the numbers of +1, 0 and -1 among the M - b honest workers are Multinomial(M - b; p+, p0, p-).
The b blind Byzantine workers draw their own noisy signs the same way, then invert them (``invert``) or
replace each nonzero one by a fair coin (``random``). The server only ever sees the sum of the messages,
so drawing these counts gives the broadcast exactly in distribution, at O(d) per iteration for any M.

p+ = P(g_i + mean of tau draws > 0) = 1 - F_tau(-g_i), from the noise model's CDF F_tau of the mean of tau
draws: Gaussian (sigma / sqrt(tau)) and Cauchy (the same scale) at any tau, the other models with a CDF in
closed form at tau = 1 only. A continuous noise distribution has p0 = 0; without noise (or sigma = 0) the
sign is deterministic and p0 = 1 where g_i = 0. ``--sign-zero`` then maps the zero outcome to a fair +-1
(random), to +1 (plus) or keeps it (zero: a ternary message).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from signsim.codes import SignZero, Status, Tie
from signsim.engine import loop, specialize
from signsim.engine.dispatch import problem_loss, problem_loss_grad
from signsim.engine.loop import record
from signsim.engine.state import ChunkedState
from signsim.noise import bimodal, cauchy, gaussian, laplace, skewed, uniform
from signsim.noise.base import N_NOISE_PARAMS

#: noise models with an in-kernel CDF of the mean of tau draws: name -> the batch sizes it holds for
#: ("any" or 1); every other registered model is refused by ``refusal``
#: the blind attacks and the server rules this engine draws, by the codes its kernels take (``icfg``'s ``attack``
#: and ``aggregate``)
ATTACKS = {"invert": 0, "random": 1}
RULES = {"mean": 0, "majority": 1}
ATTACK_INVERT, ATTACK_RANDOM = ATTACKS["invert"], ATTACKS["random"]
RULE_MEAN, RULE_MAJORITY = RULES["mean"], RULES["majority"]
CLOSED_FORM_TAU = {"none": "any", "gaussian": "any", "cauchy": "any", "laplace": 1, "uniform": 1, "bimodal": 1,
                   "skewed": 1}


@njit(cache=True)
def noise_cdf(code, z, p, tau):
    """F_tau(z) = P(mean of tau draws <= z) for a noise model with positive scale (see CLOSED_FORM_TAU)."""
    if code == gaussian.CODE:
        s = p[0] / math.sqrt(tau)
        return 0.5 * math.erfc(-z / (s * math.sqrt(2.0)))
    if code == cauchy.CODE:
        return 0.5 + math.atan(z / p[2]) / math.pi
    if code == laplace.CODE:
        b = p[1]
        return 0.5 * math.exp(z / b) if z < 0 else 1.0 - 0.5 * math.exp(-z / b)
    if code == uniform.CODE:
        a = p[1]
        return min(max((z + a) / (2.0 * a), 0.0), 1.0)
    if code == bimodal.CODE:
        a, c = p[1], p[2]
        return 0.5 * (min(max((z - a + c) / (2 * c), 0.0), 1.0) + min(max((z + a + c) / (2 * c), 0.0), 1.0))
    if code == skewed.CODE:
        return 1.0 - math.exp(-(z / p[0] + 1.0)) if z >= -p[0] else 0.0
    raise ValueError("binomial votes: no closed-form CDF for this noise model")


@njit(cache=True)
def outcome_probabilities(code, g, p, tau, deterministic):
    """(P(+1), P(0)) of one worker's sign(g + noise) before the sign(0) policy (g already divided by the
    coordinate's noise scale)."""
    if deterministic:
        if g > 0:
            return 1.0, 0.0
        if g < 0:
            return 0.0, 0.0
        return 0.0, 1.0
    plus = 1.0 - noise_cdf(code, -g, p, tau)
    return min(max(plus, 0.0), 1.0), 0.0


@njit(cache=True)
def _counts(gen, n, plus, zero):
    """Numbers of +1 and 0 among n workers (the rest -1): a binomial, then a binomial of what is left."""
    if n == 0:
        return 0, 0
    a = gen.binomial(n, plus) if plus < 1.0 else n
    b = 0
    if zero > 0.0 and a < n:
        q = zero / (1.0 - plus) if plus < 1.0 else 1.0
        b = gen.binomial(n - a, min(q, 1.0)) if q < 1.0 else n - a
    return a, b


@njit(cache=True)
def vote_sum(g, code, p, tau, deterministic, M, byzantine, attack, sign_zero, gen, out):
    """out_i = sum over the M workers of their messages on coordinate i (one draw per count, coordinate by
    coordinate in order, from ``gen``)."""
    honest = M - byzantine
    scaled = p.shape[0] > N_NOISE_PARAMS
    for i in range(g.shape[0]):
        s = p[N_NOISE_PARAMS + i] if scaled else 1.0  # per-coordinate noise scale, docs/theory.md §10.2
        gi = g[i] / s if s > 0 else g[i]
        plus, zero = outcome_probabilities(code, gi, p, tau, deterministic or s == 0)
        if sign_zero == SignZero.RANDOM:
            plus += 0.5 * zero
            zero = 0.0
        elif sign_zero == SignZero.PLUS:
            plus += zero
            zero = 0.0
        hp, h0 = _counts(gen, honest, plus, zero)
        bp, b0 = _counts(gen, byzantine, plus, zero)
        bm = byzantine - bp - b0
        if attack == ATTACK_INVERT:
            bp, bm = bm, bp
        elif attack == ATTACK_RANDOM:
            nonzero = bp + bm
            bp = gen.binomial(nonzero, 0.5) if nonzero > 0 else 0
            bm = nonzero - bp
        else:
            raise ValueError("binomial votes: only the invert and random attacks")
        out[i] = float(hp - (honest - hp - h0) + bp - bm)


@njit(cache=True)
def broadcast(agg, M, aggregate, tie, gen):
    """Turn the sums into the broadcast in place: the majority vote (ties by ``tie``) or the mean."""
    for i in range(agg.shape[0]):
        s = agg[i]
        if aggregate == RULE_MAJORITY:
            if s > 0:
                agg[i] = 1.0
            elif s < 0:
                agg[i] = -1.0
            elif tie == Tie.RANDOM:
                agg[i] = 1.0 if gen.random() < 0.5 else -1.0
            else:
                agg[i] = 0.0
        elif aggregate == RULE_MEAN:
            agg[i] = s / M
        else:
            raise ValueError("binomial votes: only majority and mean aggregation")


def refusal(s, problem, model, params, method: str) -> str | None:
    """Why ``--votes binomial`` would not be exact for the settings ``s`` (a ``driver.Settings``) on this
    problem and noise model (None when it is); docs/theory.md §11."""
    if s.compressor.name != "sign" or s.error_feedback.name != "none":
        return (f"--votes binomial needs workers that send sign(g_hat) without error feedback (signsgd); "
                f"--method {method} composes another compressor or error feedback")
    if s.momentum_kind.name != "none":
        return f"--votes binomial needs memoryless workers; --method {method} keeps a momentum (set --momentum 0)"
    if s.aggregate.name not in RULES:
        return f"--votes binomial needs --aggregate majority or mean, not {s.aggregate.name}"
    if s.byzantine and s.attack.name not in ATTACKS:
        return (f"--votes binomial supports the blind attacks invert and random, not --attack "
                f"{s.attack.name} (it reads the honest messages)")
    if not problem.exact_oracle or problem.heterogeneous or problem.finite_sum is not None:
        return (f"--votes binomial needs one exact-gradient oracle shared by all workers, with synthetic noise; "
                f"--problem {problem.name} here samples data or differs between workers")
    taus = CLOSED_FORM_TAU.get(model.name)
    if taus is None:
        return f"--votes binomial needs a noise CDF in closed form in the kernel; --noise {model.name} has none"
    if taus != "any" and s.batch_size != 1 and not is_deterministic(model, params):
        return (f"--votes binomial with --noise {model.name} needs --batch-size 1 (the mean of {s.batch_size} "
                "draws has no closed-form CDF)")
    return None


def is_deterministic(model, params: np.ndarray) -> bool:
    """No noise, or noise of zero scale: every worker sends the same sign."""
    from signsim.noise.base import degenerate

    return degenerate(model, params)



@njit(cache=True, nogil=True)  # nogil: the driver handles signals while a chunk runs in its helper thread
def run_chunk(k0, k1, K, x, agg, gbuf, trial, tally, gen, pf, pi, A, b, nparams, deterministic, M, icfg, fcfg,
              x_star, hist, counters, up_bits):
    """Iterations k0 <= k < k1 of a K-iteration signSGD run with drawn vote counts: the exact gradient g at x,
    the vote sums from ``vote_sum``, the broadcast, then x <- x - gamma_k (broadcast + lambda x). History rows
    as the per-worker loop records them (``loop.record``); bits counted as if every worker had sent."""
    err = np.zeros((1, 1))
    every = icfg[loop.I_EVAL_EVERY]
    wd = fcfg[loop.F_WEIGHT_DECAY]
    code = icfg[loop.I_PROBLEM]
    for k in range(k0, k1):
        if k % every == 0:
            status = record(k, x, err, gbuf, pf, pi, A, b, icfg, fcfg, x_star, hist, counters, tally)
            if status != Status.OK:
                return status
        lr = loop.step_size(icfg[loop.I_SCHEDULE], fcfg[loop.F_LR], k)
        problem_loss_grad(code, x, pf, pi, A, b, gbuf)
        vote_sum(gbuf, icfg[loop.I_NOISE], nparams, icfg[loop.I_TAU], deterministic, M, icfg[loop.I_BYZANTINE],
                 icfg[loop.I_ATTACK], icfg[loop.I_SIGN_ZERO], gen, agg)
        broadcast(agg, M, icfg[loop.I_AGGREGATE], icfg[loop.I_TIE], gen)
        tally[loop.T_UP] += up_bits
        tally[loop.T_UP_MAX] = up_bits
        tally[loop.T_DOWN] += M * fcfg[loop.F_DOWN_BITS]
        d = x.shape[0]
        if icfg[loop.I_MONOTONE]:
            for i in range(d):
                trial[i] = x[i] - lr * (agg[i] + wd * x[i])
            if problem_loss(code, trial, pf, pi, A, b) <= problem_loss(code, x, pf, pi, A, b):
                for i in range(d):
                    x[i] = trial[i]
        else:
            for i in range(d):
                x[i] -= lr * (agg[i] + wd * x[i])
        counters[loop.C_DONE] = k + 1
        if tally[loop.T_UP] + tally[loop.T_DOWN] >= fcfg[loop.F_BUDGET]:  # as the per-worker loop stops
            status = record(k + 1, x, err, gbuf, pf, pi, A, b, icfg, fcfg, x_star, hist, counters, tally)
            return Status.BUDGET if status == Status.OK else status
    if k1 == K:
        return record(K, x, err, gbuf, pf, pi, A, b, icfg, fcfg, x_star, hist, counters, tally)
    return Status.OK


class BinomialEngine(ChunkedState):
    """The state of a ``--votes binomial`` run between chunks, with the interface of ``driver.Engine``: O(d)
    memory and work per iteration whatever the number of workers."""

    def __init__(self, problem, noise, noise_params, s, workers: int, iters: int, eval_every: int, seed: int):
        from signsim.engine import accounting
        from signsim.engine.driver import Engine
        from signsim.seeding import run_streams

        d, M = problem.dim, workers
        self.K, self.k = iters, 0
        self.x = problem.x0.astype(np.float64).copy()
        self.agg, self.gbuf, self.trial = np.zeros(d), np.zeros(d), np.zeros(d)
        self.err = np.zeros((1, 1))  # no worker keeps an error: loop.record's error column stays empty
        self.tally = np.zeros(loop.N_TALLY)
        _, self.gen = run_streams(seed, 0)  # the server's stream draws every count
        self.up_bits = float(M * accounting.uplink_bits(s.compressor, d, s.sign_zero))
        down = accounting.downlink_bits(s.compressor, s.aggregate, M, d, s.sign_zero, s.tie)
        self.icfg, self.fcfg = Engine.settings_arrays(problem, noise, s, eval_every, False, False, down, M, M)
        self.icfg[loop.I_AGGREGATE] = RULES[s.aggregate.name]
        self.icfg[loop.I_ATTACK] = ATTACKS.get(s.attack.name, -1)
        self.nparams = np.asarray(noise_params, dtype=np.float64)
        self.deterministic = is_deterministic(noise, self.nparams)
        self.M = M
        self.init_history(problem, iters, eval_every)

    def advance(self, n: int) -> Status:
        p = self.problem
        k1 = min(self.K, self.k + n)
        chunk = specialize.kernel(run_chunk, specialize.family_of(p.code))  # compiles this family's kernels only
        self.status = Status(chunk(
            self.k, k1, self.K, self.x, self.agg, self.gbuf, self.trial, self.tally, self.gen, p.pf, p.pi, p.A, p.b,
            self.nparams, self.deterministic, self.M, self.icfg, self.fcfg, self.x_star, self.hist, self.counters,
            self.up_bits))
        self.k = int(self.counters[loop.C_DONE])
        return self.status
