"""A plain NumPy replay of the compiled loop, for tests: same streams, same order of draws, no Numba.

It is written from math.md §2 directly, with NumPy array operations, and shares no code with the kernels
(only the problem's and noise model's NumPy references). Given the same seed it must reproduce the engine's
iterates to rounding error; the tests check that for every method, server rule, sign policy and attack.
"""

from __future__ import annotations

import numpy as np

from signsim.codes import Aggregate, Attack, Compressor, Schedule, SignZero, Tie
from signsim.engine.driver import Settings
from signsim.noise.base import NoiseModel
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


def compress(kind: Compressor, v: np.ndarray, policy: SignZero, gen: np.random.Generator) -> np.ndarray:
    if kind == Compressor.IDENTITY:
        return v.copy()
    if kind == Compressor.SIGN:
        return sign_with_policy(v, policy, gen)
    if kind == Compressor.STO_SIGN:
        nrm = np.linalg.norm(v)
        if nrm == 0:
            return np.zeros_like(v)
        return np.where(gen.random(v.size) < 0.5 + v / (2 * nrm), 1.0, -1.0)
    return np.abs(v).sum() / v.size * sign_with_policy(v, policy, gen)


def attack(kind: Attack, msg: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    if kind == Attack.INVERT:
        return -msg
    return np.where(gen.random(msg.size) < 0.5, 1.0, -1.0) * np.abs(msg)


class ReferenceRun:
    def __init__(self, problem: ProblemInstance, noise: NoiseModel, noise_params: np.ndarray, s: Settings,
                 workers: int, seed: int):
        self.p, self.noise, self.nparams, self.s, self.M = problem, noise, noise_params, s, workers
        self.gens, self.server = run_streams(seed, workers)
        self.x = problem.x0.astype(float).copy()
        self.mom = np.zeros((workers, problem.dim))
        self.err = np.zeros((workers, problem.dim))
        self.k = 0

    def stochastic_gradient(self, m: int) -> np.ndarray:
        gen, tau, d = self.gens[m], self.s.batch_size, self.p.dim
        g = self.p.oracle_ref(self.x, m, gen, tau)
        if self.noise.name == "gaussian":
            g = g + self.nparams[0] / np.sqrt(tau) * gen.standard_normal(d)
        elif self.noise.name != "none":
            g = g + self.noise.sample(gen, (d, tau), self.nparams).mean(axis=1)
        return g

    def step(self) -> np.ndarray:
        s, k = self.s, self.k
        lr = s.lr / np.sqrt(k + 1) if s.schedule == Schedule.SQRT else s.lr
        msgs = []
        for m in range(self.M):
            gen = self.gens[m]
            v = self.stochastic_gradient(m)
            if s.momentum > 0:
                if k == 0 and s.momentum_from_first:
                    self.mom[m] = v
                else:
                    self.mom[m] = s.momentum * self.mom[m] + (1 - s.momentum) * v
                v = self.mom[m]
            if s.compressor == Compressor.SCALED_SIGN_EF:
                p = lr * v + self.err[m]
                msg = compress(s.compressor, p, s.sign_zero, gen)
                self.err[m] = p - msg
            else:
                msg = compress(s.compressor, v, s.sign_zero, gen)
            if m < s.byzantine:
                msg = attack(s.attack, msg, gen)
            msgs.append(msg)
        total = np.sum(msgs, axis=0)
        if s.aggregate == Aggregate.MEAN:
            broadcast = total / self.M
        else:
            broadcast = np.sign(total)
            ties = np.flatnonzero(total == 0)
            if s.tie == Tie.RANDOM and ties.size:
                broadcast[ties] = np.where(self.server.random(ties.size) < 0.5, 1.0, -1.0)
        trial = self.x - (broadcast if s.compressor == Compressor.SCALED_SIGN_EF else lr * broadcast)
        if not s.monotone or self.p.loss_ref(trial) <= self.p.loss_ref(self.x):
            self.x = trial
        self.k += 1
        return self.x
