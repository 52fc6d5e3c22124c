"""Python side of a run: build the state, hand chunks of iterations to the compiled loop, stop cleanly.

Random streams come from ``signsim.seeding`` (one per worker, one for the server).
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from signsim.codes import Aggregate, Attack, Compressor, Schedule, SignZero, Status, Tie, choice
from signsim.engine import loop
from signsim.interrupts import abandon, acknowledge, check, deferred
from signsim.methods.base import MethodSpec
from signsim.noise.base import NoiseModel
from signsim.problems.base import ProblemInstance
from signsim.seeding import run_streams

#: a run uses the parallel loop over workers when a step touches at least this many numbers
PARALLEL_WORK = 50_000
#: the driver returns to Python about this often (seconds) for the progress bar and Ctrl-C
CHUNK_SECONDS = 0.1


@dataclass
class Settings:
    """A method's resolved settings, as the engine sees them."""

    compressor: Compressor
    aggregate: Aggregate
    sign_zero: SignZero
    tie: Tie
    schedule: Schedule
    attack: Attack
    lr: float
    momentum: float
    stop_loss: float
    momentum_from_first: bool
    byzantine: int
    batch_size: int
    monotone: bool = False

    @classmethod
    def from_config(cls, cfg, method: MethodSpec) -> Settings:
        return cls(
            compressor=method.compressor, aggregate=choice(Aggregate, cfg.aggregate),
            sign_zero=choice(SignZero, cfg.sign_zero), tie=choice(Tie, cfg.tie),
            schedule=choice(Schedule, cfg.lr_schedule), attack=choice(Attack, cfg.attack), lr=cfg.lr,
            stop_loss=cfg.stop_loss if cfg.stop_loss is not None else -np.inf,
            momentum=cfg.momentum, momentum_from_first=method.momentum_from_first, byzantine=cfg.byzantine,
            batch_size=cfg.batch_size, monotone=bool(cfg.monotone),
        )


@dataclass
class EngineOutput:
    history: np.ndarray  # rows of (iter, loss, grad_l2, grad_l1, distance, extra)
    status: str  # ok | diverged | interrupted
    iters_done: int
    wall_time: float
    x: np.ndarray
    reached_target: bool = False  # stopped early: the loss reached --stop-loss


class Engine:
    """The state of one run between chunks. ``advance(n)`` runs n more iterations in compiled code."""

    def __init__(self, problem: ProblemInstance, noise: NoiseModel, noise_params: np.ndarray, s: Settings,
                 workers: int, iters: int, eval_every: int, seed: int, parallel: bool | None = None):
        from numba.typed import List

        d, M = problem.dim, workers
        self.K, self.k = iters, 0
        self.x = problem.x0.astype(np.float64).copy()
        uses_momentum = s.momentum > 0
        ef = s.compressor == Compressor.SCALED_SIGN_EF
        self.mom = np.zeros((M, d) if uses_momentum else (1, 1))
        self.err = np.zeros((M, d) if ef else (1, 1))
        self.G = np.zeros((M, d))
        self.msg = np.zeros((M, d))
        self.agg = np.zeros(d)
        self.gbuf = np.zeros(d)
        gens, self.server_gen = run_streams(seed, M)
        self.gens = List(gens)
        if parallel is None:
            parallel = M * d * max(1, s.batch_size if problem.A.size else 1) >= PARALLEL_WORK
        self.icfg = np.zeros(loop.N_ICFG, dtype=np.int64)
        self.icfg[[loop.I_COMPRESSOR, loop.I_AGGREGATE, loop.I_SIGN_ZERO, loop.I_TIE, loop.I_SCHEDULE,
                   loop.I_BYZANTINE, loop.I_ATTACK, loop.I_EVAL_EVERY, loop.I_MOMENTUM, loop.I_MOMENTUM_FIRST,
                   loop.I_PARALLEL, loop.I_TAU, loop.I_PROBLEM, loop.I_NOISE, loop.I_MONOTONE]] = [
            s.compressor, s.aggregate, s.sign_zero, s.tie, s.schedule, s.byzantine, s.attack, eval_every,
            uses_momentum, s.momentum_from_first, parallel, s.batch_size, problem.code, noise.code, s.monotone]
        self.fcfg = np.array([s.lr, s.momentum, s.stop_loss], dtype=np.float64)
        self.nparams = np.asarray(noise_params, dtype=np.float64)
        self.problem = problem
        self.x_star = problem.x_star.astype(np.float64) if problem.x_star is not None else np.zeros(0)
        self.hist = np.full((iters // eval_every + 2, loop.N_HIST), np.nan)
        self.counters = np.zeros(2, dtype=np.int64)
        self.status = Status.OK
        self.abandoned: np.ndarray | None = None  # x before a chunk left running after an interrupt

    def advance(self, n: int) -> Status:
        p = self.problem
        k1 = min(self.K, self.k + n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Numba's type-safety notes on prange indices
            self.status = Status(loop.run_chunk(
                self.k, k1, self.K, self.x, self.mom, self.err, self.G, self.msg, self.agg, self.gbuf,
                self.gens, self.server_gen, p.pf, p.pi, p.A, p.b, p.ptr, p.idx, self.nparams, self.icfg,
                self.fcfg, self.x_star, self.hist, self.counters))
        self.k = int(self.counters[loop.C_DONE])
        return self.status

    @property
    def finished(self) -> bool:
        return self.status != Status.OK or (self.k >= self.K and self.counters[loop.C_ROWS] > 0)

    def record_now(self) -> None:
        """Append a history row at the current iterate unless the last row already holds it."""
        rows = self.counters[loop.C_ROWS]
        if rows and self.hist[rows - 1, loop.H_ITER] == self.k or rows >= self.hist.shape[0]:
            return
        p = self.problem
        loop.record(self.k, self.x, self.err, self.gbuf, p.pf, p.pi, p.A, p.b, self.icfg, self.fcfg, self.x_star,
                    self.hist, self.counters)

    def history(self) -> np.ndarray:
        return self.hist[: self.counters[loop.C_ROWS]].copy()


Hook = tuple[int, Callable[[int, np.ndarray], None]]

#: a chunk runs in a helper thread (the compiled loop releases the GIL) so that the main thread acts on
#: Ctrl-C and SIGTERM at once, even when one iteration (a huge minibatch) takes minutes
SIGNAL_POLL = 0.05


def _advance(engine: Engine, step: int) -> None:
    """``engine.advance(step)``; on Ctrl-C or SIGTERM during the chunk, the chunk is abandoned to its thread
    (a daemon: it ends with the process) and ``engine.abandoned`` holds x as the chunk began."""
    if threading.current_thread() is not threading.main_thread():
        with deferred():
            engine.advance(step)
        return
    x_before = engine.x.copy()
    box: dict = {}
    done = threading.Event()

    def work() -> None:
        try:
            engine.advance(step)
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            box["error"] = e
        finally:
            done.set()

    threading.Thread(target=work, daemon=True, name="signsim-chunk").start()
    try:
        while not done.wait(SIGNAL_POLL):
            check()
        check()
    except KeyboardInterrupt:
        if not done.is_set():
            engine.abandoned = x_before
            abandon()
        raise
    if "error" in box:
        raise box["error"]


def simulate(engine: Engine, progress: Callable[[int, int], None] | None = None,
             hooks: list[Hook] | None = None) -> EngineOutput:
    """Run ``engine`` to the end in chunks of about CHUNK_SECONDS; Ctrl-C stops it and keeps the history.

    ``hooks`` are (every, fn) pairs: fn(k, x_k) is called at every k that is a multiple of ``every`` (k = 0
    included, k = K too), between chunks: chunks end at those iterations. A hook must not modify x."""
    start = time.perf_counter()
    status = "ok"
    reached = False
    chunk = 1
    hooks = hooks or []
    try:
        for _, fn in hooks:
            fn(0, engine.x)
        while not engine.finished:
            step = chunk
            for every, _ in hooks:
                step = min(step, every - engine.k % every)
            t = time.perf_counter()
            _advance(engine, step)
            per_iter = (time.perf_counter() - t) / step
            chunk = int(min(max(1, CHUNK_SECONDS / max(per_iter, 1e-9)), 1_000_000))
            if engine.status == Status.OK:
                for every, fn in hooks:
                    if engine.k % every == 0 and engine.k > 0:
                        fn(engine.k, engine.x)
            if progress is not None:
                progress(engine.k, engine.K)
        if engine.status == Status.DIVERGED:
            status = "diverged"
        reached = engine.status == Status.TARGET
    except KeyboardInterrupt:
        acknowledge()
        status = "interrupted"
        engine.k = int(engine.counters[loop.C_DONE])
        if engine.abandoned is None:
            engine.record_now()
        else:  # the chunk still runs in its thread: keep the rows it completed and x as the chunk began
            engine.x = engine.abandoned
    return EngineOutput(engine.history(), status, engine.k, time.perf_counter() - start, engine.x.copy(), reached)
