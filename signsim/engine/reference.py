"""A plain NumPy replay of the compiled loop, for tests: same streams, same order of draws, no Numba.

It is written from docs/theory.md §2 and §8 directly, with NumPy array operations, and shares no code with the
kernels (only the problem's and noise model's NumPy references). Given the same seed it must reproduce the
engine's iterates to rounding error; the tests check that for every method alias, every stage and a grid of
stage combinations.
"""

from __future__ import annotations

import numpy as np

from signsim import accounting
from signsim.codes import Aggregate, Attack, Compressor, ErrorFeedback, Momentum, Schedule, SignZero, Tie
from signsim.engine.driver import Settings
from signsim.noise.base import NoiseModel
from signsim.noise.base import scales as noise_scales
from signsim.problems.base import ProblemInstance
from signsim.seeding import run_streams


def sign_with_policy(v: np.ndarray, policy: SignZero, gen: np.random.Generator) -> np.ndarray:
    s = np.sign(v)
    zeros = np.flatnonzero(v == 0)
    if policy == SignZero.PLUS:
        s[zeros] = 1.0
    elif policy == SignZero.RANDOM and zeros.size:
        s[zeros] = np.where(gen.random(zeros.size) < 0.5, 1.0, -1.0)
    return s


def compress(kind: Compressor, v: np.ndarray, policy: SignZero, gen: np.random.Generator,
             param: float = 0.0) -> np.ndarray:
    """C(v), drawing from ``gen`` in the order docs/theory.md §8 states."""
    d = v.size
    if kind == Compressor.IDENTITY:
        return v.copy()
    if kind == Compressor.SIGN:
        return sign_with_policy(v, policy, gen)
    if kind == Compressor.STO_SIGN:
        nrm = np.linalg.norm(v)
        if nrm == 0:
            return np.zeros_like(v)
        return np.where(gen.random(v.size) < 0.5 + v / (2 * nrm), 1.0, -1.0)
    if kind == Compressor.SCALED_SIGN:
        return np.abs(v).sum() / v.size * sign_with_policy(v, policy, gen)
    if kind == Compressor.QSGD:
        u = gen.random(d)
        nrm = np.sqrt(np.sum(v * v))
        if nrm == 0:
            return np.zeros(d)
        r = param * np.abs(v) / nrm
        level = np.floor(r) + (u < r - np.floor(r))
        return np.where(level > 0, nrm * level / param * np.where(v > 0, 1.0, -1.0), 0.0)
    if kind == Compressor.TERNGRAD:
        s = np.max(np.abs(v))
        if s == 0:
            return np.zeros(d)
        return np.where(gen.random(d) < np.abs(v) / s, s * np.where(v > 0, 1.0, -1.0), 0.0)
    if kind == Compressor.TOP_K:
        k = int(param)
        out = np.zeros(d)
        keep = sorted(range(d), key=lambda i: (-abs(v[i]), i))[:k]
        out[keep] = v[keep]
        return out
    if kind == Compressor.RAND_K:
        k = int(param)
        perm = list(range(d))
        out = np.zeros(d)
        for j in range(k):
            r = j + int(np.floor(gen.random() * (d - j)))
            perm[j], perm[r] = perm[r], perm[j]
            out[perm[j]] = d / k * v[perm[j]]
        return out
    if kind == Compressor.NATURAL:
        u = gen.random(d)
        a = np.abs(v)
        with np.errstate(divide="ignore"):
            lo = np.where(a > 0, 2.0 ** np.floor(np.log2(np.where(a > 0, a, 1.0))), 0.0)
        # log2 may round at the edge of a power of two: put lo <= a < 2 lo exactly
        lo = np.where(lo > a, lo / 2, lo)
        lo = np.where((a > 0) & (2 * lo <= a), 2 * lo, lo)
        mag = np.where(u < (a - lo) / np.where(lo > 0, lo, 1.0), 2 * lo, lo)
        return np.where(a > 0, np.sign(v) * mag, v)
    if kind == Compressor.ONEBIT:
        pos = v >= 0
        mp = v[pos].mean() if pos.any() else 0.0
        mn = v[~pos].mean() if (~pos).any() else 0.0
        return np.where(pos, mp, mn)
    raise ValueError(f"unknown compressor {kind}")


def attack(kind: Attack, msg: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    """The blind attacks (one message at a time)."""
    if kind == Attack.INVERT:
        return -msg
    if kind == Attack.RANDOM:
        return np.where(gen.random(msg.size) < 0.5, 1.0, -1.0) * np.abs(msg)
    return msg  # the omniscient attacks act on all messages at once


def omniscient(kind: Attack, param: float, msgs: np.ndarray, B: int) -> np.ndarray:
    """ALIE: honest mean - z honest population std; IPM: -eps honest mean; the first B rows replaced."""
    honest = msgs[B:]
    mu = honest.mean(axis=0)
    value = mu - param * honest.std(axis=0) if kind == Attack.ALIE else -param * mu
    out = msgs.copy()
    out[:B] = value
    return out


def aggregate(rule: Aggregate, param: float, msgs: np.ndarray, tie: Tie, server: np.random.Generator):
    M = msgs.shape[0]
    if rule == Aggregate.MEDIAN:
        return np.median(msgs, axis=0)
    if rule == Aggregate.TRIMMED:
        t = int(np.floor(param * M))
        return np.sort(msgs, axis=0)[t:M - t].mean(axis=0)
    total = np.zeros(msgs.shape[1])
    for row in msgs:  # in worker order, as the kernel sums
        total = total + row
    if rule == Aggregate.MEAN:
        return total / M
    broadcast = np.sign(total)
    ties = np.flatnonzero(total == 0)
    if tie == Tie.RANDOM and ties.size:
        broadcast[ties] = np.where(server.random(ties.size) < 0.5, 1.0, -1.0)
    return broadcast


class ReferenceRun:
    def __init__(self, problem: ProblemInstance, noise: NoiseModel, noise_params: np.ndarray, s: Settings,
                 workers: int, seed: int):
        self.p, self.noise, self.nparams, self.s, self.M = problem, noise, noise_params, s, workers
        self.gens, self.server = run_streams(seed, workers)
        self.x = problem.x0.astype(float).copy()
        self.mom = np.zeros((workers, problem.dim))
        self.err = np.zeros((workers, problem.dim))  # EF: e_m; EF21: g_m
        self.g_server = np.zeros(problem.dim)  # EF21: the server's g = mean of the g_m
        self.k = 0
        self.bits_up = 0  # by the formulas of signsim.accounting
        self.bits_down = 0

    def stochastic_gradient(self, m: int) -> np.ndarray:
        gen, tau, d = self.gens[m], self.s.batch_size, self.p.dim
        g = self.p.oracle_ref(self.x, m, gen, tau)
        sc = noise_scales(self.nparams, d)  # per-coordinate noise scales (docs/theory.md §10.2)
        if self.noise.name == "gaussian":
            g = g + sc * (self.nparams[0] / np.sqrt(tau) * gen.standard_normal(d))
        elif self.noise.name != "none":
            g = g + sc * self.noise.sample(gen, (d, tau), self.nparams).mean(axis=1)
        return g

    def momentum(self, m: int, g: np.ndarray) -> np.ndarray:
        s, kind = self.s, self.s.momentum_kind
        if kind == Momentum.NONE:
            return g
        if kind == Momentum.LION:
            c = s.momentum * self.mom[m] + (1 - s.momentum) * g
            self.mom[m] = s.momentum2 * self.mom[m] + (1 - s.momentum2) * g
            return c
        if self.k == 0 and kind == Momentum.EMA_FIRST:
            self.mom[m] = g
        else:
            self.mom[m] = s.momentum * self.mom[m] + (1 - s.momentum) * g
        return self.mom[m]

    def step(self) -> np.ndarray:
        s, k = self.s, self.k
        lr = s.lr / np.sqrt(k + 1) if s.schedule == Schedule.SQRT else s.lr
        msgs = []
        for m in range(self.M):
            gen = self.gens[m]
            v = self.momentum(m, self.stochastic_gradient(m))
            if s.error_feedback == ErrorFeedback.EF:
                u = lr * v + self.err[m]
            elif s.error_feedback == ErrorFeedback.EF21:
                u = v - self.err[m]
            else:
                u = v
            msg = compress(s.compressor, u, s.sign_zero, gen, s.compressor_param)
            self.bits_up += accounting.uplink_bits(s.compressor, msg.size, s.sign_zero, s.compressor_param,
                                                   int(np.count_nonzero(msg)))
            if s.error_feedback == ErrorFeedback.EF:
                self.err[m] = u - msg
            elif s.error_feedback == ErrorFeedback.EF21:
                self.err[m] = self.err[m] + msg
            if m < s.byzantine:
                msg = attack(s.attack, msg, gen)
            msgs.append(msg)
        msgs = np.array(msgs)
        if s.byzantine and s.attack in (Attack.ALIE, Attack.IPM):
            msgs = omniscient(s.attack, s.attack_param, msgs, s.byzantine)
        broadcast = aggregate(s.aggregate, s.aggregate_param, msgs, s.tie, self.server)
        d = broadcast.size
        if accounting.broadcast_is_sparse(s.compressor, s.aggregate):
            self.bits_down += self.M * accounting.sparse_broadcast_bits(d, int(np.count_nonzero(broadcast)))
        else:
            self.bits_down += self.M * accounting.downlink_bits(s.compressor, s.aggregate, self.M, d, s.sign_zero,
                                                                s.tie)
        if s.error_feedback == ErrorFeedback.EF21:
            self.g_server = self.g_server + broadcast
            broadcast = self.g_server
        step = broadcast if s.error_feedback == ErrorFeedback.EF else lr * broadcast
        if s.weight_decay:
            step = step + lr * s.weight_decay * self.x
        trial = self.x - step
        if not s.monotone or self.p.loss_ref(trial) <= self.p.loss_ref(self.x):
            self.x = trial
        self.k += 1
        return self.x
