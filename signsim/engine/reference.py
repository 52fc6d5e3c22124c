"""A plain NumPy replay of the compiled loop, for tests: same streams, same order of draws, no Numba.

It is written from docs/theory.md §2, §8 and §12 (rounds: local steps, sampled participants) directly, with NumPy
array operations: each stage's step is its module's NumPy ``reference`` (``signsim.stages``), which shares no code
with its kernel (only the problem's and noise model's NumPy references). Given the same seed it must reproduce the
engine's iterates to rounding error; the tests check that for every method alias, every stage and a grid of stage
combinations.
"""

from __future__ import annotations

import numpy as np

from signsim import accounting
from signsim.codes import Schedule
from signsim.engine.driver import Settings
from signsim.noise.base import NoiseModel
from signsim.noise.base import scales as noise_scales
from signsim.problems.base import ProblemInstance
from signsim.problems.sampling import noise_draws
from signsim.seeding import participation_stream, run_streams
from signsim.stages import defaults, kinds
from signsim.stages.plugins import declared


class ReferenceRun:
    def __init__(self, problem: ProblemInstance, noise: NoiseModel, noise_params: np.ndarray, s: Settings,
                 workers: int, seed: int):
        #: each worker's compute time, uplink and downlink (docs/theory.md §14.1), for a deadline or over-selection
        self.system = s.system.per_worker(workers, seed)[:3] if s.system is not None else None
        if s.byzantine and kinds.setup_flag("LABELS", s.attack.module):  # label-flip (docs/theory.md §8.5)
            from signsim.problems.finite_sum import with_flipped_labels

            problem = with_flipped_labels(problem, s.byzantine)
        self.p, self.noise, self.nparams, self.s, self.M = problem, noise, noise_params, s, workers
        streams, self.server = run_streams(seed, workers)
        self.gens = [streams[m] for m in range(workers)]
        self.sampler = participation_stream(seed)
        self.S = s.participants(workers)
        self.seen = np.zeros(workers, dtype=int)  # each worker's rounds so far (its momentum's k)
        self.participated = np.zeros(workers, dtype=int)  # how often each worker took part (for tests)
        self.x = problem.x0.astype(float).copy()
        self.mom = np.zeros((workers, problem.dim))
        # EF: e_m; EF21: g_m; CLAG: g_m and its last vector y_m (its STATE_WIDTH)
        self.err = np.zeros((workers, problem.dim * getattr(s.error_feedback.module, "STATE_WIDTH", 1)))
        self.g_server = np.zeros(problem.dim)  # EF21: the server's g = mean of the g_m
        self.opt = np.zeros((3, problem.dim))  # the server optimizer's state (moments, update)
        self.shift = np.zeros((workers, problem.dim))  # an estimator's h_m (DIANA)
        self.hbar = np.zeros((3, problem.dim))  # its server's rows (DIANA: the mean of the h_m; MARINA: g, x^{k-1})
        self.broadcast = np.zeros(problem.dim)  # the last aggregate (centered clipping starts from it)
        self.down_e = np.zeros(problem.dim)  # a compressed downlink's error memory (EF) or w (EF21), §8.8
        self.down_w = np.zeros(problem.dim)  # its EF21 server-side running sum
        self.k = 0
        self.bits_up = 0  # by the formulas of signsim.accounting
        self.bits_down = 0
        #: each round's messages, for a replay of the simulated clock (docs/theory.md §14): the workers that took
        #: part, the bits each sent (its message and what it sends besides; 0 when silent), the gradients each
        #: computed, the bits each recipient of the broadcast downloads, and the recipients
        self.rounds: list[dict] = []
        #: the version of the model each worker holds, and the server's (the rounds in which x moved; 0: x_0), for
        #: the catch-up rule (§12)
        self.synced = np.zeros(workers, dtype=int)
        self.version = 0

    def stochastic_gradient(self, m: int, x: np.ndarray | None = None) -> np.ndarray:
        gen, d = self.gens[m], self.p.dim
        g = self.p.oracle_ref(self.x if x is None else x, m, gen, self.s.batch_size)
        tau = noise_draws(self.s.batch_size)  # one draw for the full local batch (docs/theory.md §5)
        sc = noise_scales(self.nparams, d)  # per-coordinate noise scales (docs/theory.md §10.2)
        if self.noise.name == "gaussian":
            g = g + sc * (self.nparams[0] / np.sqrt(tau) * gen.standard_normal(d))
        elif self.noise.name != "none":
            g = g + sc * self.noise.sample(gen, (d, tau), self.nparams).mean(axis=1)
        return g

    def momentum(self, m: int, g: np.ndarray) -> np.ndarray:
        s = self.s
        return s.momentum_kind.module.reference(self.seen[m], g, self.mom[m], (s.momentum, s.momentum2))

    def participants(self) -> list[int]:
        """The round's S workers, ascending: the first S of a Fisher-Yates shuffle of 0..M-1 whose step i swaps
        position i with i + integers(0, M - i) (no draw when S = M), docs/theory.md §12."""
        M, S = self.M, self.S
        if S == M:
            return list(range(M))
        order = list(range(M))
        for i in range(S):
            j = i + int(self.sampler.integers(0, M - i))
            order[i], order[j] = order[j], order[i]
        return sorted(order[:S])

    def pseudo_gradient(self, m: int, lr: float) -> np.ndarray:
        """u_m = sum_{h<H} g_m(y^h), y^0 = x, y^{h+1} = y^h - lr g_m(y^h) (docs/theory.md §12), where with FedProx
        (§12.5) g_m(y) is the gradient of the local objective plus mu/2 ||y - x||^2."""
        y = self.x.copy()
        u = None
        est = self.s.estimator
        for _ in range(self.s.local_steps):
            g = self.stochastic_gradient(m, y)
            if self.s.prox_mu:
                g = g + self.s.prox_mu * (y - self.x)
            g = est.module.reference_correct(g, self.shift[m], self.hbar, np.asarray(est.param_array()))
            u = g.copy() if u is None else u + g
            y = y - lr * g
        return u

    def aggregate(self, msgs: np.ndarray) -> np.ndarray:
        """The chain of pre-aggregations, in order (§8.9), then the aggregation (§8.4)."""
        s = self.s
        for link in s.pre_aggregation:
            msgs = np.asarray(link.module.reference(msgs, link.params, self.server), dtype=float)
        return s.aggregate.module.reference(msgs, s.aggregate.params, int(s.tie), self.server, self.broadcast)

    def search(self, msgs: np.ndarray, nb: int) -> float:
        """A searching attack's factor (alie-opt, ipm-opt; §8.5), as ByzFL's Optimal_ALittleIsEnough finds it: the
        distance of the aggregate from the honest mean at START, then expansion (x + delta, delta doubled while the
        distance grows; at the first failure delta times RATIO and on to contraction) and contraction (x + delta,
        kept when farther, delta times RATIO), EVALS evaluations in all."""
        evals, start, delta, ratio = self.s.attack.params
        honest = msgs[nb:].mean(axis=0)

        def distance(x):
            attacked = self.s.attack.module.reference_rows(msgs, nb, (x,))
            return float(np.linalg.norm(self.aggregate(attacked) - honest))

        best_x, best_y, left = start, distance(start), int(evals) - 1
        while left > 0:  # expansion
            y = distance(best_x + delta)
            left -= 1
            if y > best_y:
                best_x, best_y, delta = best_x + delta, y, 2 * delta
            else:
                delta *= ratio
                break
        while left > 0:  # contraction
            y = distance(best_x + delta)
            left -= 1
            if y > best_y:
                best_x, best_y = best_x + delta, y
            delta *= ratio
        return best_x

    def exact_round(self) -> np.ndarray:
        """A round in which every worker sends its exact gradient uncompressed (MARINA's c_k = 1, §8.10): their
        mean, with its bits."""
        d = self.p.dim
        broadcast = np.mean([self.stochastic_gradient(m) for m in range(self.M)], axis=0)
        self.bits_up += self.M * 32 * d  # each sends d floats, and receives their mean as d floats
        self.bits_down += self.M * 32 * d
        everyone = list(range(self.M))
        self.rounds.append(dict(who=everyone, bits=[32 * d] * self.M, steps=1, down=32 * d, recipients=everyone,
                                fresh=True, pre=[0] * self.M))
        self.version += 1
        self.synced[:] = self.version
        return broadcast

    def step(self) -> np.ndarray:
        s, k = self.s, self.k
        lr = s.lr / np.sqrt(k + 1) if s.schedule == Schedule.SQRT else s.lr
        ef, comp, att, agg = s.error_feedback.module, s.compressor, s.attack.module, s.aggregate
        est, ep = s.estimator.module, np.asarray(s.estimator.param_array())
        msgs = []
        fresh = getattr(est, "fresh", defaults.fresh)(k, self.hbar, ep, self.server)
        part = self.participants()
        two_point = getattr(est, "TWO_POINT", False)
        if fresh:
            return self.finish(self.exact_round(), lr, self.M)
        S = len(part)
        nb = sum(1 for m in part if m < s.byzantine)  # the round's Byzantine participants
        silent = getattr(ef, "LAZY", False)  # no participant sent anything: no broadcast (§8.2)
        sent = []  # each participant's bits, for the clock's replay
        # a participant that missed the previous round's broadcast downloads the model first (§12: catch-up)
        catching = s.catch_up and self.S < self.M
        pre = [32 * self.p.dim if catching and self.synced[m] != self.version else 0 for m in part]
        self.bits_down += sum(pre)
        for m in part:
            gen = self.gens[m]
            self.participated[m] += 1
            g = self.pseudo_gradient(m, lr)
            if two_point:  # MARINA's difference, the oracle at x^k minus at x^{k-1} (§8.10)
                g = g - self.stochastic_gradient(m, self.hbar[2])
            v = self.momentum(m, g)
            self.seen[m] += 1
            v = est.reference_before(v, self.shift[m], ep)
            if getattr(ef, "LAZY", False) and m >= s.byzantine and not ef.reference_sends(k, v, self.err[m],
                                                                                          s.error_feedback.params):
                msg = np.zeros(self.p.dim)  # nothing sent (CLAG's trigger, §8.2): 0 bits, the server adds 0
                sent.append(0)
            else:
                u = ef.reference_before(lr, v, self.err[m])
                msg = np.asarray(comp.module.reference(u, comp.params, int(s.sign_zero), gen), dtype=float)
                self.bits_up += accounting.message_bits(comp, u, msg, s.sign_zero)
                sent.append(accounting.message_bits(comp, u, msg, s.sign_zero))
                silent = False
                ef.reference_after(self.err[m], u, msg)
            est.reference_after(self.shift[m], self.hbar, msg, ep, s.local_steps)
            if m < s.byzantine:
                msg = att.reference(msg, s.attack.params, gen)
            msgs.append(msg)
        msgs = np.array(msgs)
        kept = self.in_time(part, sent, s.local_steps * (2 if two_point else 1), pre)
        if kept is not None:  # the server aggregates only the messages in time (§14.5)
            msgs = msgs[kept] if kept else msgs[:0]
            nb = sum(1 for j in kept if part[j] < s.byzantine)
            n_in = len(kept)
        else:
            n_in = S
        if not n_in:  # nothing arrived in time: no aggregate, no broadcast, the server stays (§14.5)
            self.bits_up += S * declared(est, "extra_bits", self.p.dim, result="pair")[0]
            self.rounds.append(dict(who=list(part), bits=list(sent), steps=s.local_steps, down=0,
                                    recipients=list(part), cut=self.cut, pre=pre))
            self.synced[part] = self.version  # (x did not move: the participants hold it)
            self.k += 1
            return self.x
        S_all, S = S, n_in
        if 0 < nb < S and att.OMNISCIENT:
            factor = self.search(msgs, nb) if getattr(att, "SEARCH", False) else None
            msgs = att.reference_rows(msgs, nb, s.attack.params if factor is None else (factor,))
        broadcast = self.aggregate(msgs)
        self.broadcast = broadcast
        d = broadcast.size
        recv = self.M if two_point else S_all  # MARINA: every worker keeps g, so every worker receives the broadcast
        down = 0
        if s.downlink:
            pass  # the compressed update, below
        elif silent:
            pass  # g stays: each worker takes the round's step itself
        elif accounting.broadcast_is_sparse(comp, agg):
            down = accounting.sparse_broadcast_bits(d, int(np.count_nonzero(broadcast)))
            self.bits_down += recv * down
        else:
            down = accounting.downlink_bits(comp, agg, S_all, d, s.sign_zero, s.tie)
            self.bits_down += recv * down
        if S < self.M and getattr(ef, "INCREMENTS", False):  # EF21-PP: g <- g + (1/M) sum_{m in round} c_m
            broadcast = np.sum(msgs, axis=0) / self.M
        broadcast = ef.reference_direction(broadcast, self.g_server)
        # what is sent besides the messages (SCAFFOLD's control variates)
        up, extra_down = declared(est, "extra_bits", d, result="pair")
        self.bits_up += S_all * up
        self.bits_down += S_all * extra_down
        self.rounds.append(dict(who=list(part), bits=[b + up if b > 0 else 0 for b in sent],
                                steps=s.local_steps * (2 if two_point else 1), down=down + extra_down,
                                recipients=list(range(self.M)) if two_point and not s.downlink else list(part),
                                cut=self.cut, pre=pre))
        self.version += 1
        if two_point and not s.downlink:
            self.synced[:] = self.version
        else:
            self.synced[part] = self.version
        return self.finish(broadcast, lr, S, S_all)

    def in_time(self, part: list[int], sent: list[float], steps: int, pre: list[int]) -> list[int] | None:
        """The slots (ascending) whose messages reached the server in time (§14.5): by the deadline, and with
        over-selection the first ``keep`` to finish (ties by slot); None without either. Sets ``self.cut``, when the
        server stopped waiting (inf without either)."""
        s = self.s
        self.cut = np.inf
        model = s.system
        if model is None or (model.deadline == np.inf and s.keep is None):
            return None
        c, U, W = self.system
        up = declared(s.estimator.module, "extra_bits", self.p.dim, result="pair")[0]
        finish = [(model.latency + p / W[m] if p else 0.0) + steps * c[m]
                  + (model.latency + (b + up) / U[m] if b > 0 else 0.0)
                  for m, b, p in zip(part, sent, pre, strict=True)]
        take = []
        for j in sorted(range(len(part)), key=lambda j: (finish[j], j)):
            if finish[j] > model.deadline or (s.keep is not None and len(take) == s.keep):
                break
            take.append(j)
        late = len(take) < len(part) and (s.keep is None or len(take) < s.keep)
        self.cut = model.deadline if late else max((finish[j] for j in take), default=np.inf)
        return sorted(take)

    def finish(self, broadcast: np.ndarray, lr: float, S: int, recv: int | None = None) -> np.ndarray:
        """The server's step from the round's aggregate ``broadcast`` of S messages (sent to ``recv`` workers, S
        by default): the estimator's direction, the server optimizer, a compressed downlink, weight decay and the
        monotone test."""
        recv = S if recv is None else recv
        s, k, ef = self.s, self.k, self.s.error_feedback.module
        est = s.estimator
        broadcast = est.module.reference_direction(broadcast, self.hbar, np.asarray(est.param_array()), S, self.M,
                                                   s.local_steps)
        opt = s.server_optimizer
        broadcast = np.asarray(opt.module.reference(broadcast, self.opt, np.asarray(opt.param_array()), k), dtype=float)
        step = s.server_lr * (lr * broadcast if ef.STEP_SCALED else broadcast)
        if s.downlink:  # the workers receive C(u) of the update u, with the downlink's own error feedback (§8.8)
            dc, def_ = s.down_compressor, s.down_error_feedback.module
            v = def_.reference_before(1.0, step, self.down_e)
            c = np.asarray(dc.module.reference(v, dc.params, int(s.sign_zero), self.server), dtype=float)
            self.bits_down += recv * accounting.message_bits(dc, v, c, s.sign_zero)
            if self.rounds and not self.rounds[-1].get("fresh"):  # (a fresh round's clock takes its 32 d floats)
                self.rounds[-1]["down"] += accounting.message_bits(dc, v, c, s.sign_zero)
            def_.reference_after(self.down_e, v, c)
            step = np.asarray(def_.reference_direction(c, self.down_w), dtype=float)
        if s.weight_decay:
            step = step + lr * s.weight_decay * self.x
        if getattr(est.module, "TWO_POINT", False):
            self.hbar[2] = self.x
        trial = self.x - step
        if not s.monotone or self.p.loss_ref(trial) <= self.p.loss_ref(self.x):
            self.x = trial
        self.k += 1
        return self.x
