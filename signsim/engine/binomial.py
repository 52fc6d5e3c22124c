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

The stages are the registry's modules, chosen by what they declare (``signsim.stages.base``), never by a list of
names here: the compressor one whose ``COORDINATE_SIGN`` is True (``sign``), the aggregation one whose ``SUMMED`` is
True (its ``finish`` turns the sums into the broadcast: ``mean``, ``majority``), the attack one that declares
``sign_law`` (``invert``, ``random``: P(sent | own sign), data the loop reads, ``attacked_counts``). Every built-in
aggregation's ``finish`` is called by its address in the loop's plan of every built-in stage
(``signsim.engine.plan``), so one copy of the loop per family of problems runs every composition of built-in stages;
a plugin aggregation is called through a plan of its own (a type of its own: compiled for it), where the rounds'
loop calls it by address too.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit

from signsim.codes import SignZero, Status
from signsim.engine import dispatch, loop, stage_kernels
from signsim.engine.dispatch import problem_loss, problem_loss_grad
from signsim.engine.loop import record
from signsim.engine.plan import finish_aggregate, plan_for
from signsim.engine.state import ChunkedState
from signsim.errors import InputError
from signsim.noise import bimodal, cauchy, gaussian, laplace, skewed, uniform
from signsim.noise.base import N_NOISE_PARAMS
from signsim.stages.plugins import is_plugin

#: noise models with an in-kernel CDF of the mean of tau draws: name -> the batch sizes it holds for
#: ("any" or 1); every other registered model is refused by ``refusal``
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


#: P(sent | own sign) without Byzantine workers (and the identity for any --attack then: nothing is drawn)
IDENTITY_LAW = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))


def sign_law(s) -> np.ndarray:
    """The 3 x 3 law the run's Byzantine workers send by (rows own +1, 0, -1; columns sent +1, 0, -1): the attack
    module's ``sign_law`` of its parameters, the identity without Byzantine workers."""
    law = s.attack.module.sign_law(s.attack.params) if s.byzantine else IDENTITY_LAW
    return np.ascontiguousarray(np.asarray(law, dtype=np.float64).reshape(3, 3))


@njit(cache=True, inline="always")
def _multinomial(gen, n, plus, q):
    """Counts of +1, 0, -1 among n draws of one law with P(+1) = plus and P(0 | not +1) = q: a binomial of +1, then a
    binomial of 0 among the rest, with no draw where the outcome is sure (a probability 0 or 1, or nobody left)."""
    if plus >= 1.0:
        up = n
    elif plus <= 0.0 or n == 0:
        up = 0
    else:
        up = gen.binomial(n, plus)
    rest = n - up
    if q >= 1.0:
        z = rest
    elif q <= 0.0 or rest == 0:
        z = 0
    else:
        z = gen.binomial(rest, q)
    return up, z, rest - z


@njit(cache=True)
def pools(law):
    """The law in the form ``_attacked`` reads: per own sign +1, 0, -1, P(send +1) and P(send 0 | not +1), and which
    own signs' rows are equal (0 and 1, 0 and 2, 1 and 2: their workers are pooled)."""
    pq = np.zeros((3, 2))
    for a in range(3):
        pq[a, 0] = law[a, 0]
        pq[a, 1] = law[a, 1] / (1.0 - law[a, 0]) if law[a, 0] < 1.0 else 0.0
    same = np.zeros(3, dtype=np.bool_)
    for k, (a, c) in enumerate(((0, 1), (0, 2), (1, 2))):
        same[k] = law[a, 0] == law[c, 0] and law[a, 1] == law[c, 1] and law[a, 2] == law[c, 2]
    return pq, same[0], same[1], same[2]


@njit(cache=True, inline="always")
def _attacked(gen, plus, zero, minus, pq, r01, r02, r12):
    up, z, down = _multinomial(gen, plus + (zero if r01 else 0) + (minus if r02 else 0), pq[0, 0], pq[0, 1])
    if not r01:
        a, b, c = _multinomial(gen, zero + (minus if r12 else 0), pq[1, 0], pq[1, 1])
        up, z, down = up + a, z + b, down + c
    if not (r02 or r12):
        a, b, c = _multinomial(gen, minus, pq[2, 0], pq[2, 1])
        up, z, down = up + a, z + b, down + c
    return up, z, down


@njit(cache=True)
def attacked_counts(gen, plus, zero, minus, law):
    """The counts (+1, 0, -1) that blind Byzantine workers send, given the counts ``plus``, ``zero``, ``minus`` of
    their own signs and the law ``law`` (rows own +1, 0, -1 of P(sent +1, 0, -1)): own signs whose rows are equal
    are pooled (``pools``: their messages follow one law), then each pool, in the order of its first own sign, sends
    a multinomial (``_multinomial``: a binomial of +1, then of 0 among the rest; no draw for a sure outcome)."""
    pq, r01, r02, r12 = pools(law)
    return _attacked(gen, plus, zero, minus, pq, r01, r02, r12)


@njit(cache=True)
def vote_sum(g, code, p, tau, deterministic, M, byzantine, law, sign_zero, gen, out):
    """out_i = sum over the M workers of their messages on coordinate i (one draw per count, coordinate by
    coordinate in order, from ``gen``): the counts of +1 and 0 among the honest workers, then among the Byzantine
    ones, then what they send by the attack's law (``attacked_counts``; a law of zeros and ones, such as invert's,
    moves the counts without a draw)."""
    honest = M - byzantine
    scaled = p.shape[0] > N_NOISE_PARAMS
    pq, r01, r02, r12 = pools(law)
    sure = np.all((law == 0.0) | (law == 1.0))
    moves = np.zeros(3, dtype=np.int64)  # with a sure law: what one worker of each own sign adds to the sum
    for a in range(3):
        moves[a] = int(law[a, 0]) - int(law[a, 2])
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
        total = hp - (honest - hp - h0)
        if byzantine > 0:
            bp, b0 = _counts(gen, byzantine, plus, zero)
            bm = byzantine - bp - b0
            if sure:  # every own sign sends one sign for sure (invert): the counts move, nothing is drawn
                total += bp * moves[0] + b0 * moves[1] + bm * moves[2]
            else:
                sp, _, sm = _attacked(gen, bp, b0, bm, pq, r01, r02, r12)
                total += sp - sm
        out[i] = float(total)


#: what a ``--votes binomial`` run keeps between chunks besides the problem's data and the history: the iterate
#: ``x``, the broadcast ``agg``, the gradient ``gbuf``, a ``trial`` iterate (``--monotone``), the bits' ``tally``,
#: the server's generator ``gen`` (every count is drawn from it), whether the noise is ``deterministic``, the M
#: workers, the ``up_bits`` of a round, the Byzantine workers' sign ``law``, and the aggregation's code and
#: parameters (``aggregation``, ``fp``)
Votes = namedtuple("Votes", "x agg gbuf trial tally gen deterministic M up_bits law aggregation fp")


@njit(cache=True, nogil=True)
def run_chunk(plan, k0, k1, K, data, votes, run):
    """Iterations k0 <= k < k1 of a K-iteration signSGD run with drawn vote counts: the exact gradient g at x,
    the vote sums from ``vote_sum`` (the Byzantine workers' ``law``), the broadcast by the aggregation's ``finish``
    (its code ``aggregation`` and parameters ``fp``), then x <- x - gamma_k (broadcast + lambda x). History rows as
    the per-worker loop records them (``loop.record``); bits counted as if every worker had sent. The arguments are
    the problem's data (``loop.ProblemData``), the state of the votes (``Votes``) and the run's settings and history
    (``loop.RunState``). Compiled once per family of problems (``chunk_for``)."""
    pf, pi, A, b, nparams = data.pf, data.pi, data.A, data.b, data.nparams
    x, agg, gbuf, trial, tally, gen = votes.x, votes.agg, votes.gbuf, votes.trial, votes.tally, votes.gen
    M, up_bits, law, aggregation, fp = votes.M, votes.up_bits, votes.law, votes.aggregation, votes.fp
    deterministic = votes.deterministic
    icfg, fcfg, counters = run.icfg, run.fcfg, run.counters
    err = np.zeros((1, 1))
    every = icfg[loop.I_EVAL_EVERY]
    wd = fcfg[loop.F_WEIGHT_DECAY]
    code = icfg[loop.I_PROBLEM]
    for k in range(k0, k1):
        if k % every == 0:
            status = record(plan.problems, k, x, err, gbuf, tally, data, run)
            if status != Status.OK:
                return status
        lr = loop.step_size(icfg[loop.I_SCHEDULE], fcfg[loop.F_LR], k)
        problem_loss_grad(plan.problems, code, x, pf, pi, A, b, gbuf)
        vote_sum(gbuf, icfg[loop.I_NOISE], nparams, icfg[loop.I_TAU], deterministic, M, icfg[loop.I_BYZANTINE], law,
                 icfg[loop.I_SIGN_ZERO], gen, agg)
        finish_aggregate(plan.stages, aggregation, agg, M, fp, icfg[loop.I_TIE], gen)
        tally[loop.T_UP] += up_bits
        tally[loop.T_UP_MAX] = up_bits
        tally[loop.T_DOWN] += M * fcfg[loop.F_DOWN_BITS]
        d = x.shape[0]
        if icfg[loop.I_MONOTONE]:
            for i in range(d):
                trial[i] = x[i] - lr * (agg[i] + wd * x[i])
            problems = plan.problems
            if problem_loss(problems, code, trial, pf, pi, A, b) <= problem_loss(problems, code, x, pf, pi, A, b):
                for i in range(d):
                    x[i] = trial[i]
        else:
            for i in range(d):
                x[i] -= lr * (agg[i] + wd * x[i])
        counters[loop.C_DONE] = k + 1
        if tally[loop.T_UP] + tally[loop.T_DOWN] >= fcfg[loop.F_BUDGET]:  # as the per-worker loop stops
            status = record(plan.problems, k + 1, x, err, gbuf, tally, data, run)
            return Status.BUDGET if status == Status.OK else status
    if k1 == K:
        return record(plan.problems, K, x, err, gbuf, tally, data, run)
    return Status.OK


def _declaring(kind: str, attr: str) -> str:
    """The stages of ``kind`` this process knows (built-in and plugins) whose module declares ``attr`` (a True flag
    or a function), for the messages."""
    from signsim.stages import registry

    return ", ".join(n for n, m in registry.stages(kind).items() if getattr(m, attr, False))


def refusal(s, problem, model, params, method: str) -> str | None:
    """Why ``--votes binomial`` would not be exact for the settings ``s`` (a ``driver.Settings``) on this
    problem and noise model (None when it is); docs/theory.md §11. The stages it takes are those whose modules
    declare what it needs (the module docstring), so the messages list them from the registry."""
    if not getattr(s.compressor.module, "COORDINATE_SIGN", False):
        return (f"--votes binomial needs workers that send sign(g_hat) coordinate by coordinate (a compressor whose "
                f"module declares COORDINATE_SIGN: {_declaring('compressor', 'COORDINATE_SIGN')}); --method {method} "
                f"sends {s.compressor.spec}")
    if s.error_feedback.name != "none":
        return (f"--votes binomial needs workers without error feedback; --method {method} composes "
                f"{s.error_feedback.name}")
    if s.momentum_kind.name != "none":
        return f"--votes binomial needs memoryless workers; --method {method} keeps a momentum (set --momentum 0)"
    if not s.aggregate.module.SUMMED:
        summed = _declaring("aggregation", "SUMMED")
        return f"--votes binomial needs an aggregation of the sum of the messages ({summed}), not --aggregate " \
               f"{s.aggregate.spec}"
    if s.byzantine and not callable(getattr(s.attack.module, "sign_law", None)):
        why = " (it reads the honest messages)" if getattr(s.attack.module, "OMNISCIENT", False) else ""
        return (f"--votes binomial supports the blind attacks that declare their law on a sign message "
                f"({_declaring('attack', 'sign_law')}), not --attack {s.attack.spec}{why}")
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


def check_coordinate_sign(stage) -> None:
    """A plugin compressor that declares COORDINATE_SIGN must send sign(v_i) with sign(0) by the policy (the engine
    draws the counts of those values instead of calling its kernel): InputError naming the plugin when its kernel
    does not, on a vector with a zero, under the plus and zero policies. Built-in ones are tested instead."""
    from signsim.stages.plugins import _fail

    if not is_plugin(stage.module):
        return
    v = np.array([-2.0, -0.25, 0.0, 0.5, 3.0])
    for policy, zero in ((SignZero.PLUS, 1.0), (SignZero.ZERO, 0.0)):
        out, _ = stage_kernels.compress_once(stage, v, int(policy))
        want = np.where(v > 0, 1.0, np.where(v < 0, -1.0, zero))
        if not np.array_equal(out, want):
            raise _fail(stage.module.__file__, f"declares COORDINATE_SIGN, but its kernel sends {out.tolist()} for "
                                               f"v = {v.tolist()} (sign(v) with sign(0) = {zero:g}: {want.tolist()})")


def check_law(law: np.ndarray, s) -> None:
    """An attack's ``sign_law`` must be 3 x 3 rows of probabilities summing to 1 (InputError naming it)."""
    if not (np.all(np.isfinite(law)) and np.all(law >= 0) and np.allclose(law.sum(axis=1), 1.0, atol=1e-12)):
        raise InputError(f"--attack {s.attack.spec}: its sign_law must give, for each own sign +1, 0, -1, the "
                         f"probabilities of sending +1, 0, -1 (each row summing to 1); got {law.tolist()}")


def is_deterministic(model, params: np.ndarray) -> bool:
    """No noise, or noise of zero scale: every worker sends the same sign."""
    from signsim.noise.base import degenerate

    return degenerate(model, params)


class BinomialEngine(ChunkedState):
    """The state of a ``--votes binomial`` run between chunks, with the interface of ``driver.Engine``: O(d)
    memory and work per iteration whatever the number of workers."""

    def __init__(self, problem, noise, noise_params, s, workers: int, iters: int, eval_every: int, seed: int):
        from signsim import accounting
        from signsim.engine.driver import Engine
        from signsim.seeding import run_streams

        d, M = problem.dim, workers
        check_coordinate_sign(s.compressor)
        self.K, self.k = iters, 0
        self.x = problem.x0.astype(np.float64).copy()
        self.agg, self.gbuf, self.trial = np.zeros(d), np.zeros(d), np.zeros(d)
        self.err = np.zeros((1, 1))  # no worker keeps an error: loop.record's error column stays empty
        self.tally = np.zeros(loop.N_TALLY)
        _, self.gen = run_streams(seed, 0)  # the server's stream draws every count
        self.up_bits = float(M * accounting.uplink_bits(s.compressor, d, s.sign_zero))
        down = accounting.downlink_bits(s.compressor, s.aggregate, M, d, s.sign_zero, s.tie)
        self.icfg, self.fcfg = Engine.settings_arrays(problem, noise, s, eval_every, False, False, down, M, M)
        self.law = sign_law(s)
        check_law(self.law, s)
        # a plugin aggregation's own plan; a built-in one's in the plan of every built-in stage, which calls its
        # finish by address (``plan.Stages``: one compiled loop for all)
        family = dispatch.family_of(problem.code)
        self.plan = plan_for(family, {"aggregation": s.aggregate.module} if is_plugin(s.aggregate.module) else None,
                             server={"aggregation": s.aggregate.module})
        self.aggregation = stage_kernels.codes({"aggregation": s.aggregate.module})["aggregation"]
        self.fp = s.aggregate.param_array()
        self.nparams = np.asarray(noise_params, dtype=np.float64)
        # no stage parameters: ``loop.RunState``'s place for them, of the per-worker loop's type, so that the history's
        # ``loop.record`` compiled for that loop serves this one too
        self.sp = np.zeros((0, 0))
        self.deterministic = is_deterministic(noise, self.nparams)
        self.M = M
        self.init_history(problem, iters, eval_every)

    def advance(self, n: int) -> Status:
        k1 = min(self.K, self.k + n)
        data, run = self.record_bundles()  # (the history's bundles are the loop's)
        # this family's kernels only (and a plugin aggregation's)
        self.status = Status(run_chunk(
            self.plan, self.k, k1, self.K, data,
            Votes(self.x, self.agg, self.gbuf, self.trial, self.tally, self.gen, self.deterministic, self.M,
                  self.up_bits, self.law, self.aggregation, self.fp), run))
        self.k = int(self.counters[loop.C_DONE])
        return self.status
