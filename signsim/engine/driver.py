"""Python side of a run: build the state, hand chunks of iterations to the compiled loop, stop cleanly.

Random streams come from ``signsim.seeding`` (one per worker, one for the server).
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from signsim.codes import Schedule, SignZero, Status, Tie, choice
from signsim.engine import clock, compose, dispatch, ledger, loop, smoke, split_compile, stage_kernels
from signsim.engine.state import ChunkedState
from signsim.errors import InputError
from signsim.interface import memory
from signsim.interface.interrupts import acknowledge, can_hold, check, held, interruptible, pending, ready
from signsim.methods.base import MethodSpec
from signsim.noise.base import NoiseModel
from signsim.problems.base import ProblemInstance
from signsim.problems.finite_sum import oracle_rows
from signsim.problems.sampling import is_full, tau_code
from signsim.seeding import participation_stream, run_streams
from signsim.stages import kinds
from signsim.stages.kinds import PRE_KINDS
from signsim.stages.plugins import declared
from signsim.stages.registry import Stage

if TYPE_CHECKING:
    from signsim.system.model import SystemModel

#: a run uses the parallel loop over workers when a step touches at least this many numbers and Numba has more than
#: one thread (``NUMBA_NUM_THREADS``, ``numba.set_num_threads``): with one, the serial loop does the same work without
#: the parallel loop's scheduling, and gives the same results (the loops are bit-identical whatever the thread count)
PARALLEL_WORK = 50_000
#: the driver returns to Python about this often (seconds) for the progress bar and Ctrl-C
CHUNK_SECONDS = 0.1
#: with sampled participants, a chunk holds at most this many (round, participant) slots: their generators are
#: handed to the loop as a list made for the chunk
CHUNK_SLOTS = 16_384
#: the most candidate clients an asynchronous run draws ahead of a chunk (``Engine._candidates``)
ROW_SLOTS = 1 << 20

#: the field of ``Settings`` that holds the stage of a kind whose name it does not take (``Settings.by_kind``)
FIELDS = {"momentum": "momentum_kind", "aggregation": "aggregate"}


@dataclass
class Settings:
    """A method's resolved stages and settings, as the engine sees them (docs/theory.md §2, §8). The stages are
    ``signsim.stages.Stage``s: module and parameters, every default resolved."""

    compressor: Stage
    aggregate: Stage
    sign_zero: SignZero
    tie: Tie
    schedule: Schedule
    attack: Stage
    lr: float
    momentum: float
    stop_loss: float
    momentum_from_first: bool
    byzantine: int
    #: tau, or ``full`` (the exact local gradient, docs/theory.md §5); the loop takes ``sampling.tau_code`` of it
    batch_size: int | str
    monotone: bool = False
    momentum_kind: Stage | None = None
    momentum2: float = 0.0
    weight_decay: float = 0.0
    error_feedback: Stage | None = None
    budget: float = np.inf  # stop once the bits sent up and down reach this many (docs/theory.md §12)
    #: federated rounds (docs/theory.md §12): local steps H, participants per round S (None: every worker), the
    #: server's step size; ``lr`` is then gamma_0 of the local step size (``--local-lr``, default ``--lr``)
    local_steps: int = 1
    clients: int | None = None
    server_lr: float = 1.0
    #: FedProx's proximal weight mu in the local steps (docs/theory.md §12.5; ``--prox-mu``, default 0)
    prox_mu: float = 0.0
    #: the server's optimizer (docs/theory.md §12.4; ``--server-opt``, default sgd: x <- x - step direction)
    server_optimizer: Stage | None = None
    #: the gradient estimator (docs/theory.md §8.7; ``--grad-estimator``, default none: each worker compresses v)
    estimator: Stage | None = None
    #: the downlink's compressor and its error feedback (docs/theory.md §8.8; ``--down-compressor``, default none:
    #: the server broadcasts what it aggregated, uncompressed, and x moves by the server's update)
    down_compressor: Stage | None = None
    down_error_feedback: Stage | None = None
    #: the chain of pre-aggregations before the aggregation (docs/theory.md §8.9; ``--pre-aggregate``), its three
    #: links in order, ``none`` where the chain is shorter
    pre_aggregation: tuple[Stage, ...] = ()
    #: the system model that turns the round's messages into simulated time (docs/theory.md §14; None: no clock)
    system: SystemModel | None = None
    #: with over-selection, the participants the server aggregates each round: the first to finish (§14.5)
    keep: int | None = None
    #: a sampled participant that does not hold the current model downloads it first (docs/theory.md §12)
    catch_up: bool = True

    def __post_init__(self):
        from signsim.stages.plan import default

        for field, kind in (("momentum_kind", "momentum"), ("error_feedback", "error_feedback"),
                            ("server_optimizer", "server_optimizer"), ("estimator", "estimator"),
                            ("down_error_feedback", "down_error_feedback")):
            if getattr(self, field) is None:
                setattr(self, field, default(kind))
        links = tuple(self.pre_aggregation)
        self.pre_aggregation = links + tuple(default(kind) for kind in PRE_KINDS[len(links):])

    @property
    def downlink(self) -> bool:
        """Whether the server's broadcast is compressed (``--down-compressor``)."""
        return self.down_compressor is not None

    def _down(self) -> Stage:
        """The downlink's compressor, the identity as the loop's placeholder when there is none (never called)."""
        from signsim.stages.plan import default

        return self.down_compressor if self.down_compressor is not None else default("down_compressor")

    @property
    def aggregate_param(self) -> float:
        return self.aggregate.params[0] if self.aggregate.params else 0.0

    @property
    def attack_param(self) -> float:
        return self.attack.params[0] if self.attack.params else 0.0

    def by_kind(self) -> dict[str, Stage]:
        """kind -> the run's stage of each kind of the table (``kinds.NAMES``, in its order): the field of that name
        (``FIELDS``), a link of the pre-aggregation chain, the downlink's compressor or its placeholder."""
        out = {}
        for kind in kinds.NAMES:
            if kind in PRE_KINDS:
                out[kind] = self.pre_aggregation[PRE_KINDS.index(kind)]
            elif kind == "down_compressor":
                out[kind] = self._down()
            else:
                out[kind] = getattr(self, FIELDS.get(kind, kind))
        return out

    def stages(self) -> dict:
        """kind -> the module of each stage the loop composes (no attack without Byzantine workers)."""
        out = {kind: stage.module for kind, stage in self.by_kind().items()}
        if not self.byzantine:
            out["attack"] = stage_kernels.NO_ATTACK
        return out

    def stage_list(self) -> list[Stage]:
        return list(self.by_kind().values())

    def stage_params(self) -> np.ndarray:
        """The loop's ``sp``: one row of parameters per stage (``loop.SP_ROW``); momentum's are (beta, beta2)."""
        from signsim.stages.base import MAX_PARAMS

        sp = np.zeros((loop.N_SP, MAX_PARAMS))
        for kind, stage in self.by_kind().items():
            if kind != "momentum":
                sp[loop.SP_ROW[kind], :len(stage.params)] = stage.params
        sp[loop.SP_MOMENTUM, :2] = self.momentum, self.momentum2
        return sp

    @classmethod
    def from_config(cls, cfg, method: MethodSpec, dim: int | None = None) -> Settings:
        """The stages of ``cfg`` (``signsim.stages.plan``: each spec parsed once); ``dim`` resolves a default that
        depends on the dimension (a sparsifier's k)."""
        from signsim import accounting, rounds
        from signsim.stages import plan
        from signsim.system import model as system_model

        chosen = plan.of_config(cfg, method)
        if dim is not None:
            chosen = chosen.at_dim(dim)
        return cls(
            compressor=chosen.compressor,
            aggregate=chosen.aggregate, sign_zero=choice(SignZero, cfg.sign_zero),
            tie=choice(Tie, cfg.tie), schedule=choice(Schedule, cfg.lr_schedule),
            attack=chosen.attack, lr=cfg.local_lr if cfg.local_lr is not None else cfg.lr,
            stop_loss=cfg.stop_loss if cfg.stop_loss is not None else -np.inf,
            momentum=cfg.momentum, momentum_from_first=method.momentum_from_first, byzantine=cfg.byzantine,
            batch_size=cfg.batch_size, monotone=bool(cfg.monotone), momentum_kind=chosen.momentum,
            momentum2=cfg.momentum2 if cfg.momentum2 is not None else 0.0,
            weight_decay=getattr(cfg, "weight_decay", 0.0) or 0.0,
            error_feedback=chosen.error_feedback,
            budget=accounting.budget_bits(cfg),
            local_steps=int(cfg.local_steps), clients=rounds.of_config(cfg), server_lr=float(cfg.server_lr),
            prox_mu=float(getattr(cfg, "prox_mu", 0.0) or 0.0),
            server_optimizer=chosen.server_optimizer, estimator=chosen.estimator,
            down_compressor=chosen.down_compressor, down_error_feedback=chosen.down_error_feedback,
            pre_aggregation=chosen.pre_aggregation, system=system_model.of_config(cfg), keep=rounds.kept(cfg),
            catch_up=getattr(cfg, "catch_up", None) != "none",
        )

    def participants(self, workers: int) -> int:
        """S, the workers that take part in each round (docs/theory.md §12)."""
        return workers if self.clients is None else min(int(self.clients), workers)


def check_settings(s: Settings, d: int) -> None:
    """What the settings ``s`` need of the problem's dimension ``d`` (checked before anything is allocated)."""
    for c, option in ((s.compressor, "--compressor"), (s.down_compressor, "--down-compressor")):
        if c is not None and hasattr(c.module, "check_params") and c.resolved:  # its own limits in d (k <= d)
            c.module.check_params(c.params, d, option, c.spec)


def check_two_point(s: Settings, problem: ProblemInstance) -> None:
    """What a two-point estimator (MARINA, docs/theory.md §8.10) needs of the problem: each worker's exact local
    gradient (its difference at two iterates must come from the same sample; a stochastic oracle would need
    VR-MARINA, not built): an exact oracle, or a data problem's --batch-size full (§5). What it needs of the other
    options is checked with the config (``signsim.interface.composition``)."""
    full = is_full(s.batch_size) and problem.finite_sum is not None
    if problem.external is not None or not (problem.exact_oracle or problem.local_exact or full):
        why = "a PyTorch model" if problem.external is not None else f"{problem.name}'s sampled oracle"
        hint = " (on a data problem, --batch-size full)" if problem.finite_sum is not None and not full else ""
        raise InputError(f"--grad-estimator {s.estimator.spec}: needs each worker's exact local gradient (the "
                         f"difference at two iterates from the same sample), not {why}; use an exact oracle{hint}")


def owned_state(stages: dict, M: int, S: int, d: int, dt) -> dict[str, np.ndarray]:
    """slot -> the zero array the run's stage of each kind owns there, of the shape its kind's table declares
    (``signsim.stages.kinds.State``; in M workers, S participants a round, d coordinates) when the module sets the
    state's flag (else its ``STATE``), else a 1 x 1 placeholder. The downlink's slots are allocated with the
    downlink."""
    sizes = {"M": M, "S": S, "d": d}
    out = {}
    for kind in kinds.PRIMARY:
        module = stages[kind.name]
        for st in kind.states:
            out[st.slot] = np.zeros(st.dims(module, sizes), dtype=dt if st.dtype == "state" else np.int64)
    return out


class StageFault(InputError):
    """A stage broke its contract while the run ran (a plugin's kernel indexed outside an array, or returned bits
    or rows its contract forbids): the run stops there and the command ends with this one line (exit 2); ``signsim
    run`` first keeps its results so far, with status "failed" (``simulate``'s ``keep_failed``)."""


@dataclass
class EngineOutput:
    history: np.ndarray  # rows of loop.HIST
    status: str  # ok | diverged | interrupted | budget | failed (``error`` says why)
    iters_done: int
    wall_time: float
    x: np.ndarray
    reached_target: bool = False  # stopped early: the loss reached --stop-loss
    tally: np.ndarray | None = None  # the bits sent up to iters_done (loop.T_UP, loop.T_DOWN), a copy
    idle: np.ndarray | None = None  # each worker's idle seconds on the simulated clock (None: no system model)
    error: str | None = None  # a failed run's one line (StageFault); why an interrupted run has no row (NO_ROW_YET)


class Engine(ChunkedState):
    """The state of one run between chunks. ``advance(n)`` runs n more iterations in compiled code."""

    def __init__(self, problem: ProblemInstance, noise: NoiseModel, noise_params: np.ndarray, s: Settings,
                 workers: int, iters: int, eval_every: int, seed: int, parallel: bool | None = None,
                 dtype: str | np.dtype = np.float64):
        from signsim import accounting

        if s.byzantine and kinds.setup_flag("LABELS", s.attack.module):  # label-flip (docs/theory.md §8.5)
            from signsim.problems.finite_sum import with_flipped_labels

            problem = with_flipped_labels(problem, s.byzantine)
        d, M = problem.dim, workers
        S = s.participants(M)
        self.K, self.k = iters, 0
        #: the type of the state vectors (x, momentum, error memory, gradients, messages, aggregate); the kernels'
        #: arithmetic stays float64 and rounds once when it stores into them (``--dtype``, docs/reference.md)
        self.dtype = dt = np.dtype(dtype)
        if dt not in (np.float64, np.float32):
            raise ValueError(f"unsupported state dtype {dt}")
        self.x = problem.x0.astype(dt)  # astype copies
        check_settings(s, d)
        if not s.compressor.resolved:
            raise ValueError("the compressor's parameters must be resolved with the dimension")
        self.settings = s
        # the arrays the stages own, as their kinds declare them (signsim.stages.kinds.State): the momentum's m_m
        # (mom), the error memory e_m or EF21's g_m (err), the sparsifiers' index scratch per slot (iwork), the
        # server optimizer's moments (opt), the estimator's shift h_m per worker (shift) and its server's rows (hbar)
        for slot, array in owned_state(s.stages(), M, S, d, dt).items():
            setattr(self, slot, array)
        self.srv = np.zeros(d, dtype=dt)
        # a compressed downlink's update, scratch, broadcast and memories (loop.D_*), and its index scratch
        self.down = np.zeros((5, d) if s.downlink else (1, 1), dtype=dt)
        self.diwork = np.zeros((1, d) if s.downlink and s.down_compressor.module.SCRATCH else (1, 1), dtype=np.int64)
        self.G = np.zeros((S, d), dtype=dt)
        self.msg = np.zeros((S, d), dtype=dt)
        #: gradients computed outside the loop (a PyTorch model, docs/theory.md §13): it takes the H local steps,
        #: the loop sees each participant's pseudo-gradient with H = 1
        self.external = problem.external
        if self.external is not None:
            memory.keep_freed_memory()  # (the signsim command only: a model's large tensors, freed at every step)
        #: the latest time of each piece of a model's rounds, as in the main thread (``_lap``), and when the last ended
        self.pieces: dict[str, float] = {}
        self._mark = time.perf_counter()
        loop_steps = 1 if self.external is not None else s.local_steps
        if self.external is not None and s.monotone:
            raise InputError("--monotone: not with --model (the loop cannot evaluate the model at a trial point)")
        if self.external is not None and getattr(s.estimator.module, "CORRECTS", False) and s.local_steps > 1:
            raise InputError(f"--grad-estimator {s.estimator.spec}: not with --model and --local-steps > 1 yet (its "
                             "local steps are taken in PyTorch, without the corrections); drop one of the two")
        if self.external is not None and s.prox_mu and s.local_steps > 1:
            raise InputError(f"--prox-mu {s.prox_mu:g}: not with --model yet (its local steps are taken in PyTorch, "
                             "without the proximal term); drop one of the two")
        two_point = getattr(s.estimator.module, "TWO_POINT", False)  # Y[j]: its gradient at the previous iterate
        self.Y = np.zeros((S, d) if loop_steps > 1 or two_point else (1, 1), dtype=dt)
        self.U = np.zeros((S, d) if loop_steps > 1 else (1, 1), dtype=dt)
        self.agg = np.zeros(d, dtype=dt)
        self.gbuf = np.zeros(d)  # the full gradient behind the history's norms: float64 like the history
        self.wbits = np.zeros(S)
        self.tally = np.zeros(loop.N_TALLY)
        # each worker's compute time, links and idle time for the simulated clock (``signsim.engine.clock``); with
        # gradients from outside the loop, its H local steps are one step of the loop, so its compute time is H c_m
        self.system = s.system.per_worker(M, seed) if s.system is not None else np.zeros((clock.N_SYSTEM, 1))
        if s.system is not None:  # (a round's messages: at most 32 d floats, the extra and a catch-up, from each)
            s.system.check_times(self.system, 96.0 * d * M, 2 * s.local_steps, iters)
        if s.system is not None and problem.external is not None:
            self.system[clock.W_COMPUTE] *= s.local_steps
        # the version of the model each worker holds, then the server's (0: x_0), for the catch-up rule (§12)
        self.synced = np.zeros(M + 1 if S < M and s.catch_up else 1, dtype=np.int64)
        # each worker's rounds so far, the k its momentum sees (one entry when the momentum keeps no state)
        self.seen = np.zeros(M if s.momentum_kind.module.STATE else 1, dtype=np.int64)
        # the workers' streams are made as they first take part (docs/theory.md §12): nothing here costs per worker
        self.streams, self.server_gen = run_streams(seed, M)
        self.part_gen = participation_stream(seed)  # the server's sampling stream, apart from its tie-breaks
        self.M, self.S = M, S
        from signsim.stages import plugins

        #: asynchronous buffered aggregation (``signsim.engine.buffered``; None: synchronous rounds)
        self.buffer = s.system.buffer if s.system is not None else None
        if self.buffer is not None:
            parallel = False  # (its clients start one at a time, at the instants the clock gives)
        if parallel is None:  # (gradients from outside the loop: torch's threads compute them, the stages run serially)
            from numba import get_num_threads

            # a plugin's kernels check their indices (``stage_kernels.stage_function``): an error raised in a thread of
            # the threaded loop would be lost, so its composition runs the serial loop (unless its author trusts it)
            checked = any(plugins.bounds_checked(st.module) for st in s.stage_list())
            parallel = (S * d * max(1.0, oracle_rows(problem, s.batch_size)) * s.local_steps >= PARALLEL_WORK
                        and problem.external is None and get_num_threads() > 1 and not checked)
        self.parallel = bool(parallel)
        self.queue = None
        if self.buffer is not None:  # the asynchronous server's state (``buffered.Queue``); rows drawn as needed
            from signsim.engine import buffered

            self.queue = buffered.Queue(client=np.full(S, -1, dtype=np.int64), version=np.zeros(S, dtype=np.int64),
                                        finish=np.zeros(S), start=np.zeros(S), phase=np.zeros((S, 2)),
                                        held=np.zeros(M, dtype=np.int64), busy=np.zeros(M, dtype=np.bool_),
                                        gen_of=(np.full(M, -1, dtype=np.int64) if S < M
                                                else np.arange(M, dtype=np.int64)),
                                        buf=np.zeros((self.buffer.size, d), dtype=dt), now=np.zeros(1),
                                        count=np.zeros(3, dtype=np.int64),
                                        rows=np.zeros((0, S) if S < M else (1, 1), dtype=np.int64))
        if S < M:  # each chunk's participants and their generators are drawn before it (``_sample``)
            self.part = np.zeros((1, S), dtype=np.int64)
            # (an asynchronous run's list grows with each client's first appearance, ``_candidates``)
            self.gens = None if self.buffer is not None else worker_generators([self.streams[0]], self.listed())
        else:
            self.part = np.arange(M, dtype=np.int64).reshape(1, M)
            # (an asynchronous run calls its loop for a few server steps at a time, a PyTorch model's run for one
            # round at a time: a typed list, which is not unboxed generator by generator at each call; 0.25 ms of
            # a 0.9 ms round of the digits MLP with 32 workers, 6 December 2026)
            self.gens = worker_generators([self.streams[m] for m in range(M)], self.listed() or self.buffer is not None)
        self.known = 0  # the generators in an asynchronous run's list
        sparse_down = accounting.broadcast_is_sparse(s.compressor, s.aggregate)
        down = 0 if sparse_down else accounting.downlink_bits(s.compressor, s.aggregate, S, d, s.sign_zero, s.tie)
        self.icfg, self.fcfg = self.settings_arrays(problem, noise, s, eval_every, parallel, sparse_down, down, S, M)
        if self.external is not None:
            self.icfg[loop.I_LOCAL_STEPS] = 1
        self.sp = s.stage_params()
        self.plugins = [st.module for st in s.stage_list() if plugins.is_plugin(st.module)]
        for st in s.stage_list():
            smoke.smoke_test(st, d)  # a plugin's kernels compile and behave, or one error line naming it
        self.nparams = np.asarray(noise_params, dtype=np.float64)
        self.kernel = None  # the compiled loop, chosen at the first chunk
        self.plan = None  # the stages it runs (``signsim.engine.plan``), chosen with it
        self.signature = None  # its argument types
        self.entry = None  # its compiled entry point for them, once the first chunk has run (``_run_loop``)
        self.kinds = None  # the first chunk's ``argument_kinds``: a later chunk with others takes the dispatcher
        self.warm = None  # (family, threaded, signature): the family's one loop to compile in the background
        self.init_history(problem, iters, eval_every)

    @staticmethod
    def settings_arrays(problem, noise, s: Settings, eval_every: int, parallel: bool, sparse_down: bool,
                        down_bits: float, clients: int, workers: int) -> tuple[np.ndarray, np.ndarray]:
        """The loop's ``icfg`` and ``fcfg`` arrays, filled by the names in ``loop.ICFG`` and ``loop.FCFG``
        (``clients``: S, the participants per round; ``workers``: M)."""
        ints = dict(sign_zero=s.sign_zero, tie=s.tie, schedule=s.schedule, byzantine=s.byzantine,
                    eval_every=eval_every, parallel=parallel, tau=tau_code(s.batch_size),
                    problem=problem.code, noise=noise.code, monotone=s.monotone,
                    track_error=s.error_feedback.module.TRACK_ERROR, sparse_down=sparse_down,
                    local_steps=s.local_steps, clients=clients, workers=workers, downlink=s.downlink)
        stages = s.stages()
        for kind, code in stage_kernels.codes(stages).items():  # the stages' codes and flags (signsim.stages.kinds)
            ints[kinds.code_setting(kind)] = code
        for flag, (kind, attr) in kinds.FLAGS.items():
            ints[kinds.flag_setting(flag)] = bool(getattr(stages[kind.name], attr, False))
        floats = dict(lr=s.lr, stop_loss=s.stop_loss, weight_decay=s.weight_decay, down_bits=down_bits,
                      budget=s.budget, server_lr=s.server_lr, prox_mu=s.prox_mu, latency=0.0,
                      server_bandwidth=np.inf, budget_seconds=np.inf)
        ints.update(topology=0, keep=s.keep or 0, catch_up=s.catch_up, buffer=0)
        floats.update(deadline=np.inf, staleness=0.0)
        if s.system is not None:  # the simulated clock's settings (docs/theory.md §14)
            ints["topology"] = s.system.code
            floats.update(latency=s.system.latency, server_bandwidth=s.system.server_bandwidth,
                          budget_seconds=s.system.budget_seconds, deadline=s.system.deadline)
            if s.system.buffer is not None:
                ints["buffer"] = s.system.buffer.size
                floats["staleness"] = s.system.buffer.staleness
        extra = declared(s.estimator.module, "extra_bits", problem.dim, result="pair")  # (SCAFFOLD's control variates)
        floats["extra_up"], floats["extra_down"] = extra
        return (np.array([int(ints[name]) for name in loop.ICFG], dtype=np.int64),
                np.array([float(floats[name]) for name in loop.FCFG], dtype=np.float64))

    def listed(self) -> bool:
        """Whether the loop takes the workers' generators as a typed list (``worker_generators``): the threaded loop,
        and a PyTorch model's run (one loop call a round, whose rows are drawn from the same list)."""
        return self.parallel or self.external is not None

    def bundles(self) -> tuple:
        """The loop's arguments after k0, k1, K: its four named bundles (``loop.ProblemData``, ``loop.Workers``,
        ``loop.Server``, ``loop.RunState``) and the workers' generators, made from the engine's arrays as they are
        now (an interrupt may replace x)."""
        p = self.problem
        return (loop.problem_data(p, self.nparams),
                loop.Workers(self.mom, self.err, self.iwork, self.G, self.msg, self.wbits, self.Y, self.U, self.seen,
                              self.shift),
                loop.Server(self.x, self.srv, self.agg, self.gbuf, self.tally, self.server_gen, self.part,
                            self.opt, self.hbar, self.down, self.diwork, self.system, self.synced),
                loop.RunState(self.icfg, self.fcfg, self.sp, self.x_star, self.hist, self.counters), self.gens)

    def _sample(self, k1: int) -> int:
        """Draw the participants of rounds k..k1-1 (at most ``CHUNK_SLOTS`` slots) into ``part`` and hand the loop
        their generators, made on first use (``participants.sample_rounds``); returns the chunk's end."""
        from signsim.engine.participants import sample_rounds

        k1 = min(k1, self.k + max(1, CHUNK_SLOTS // self.S))
        self.part = np.empty((k1 - self.k, self.S), dtype=np.int64)
        sample_rounds(self.part_gen, np.int64(self.M), self.part, True)
        self.gens = worker_generators([self.streams[m] for m in self.part.ravel().tolist()], self.listed())
        return k1

    def _candidates(self, k1: int) -> None:
        """An asynchronous run's candidate rows for server steps k..k1-1 (``buffered``: a step starts clients at most
        B + 1 times, each time from the next row), after the rows not used yet, at most about ``ROW_SLOTS`` clients
        beyond the B + 2 rows a step may need; the generators of the clients that appear for the first time join the
        loop's list (``Queue.gen_of``: where each client's is)."""
        from signsim.engine.buffered import Q_ROWS_USED
        from signsim.engine.participants import extend, sample_rounds, typed_list

        q, B = self.queue, self.buffer.size
        left = q.rows[int(q.count[Q_ROWS_USED]):]
        want = min((k1 - self.k) * (B + 1) + 1, max(B + 2, ROW_SLOTS // self.S))
        new = np.empty((max(0, want - left.shape[0]), self.S), dtype=np.int64)
        sample_rounds(self.part_gen, np.int64(self.M), new, False)
        fresh = np.unique(new)
        fresh = fresh[q.gen_of[fresh] < 0]
        if fresh.size:
            q.gen_of[fresh] = np.arange(self.known, self.known + fresh.size, dtype=np.int64)
            self.known += fresh.size
            more = [self.streams[m] for m in fresh.tolist()]
            if self.gens is None:
                self.gens = typed_list(more)
            else:
                extend(self.gens, more)
        self.queue = q._replace(rows=np.concatenate([left, new]))
        q.count[Q_ROWS_USED] = 0

    def advance(self, n: int) -> Status:
        if self.external is not None:
            return self._advance_external(n)
        p = self.problem
        k1 = min(self.K, self.k + n)
        if self.buffer is not None:
            if self.S < self.M and (k1 > self.k or self.gens is None):  # (a run of 0 steps still calls the loop)
                self._candidates(k1)
            return self._run_loop(p, self.k, k1, self.K)
        if self.S < self.M and k1 > self.k:
            k1 = self._sample(k1)
        return self._run_loop(p, self.k, k1, self.K)

    def _advance_external(self, n: int) -> Status:
        """n rounds of a run whose gradients come from outside the loop (``ProblemInstance.external``), one loop call
        per round: the participants are drawn, their gradients computed into G, the problem's arrays hold the
        evaluation at x before a round that records history, and the loop runs the round's stages. The rows at the
        end and at the budget are recorded here, after the evaluation at the final x."""
        ext, s = self.external, self.settings
        end = min(self.K, self.k + n)
        budget, seconds = self.fcfg[loop.F_BUDGET], self.fcfg[loop.F_BUDGET_SECONDS]
        while self.k < end:
            if pending():  # a signal held back (``_advance`` in the main thread): the chunk ends at this round
                return self.status
            self._mark = time.perf_counter()
            k = self.k
            if self.S < self.M:
                self._sample(k + 1)
            workers = self.part[0]
            if k % int(self.icfg[loop.I_EVAL_EVERY]) == 0:
                self._evaluate()
                if pending():
                    return self.status
            lr = loop.step_size.py_func(s.schedule, s.lr, k)  # gamma_k, as the loop's local steps take it
            try:  # a signal during a pass drops the round before its loop call: x, k and the bits as it began (its
                # participants and minibatches are drawn: the streams moved on, which an ended run does not see)
                ext.round(self.x, workers, self.gens, lr, self.G, self.checkpoint)
                self.checkpoint()
            except RoundAbandoned:
                return self.status
            # the loop must not record at a budget with a stale evaluation
            self.fcfg[loop.F_BUDGET] = self.fcfg[loop.F_BUDGET_SECONDS] = np.inf
            try:
                status = self._one_round(k)
            finally:
                self.fcfg[loop.F_BUDGET], self.fcfg[loop.F_BUDGET_SECONDS] = budget, seconds
            self._lap("loop")
            if status != Status.OK:
                return status
            done = self.k == self.K
            spent = (self.tally[loop.T_UP] + self.tally[loop.T_DOWN] >= budget
                     or self.tally[clock.T_TIME] >= seconds)
            if done or spent:
                status = self.record_row()
                if status == Status.OK and spent:
                    status = Status.BUDGET
                self.status = status
                return status
        return self.status

    def _one_round(self, k: int) -> Status:
        """Round k in the compiled loop (K + 1 as the run's end: no row at the end, ``_advance_external`` records
        it), through ``_run_loop``."""
        return self._run_loop(self.problem, k, k + 1, self.K + 1)

    def _evaluate(self) -> None:
        """The external problem's evaluation at x (its arrays the history reads), a piece of the rounds (``_lap``)."""
        self._mark = time.perf_counter()
        self.external.evaluate(_float64(self.x))
        self._lap("evaluation")

    def _lap(self, piece: str) -> None:
        """``pieces[piece]`` <- the time since the last lap: the pieces of a model's round (a gradient pass, the
        loop's call, an evaluation), between which a signal can act (``checkpoint``), the model's pieces timed in a
        helper thread counted as their time over HELPER_SLOWDOWN (the loop's call as it is: compiled code runs as
        fast in either). ``simulate`` runs the rounds in the main thread while each is short."""
        now = time.perf_counter()
        here = piece == "loop" or threading.current_thread() is threading.main_thread()
        self.pieces[piece] = (now - self._mark) / (1.0 if here else HELPER_SLOWDOWN)
        self._mark = now

    def checkpoint(self) -> None:
        """Called after each gradient pass of a model's round (by ``Gradients.round`` between its local steps, and
        after it): the pass is timed, and a signal held back (the rounds in the main thread, ``simulate``) abandons
        the round (``RoundAbandoned``) before the loop has changed anything, so that Ctrl-C waits for one pass, not
        a whole round."""
        self._lap("gradient pass")
        if pending():
            raise RoundAbandoned

    def record_row(self) -> Status:
        if self.external is not None:  # the problem's arrays must hold the evaluation at the current x
            self._evaluate()
        return super().record_row()

    def history(self) -> np.ndarray:
        h = super().history()
        if self.external is not None:  # the loop counted H = 1 oracle call per participant and round
            h[:, loop.H_GRAD_CALLS] *= self.settings.local_steps
        return h

    def _run_loop(self, p, k0: int, k1: int, K: int) -> Status:
        """Rounds k0..k1-1 in the compiled loop. The first chunk goes through Numba's dispatcher, which compiles
        or loads the loop; a later one calls the compiled loop's entry point for the first chunk's argument types
        directly, without the dispatcher's typing of every array of the bundles at each call (0.25 ms of a 0.33 ms
        call of an SSDM run at d = 10, M = 32: a fifth of a small model's round; 4 December 2026), once
        ``argument_kinds`` finds its arguments of those types (else it goes through the dispatcher again: an entry
        point fed other types reads their bytes as the types it was compiled for)."""
        if self.buffer is not None:
            return self._run_buffered(p, k0, k1, K)
        entry = self.entry
        if entry:
            bundles = self.bundles()
            if argument_kinds(bundles) == self.kinds:
                try:
                    status = entry(self.plan, np.int64(k0), np.int64(k1), np.int64(K), *bundles)
                except IndexError as e:
                    self._plugin_error(e)
                self.status = self._contract(Status(status))
                self.k = int(self.counters[loop.C_DONE])
                return self.status
            entry = self.entry = None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Numba's type-safety notes on prange indices
            kernel = self.kernel
            if kernel is None:  # chosen once per run (``compose.choose``)
                from numba import typeof

                signature = tuple(typeof(a) for a in (np.int64(0), np.int64(0), np.int64(0), *self.bundles()))
                family, threaded = dispatch.family_of(p.code), bool(self.icfg[loop.I_PARALLEL])
                noise = dispatch.noise_name(int(self.icfg[loop.I_NOISE]))
                kernel, plan, warm_after = compose.choose(family, self.settings.stages(), threaded, signature,
                                                          noise, timed=self.settings.system is not None,
                                                          dtype=self.dtype, module=dispatch.module_name(p.code))
                self.kernel, self.plan, self.signature = kernel, plan, (typeof(plan), *signature)
                if warm_after:  # once this loop has run: the family's one loop, in the background
                    self.warm = (family, threaded, signature)
            compose.check_codes(self.plan, self.icfg)
            try:
                callees = split_compile.compile_loop(self, kernel, self.plan)  # a loop not in the cache: 2 cores
                status = kernel(self.plan, k0, k1, K, *self.bundles())
                if callees:  # the loop and what it called are in the cache now
                    ledger.note(kernel)
                    ledger.record(callees)
                if entry is None:  # (None: not looked up yet; False: no compiled entry for these types)
                    compiled = kernel.overloads.get(self.signature)
                    self.entry = compiled.entry_point if compiled is not None else False
                    self.kinds = argument_kinds(self.bundles())
                if self.warm is not None:
                    from signsim.engine import warm

                    warm.start(*self.warm)
                    self.warm = None
            except Exception as e:
                self._plugin_error(e)
            self.status = self._contract(Status(status))
        self.k = int(self.counters[loop.C_DONE])
        return self.status

    def _run_buffered(self, p, k0: int, k1: int, K: int) -> Status:
        """Server steps k0..k1-1 of an asynchronous run (``buffered.run_buffered``, fewer when its candidate rows run
        out), through Numba's dispatcher, in the plan ``compose.buffered_plan`` chooses: the composition's own, or
        that of every built-in stage (one compile for every composition of built-in stages, as for rounds)."""
        from numba import typeof

        from signsim.engine import buffered

        if self.plan is None:
            family, noise = dispatch.family_of(p.code), dispatch.noise_name(int(self.icfg[loop.I_NOISE]))
            signature = tuple(typeof(a) for a in (np.int64(k0), np.int64(k1), np.int64(K), *self.bundles(),
                                                   self.queue))
            self.plan = compose.buffered_plan(family, self.settings.stages(), signature, noise, self.dtype,
                                              dispatch.module_name(p.code))
        compose.check_codes(self.plan, self.icfg)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Numba's type-safety notes
            try:
                status = buffered.run_buffered(self.plan, np.int64(k0), np.int64(k1), np.int64(K), *self.bundles(),
                                               self.queue)
                if self.kinds is None:  # a chunk has returned: the loop is compiled (``_stopped_at_chunk_start``)
                    self.kinds = argument_kinds(self.bundles())
                    ledger.note(buffered.run_buffered)  # and in the cache (``compose.buffered_plan`` asks)
            except Exception as e:
                self._plugin_error(e)
        self.status = self._contract(Status(status))
        self.k = int(self.counters[loop.C_DONE])
        return self.status

    def _plugin_error(self, e: Exception):
        """Raise ``e``; as one error line naming the run's plugins when they caused it: a kernel's index outside an
        array (plugins' kernels check their indices, ``plugins.bounds_checked``), a loop that does not compile."""
        from numba.core.errors import NumbaError

        names = ", ".join(m.__file__ for m in self.plugins)
        if self.plugins and isinstance(e, IndexError):
            raise StageFault(f"plugin {names}: a kernel indexed outside an array ({e}) in round "
                             f"{int(self.counters[loop.C_DONE])}") from None
        if not (self.plugins and isinstance(e, NumbaError)):
            raise e
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputError(f"plugin {names}: the loop composed with it does not compile: {first}") from None

    def _contract(self, status: Status) -> Status:
        """``status``, or one error line naming the run's plugins when a stage returned what its contract forbids
        (``Status.CONTRACT``: a message's bits not a finite number >= 0, a pre-aggregation's rows outside 1..n)."""
        if status != Status.CONTRACT:
            return status
        k = int(self.counters[loop.C_DONE])
        who = f"plugin {', '.join(m.__file__ for m in self.plugins)}" if self.plugins else "a built-in stage"
        raise StageFault(f"{who}: in round {k}, a stage returned what its contract forbids (a message's bits must "
                         "be a finite number >= 0, a pre-aggregation keeps 1 to n of its n rows)")


def argument_kinds(args) -> tuple:
    """What Numba's type of each argument depends on, read without Numba's typing (microseconds for the loop's
    bundles): an array's dtype, dimensions, layout and writeability; a list's length-free kind (the type of its
    first item); a tuple's items in turn; anything else its Python type. Equal kinds give equal Numba types."""
    out = []
    for a in args:
        if isinstance(a, np.ndarray):
            f = a.flags
            out.append((a.dtype.str, a.ndim, f.c_contiguous, f.f_contiguous, f.writeable, a.dtype.isnative))
        elif isinstance(a, tuple):
            out.append((type(a), argument_kinds(a)))
        elif isinstance(a, list):
            out.append((list, type(a[0]) if a else None))
        else:
            out.append(type(a))
    return tuple(out)


def worker_generators(gens: list[np.random.Generator], listed: bool):
    """The workers' generators as the compiled loop takes them. The serial loop of a built-in problem takes a
    plain list (Numba's reflected list), unboxed at each chunk call generator by generator (microseconds each; a
    chunk is many rounds). With ``listed`` (``Engine.listed``) a ``numba.typed.List``, filled in compiled code
    (``participants.typed_list``: the typed list's own methods would compile again in every process, about a
    second on 2 cores) and unboxed as one object: the threaded loop's threads read it without touching the list's
    reference counts, and a PyTorch model's run, which calls the loop once a round, unboxes nothing per worker.
    Both share the generators' states, so the draws are those of the NumPy replay."""
    if not listed:
        return list(gens)
    from signsim.engine.participants import typed_list

    return typed_list(list(gens))


Hook = tuple[int, Callable[[int, np.ndarray], None]]


#: a PyTorch model's rounds run in the main thread while each piece of them (a gradient pass over the round's
#: minibatches, the loop's call, an evaluation of the history) takes less than this (seconds) there
HERE_SECONDS = 1.0
#: a piece timed in a helper thread took up to this many times its time in the main thread (pfl-research's
#: CIFAR-10 CNN: 1.4-1.5 s against 0.45-0.5 s a gradient pass, 6 December 2026): it counts as its time over this
HELPER_SLOWDOWN = 3.0


class RoundAbandoned(BaseException):
    """A signal arrived between two gradient passes of a model's round (``Engine.checkpoint``). Not an
    ``Exception``: nothing that catches the user's model's errors (``torch.oracle.guarded``) may catch it."""


#: ``error`` of a run interrupted before its first chunk returned (loading or compiling its loop): no history row
NO_ROW_YET = "interrupted while its loop loaded, before its first history row"


def _advance(engine: Engine, step: int, here: bool = False) -> None:
    """``engine.advance(step)`` in a helper thread (``interrupts.interruptible``: the compiled loop releases the
    GIL), so that the main thread acts on Ctrl-C and SIGTERM at once, even when one iteration (a huge
    minibatch) takes minutes or the loop compiles; an abandoned chunk leaves ``engine.abandoned`` holding x as
    the chunk began. ``here``: in the main thread, a signal held back until the piece of the round in progress
    ends (``interrupts.held``; ``Engine.checkpoint``): the rounds of a PyTorch model once its loop is loaded, while
    each piece of them takes less than HERE_SECONDS, where a signal can be held. The results then keep the rounds
    done. In the main thread, torch's OpenMP team runs an operation on a small model 2-3 times faster than from a
    helper thread, and glibc reuses the memory of a large model's freed tensors (a helper thread's allocations
    above 64 MB are fresh mappings, every page faulted in anew: pfl-research's CIFAR-10 CNN took 2.5-3 s a round
    in a helper thread, 1.0 s here, 6 December 2026; ``interface.memory``). (An exception raised by the signal's
    handler wherever the main thread is, inside a call from C into Python, crashed the process.)"""
    if here:
        with held():
            engine.advance(step)
        return
    before = Abandoned(engine.x.copy(), engine.k, int(engine.counters[loop.C_ROWS]), engine.tally.copy(),
                       _idle(engine))
    interruptible(lambda: engine.advance(step), lambda: setattr(engine, "abandoned", before))


@dataclass
class Abandoned:
    """A chunk left to its thread by Ctrl-C: x, k, the history rows and the bits as the chunk began."""

    x: np.ndarray
    k: int
    rows: int
    tally: np.ndarray
    idle: np.ndarray | None = None


def _idle(engine) -> np.ndarray | None:
    """The idle seconds so far on the simulated clock of each worker that took part (a copy; None: no clock)."""
    if getattr(getattr(engine, "settings", None), "system", None) is None:
        return None
    return engine.system[clock.W_IDLE][engine.system[clock.W_ROUNDS] > 0]  # (a copy: the workers that took part)


def _stopped_at_chunk_start(engine) -> np.ndarray:
    """The history of a run whose last chunk was abandoned (it runs on in its thread, writing into the engine's
    arrays): the rows up to the chunk's start and a row there (its x, k and bits), recorded into arrays of its own.
    The error-feedback column of that row is NaN (the memories moved on with the chunk). A model's run keeps its
    rows only (its evaluation would share the chunk's arrays)."""
    a = engine.abandoned
    engine.x, engine.k = a.x, a.k
    hist = engine.history()[:a.rows]
    if getattr(engine, "external", None) is not None or (a.rows and hist[-1, loop.H_ITER] == a.k):
        return hist
    if engine.kinds is None:  # no chunk has returned: the abandoned one is compiling the loop and holds Numba's
        return hist  # compiler lock, which calling the recorder (not compiled yet) would wait for
    row, counters = np.zeros((1, engine.hist.shape[1])), np.zeros_like(engine.counters)
    engine.recorder()(a.k, a.x, np.zeros((1, 1), dtype=engine.err.dtype), np.zeros_like(engine.gbuf), a.tally,
                      *engine.record_bundles(row, counters))
    if engine.icfg[loop.I_TRACK_ERROR]:
        row[0, loop.H_EXTRA] = np.nan
    return np.vstack([hist, row])


def _float64(x: np.ndarray) -> np.ndarray:
    return x if x.dtype == np.float64 else x.astype(np.float64)


def simulate(engine: Engine, progress: Callable[[int, int], None] | None = None,
             hooks: list[Hook] | None = None, keep_failed: bool = False) -> EngineOutput:
    """Run ``engine`` to the end in chunks of about CHUNK_SECONDS; Ctrl-C stops it and keeps the history. A stage's
    fault (``StageFault``) is raised, or with ``keep_failed`` (``signsim run``) ends the run with status "failed",
    its history up to the round before and the fault's line as ``error``.

    ``hooks`` are (every, fn) pairs: fn(k, x_k) is called at every k that is a multiple of ``every`` (k = 0
    included, k = K too), between chunks: chunks end at those iterations; x_k is float64 (a copy when the state
    is float32). A hook must not modify x."""
    start = time.perf_counter()
    status, error = "ok", None
    reached = False
    chunk = 1
    here = False
    hooks = hooks or []
    try:
        for _, fn in hooks:
            fn(0, _float64(engine.x))
        while not engine.finished:
            step = chunk
            for every, _ in hooks:
                step = min(step, every - engine.k % every)
            t = time.perf_counter()
            _advance(engine, step, here)
            check()  # (a signal whose raise was lost, SIGINT ignored: the chunk ended early, and the run ends here)
            ready()
            per_iter = (time.perf_counter() - t) / step
            here = (getattr(engine, "external", None) is not None and can_hold()
                    and max(engine.pieces.values(), default=0.0) < HERE_SECONDS)
            chunk = int(min(max(1, CHUNK_SECONDS / max(per_iter, 1e-9)), 1_000_000))
            if engine.status in (Status.OK, Status.BUDGET):
                for every, fn in hooks:
                    if engine.k % every == 0 and engine.k > 0:
                        fn(engine.k, _float64(engine.x))
            if progress is not None:
                progress(engine.k, engine.K)
        if engine.status == Status.DIVERGED:
            status = "diverged"
        elif engine.status == Status.BUDGET:
            status = "budget"
        reached = engine.status == Status.TARGET
    except StageFault as e:  # the history up to the faulty round is kept; the round itself is not recorded
        if not keep_failed:
            raise
        status, error = "failed", str(e)
        engine.k = int(engine.counters[loop.C_DONE])
    except KeyboardInterrupt:
        acknowledge()
        status = "interrupted"
        a = engine.abandoned
        if a is not None:  # the chunk still runs in its thread, writing into the engine's arrays and attributes
            # (k, status, tally, x, its history rows): the output is made of the state as the chunk began only
            x, tally = a.x.copy(), a.tally.copy()
            history = _stopped_at_chunk_start(engine)
            why = None if len(history) else NO_ROW_YET  # its first chunk was loading (or compiling) the loop
            return EngineOutput(history, status, a.k, time.perf_counter() - start, x, reached, tally, a.idle, why)
        engine.k = int(engine.counters[loop.C_DONE])
        engine.record_now()
    return EngineOutput(engine.history(), status, engine.k, time.perf_counter() - start, engine.x.copy(), reached,
                        engine.tally.copy(), _idle(engine), error)
