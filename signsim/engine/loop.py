"""The compiled iteration loop: every iteration of a run happens inside ``run_chunk`` (docs/theory.md §2).

One iteration k, for each worker m (in parallel over workers when ``parallel`` is set):

    g   = oracle_m(x) + mean of tau noise draws          (problem kernel, then noise kernel)
    v   = momentum stage: g; EMA m_m <- beta m_m + (1 - beta) g (m_0 = g for SSDM); or Lion
          v = beta1 m_m + (1 - beta1) g, then m_m <- beta2 m_m + (1 - beta2) g
    msg = estimator, compressor and error-feedback stages: C(v); EF p = gamma_k v + e_m, msg = C(p), e_m <- p - msg;
          EF21 msg = C(v - g_m), g_m <- g_m + msg; DIANA msg = C(v - h_m), h_m <- h_m + alpha msg; CLAG (a lazy
          error feedback) sends nothing, 0 bits, unless ||v - g_m||^2 > zeta ||v - y_m||^2; MARINA (a two-point
          estimator) compresses g(x_k) - g(x_{k-1}), and in a round its coin makes "fresh" every worker sends its
          exact gradient instead (``full_round``, §8.10)
    msg = attack(msg)                                    (the first ``n_byzantine`` workers only)

then the omniscient attacks (ALIE, IPM; the searching ones, alie-opt and ipm-opt, first find their factor by a line
search through the round's own aggregation, §8.5) replace the Byzantine rows from the honest ones, a chain of up to
three pre-aggregations transforms the messages (NNM, bucketing, clipping; §8.9), the server sums
the messages coordinate by coordinate in worker order (so the result does not depend on the thread count)
and turns the sum into the broadcast (mean, or majority vote with its tie rule), or takes the coordinate-wise
median or trimmed mean; EF21's server adds the broadcast to its running g. Then x <- x - gamma_k * direction
(x <- x - broadcast for EF, whose gamma sits inside the message), plus gamma_k lambda x with weight decay;
with ``monotone`` the step is taken only if it does not increase f (signSGD's "option 2"). The bits of every
message and broadcast are counted as they are produced (docs/theory.md §7, §8).

An iteration is a federated round (docs/theory.md §12): the server first samples the round's S participants
(``participants.sample_rounds``, from a stream of its own, drawn by the driver ahead of each chunk of rounds; none
drawn when S = M), only they run the steps above, with
g replaced by the sum of H local SGD gradients (``local_gradient``; H = 1 is the gradient itself; FedProx's proximal
term and SCAFFOLD's control variates enter each local gradient, §12.5, §12.6), in slots
0..S-1 of the per-round buffers; the server aggregates those S messages and steps x <- x - server_lr gamma_k
direction (x <- x - server_lr direction for EF), or by the server optimizer's update made from the direction
(FedAvgM, FedAdam; docs/theory.md §12.4).

Each worker draws only from its own generator, the server only from its own, so a run is reproducible whatever the
number of Numba threads. The loop is one function, ``run_rounds``, compiled with threads and without
(``run_chunk_threaded``, ``run_chunk``; a small run loads only the serial one) once for each plan it is given: its first
argument (``signsim.engine.plan``), whose Numba type says which problem and noise kernels the calls
``problem_oracle(problems, code, ...)``, ``add_noise(problems, ...)``, ... reach (the family of problems, so that a run
compiles no other family's kernels, or one problem kernel module of it, and the noise model) and which stages
``compress(stages, code, ...)``, ``momentum_step(stages, code, ...)``, ... reach: every built-in stage, the stage's code
in ``icfg`` picking it, so that one compiled loop runs every composition of built-in stages, or one composition's own
stages (``signsim.engine.compose`` chooses; a plugin's kernels are called by address in the one loop). The driver
calls it for consecutive ranges of iterations (the state lives in the arrays of the four bundles it passes:
``ProblemData``, ``Workers``, ``Server``, ``RunState``), which lets a progress bar and Ctrl-C act between chunks.
"""

from collections import namedtuple

import numpy as np
from numba import njit, prange
from numba import types as nbtypes
from numba.extending import overload

from signsim import history
from signsim.codes import Schedule, SignZero, Status, Tie
from signsim.engine import clock
from signsim.engine.compress import sparse_broadcast_bits
from signsim.engine.dispatch import (  # the calls on the problem and noise kernels, by the plan's problems
    check_noise,
    check_problem,
    noisy_gradient,
    overloaded,
    problem_accuracy,
    problem_evaluate,
    problem_loss,
    problem_test_loss,
)
from signsim.engine.plan import (  # the calls on the stages, by the plan's stages
    StagesType,
    attack_row,
    attack_rows,
    clock_advance,
    clock_advance_all,
    clock_select,
    compress,
    compress_down,
    down_ef_after,
    down_ef_before,
    down_ef_direction,
    ef_after,
    ef_before,
    ef_direction,
    ef_sends,
    est_after,
    est_before,
    est_direction,
    est_fresh,
    finish_aggregate,
    momentum_step,
    pre_aggregate,
    pre_aggregate_2,
    pre_aggregate_3,
    robust_aggregate,
    searches,
    server_update,
    worker_plan,
)
from signsim.stages import kinds
from signsim.stages.base import FLOAT_BITS

#: the loop's arguments, in four named bundles (``run_chunk``): what the problem and the noise model read, each
#: worker's state and the per-slot buffers of a round, the server's state, and the run's settings and records;
#: the workers' generators come apart (a list: a bundle holding it could not go to the worker step, which runs
#: without Numba's runtime).
#: The driver (``engine/driver.py``) allocates them; the stages declare what they need in them (a stage's ``STATE``:
#: one row per worker in ``mom`` or ``err``; ``SCRATCH``: index scratch per slot in ``iwork``; else a 1 x 1
#: placeholder)
ProblemData = namedtuple("ProblemData", "pf pi A b ptr idx nparams")


def problem_data(problem, nparams=None) -> ProblemData:
    """The arrays of ``problem`` (a ``ProblemInstance``) and the noise model's parameters ``nparams`` (none: zeros)
    as the compiled kernels take them: one ``ProblemData``."""
    from signsim.noise.base import N_NOISE_PARAMS

    nparams = np.zeros(N_NOISE_PARAMS) if nparams is None else np.asarray(nparams, dtype=np.float64)
    return ProblemData(problem.pf, problem.pi, problem.A, problem.b, problem.ptr, problem.idx, nparams)

Workers = namedtuple("Workers", "mom err iwork G msg wbits Y U seen shift")
Server = namedtuple("Server", "x srv agg gbuf tally gen part opt hbar down diwork system synced")
RunState = namedtuple("RunState", "icfg fcfg sp x_star hist counters")

#: integer settings, by name, in the order of the ``icfg`` array (the driver fills it by these names)
ICFG = ("sign_zero", "tie", "schedule", "byzantine", "eval_every", "parallel", "tau", "problem", "noise", "monotone",
        "track_error", "sparse_down", "local_steps", "clients", "workers", "downlink", "topology", "keep", "catch_up",
        "buffer",
        # the run's stage of each kind, by its code (``signsim.engine.plan``), and the stages' flags
        *(kinds.code_setting(k) for k in kinds.NAMES), *(kinds.flag_setting(f) for f in kinds.FLAGS))
#: float settings, by name, in the order of ``fcfg`` (``lr``: gamma_0 of the local step size, docs/theory.md §12)
FCFG = ("lr", "stop_loss", "weight_decay", "down_bits", "budget", "server_lr", "prox_mu", "extra_up", "extra_down",
        "latency", "server_bandwidth", "budget_seconds", "deadline", "staleness")
(I_SIGN_ZERO, I_TIE, I_SCHEDULE, I_BYZANTINE, I_EVAL_EVERY, I_PARALLEL, I_TAU, I_PROBLEM, I_NOISE, I_MONOTONE,
 I_TRACK_ERROR, I_SPARSE_DOWN, I_LOCAL_STEPS, I_CLIENTS, I_WORKERS, I_DOWNLINK, I_TOPOLOGY, I_KEEP, I_CATCH_UP,
 I_BUFFER) = range(20)
(I_CODE_MOMENTUM, I_CODE_COMPRESSOR, I_CODE_ERROR_FEEDBACK, I_CODE_AGGREGATION, I_CODE_ATTACK,
 I_CODE_SERVER_OPTIMIZER, I_CODE_ESTIMATOR, I_CODE_DOWN_COMPRESSOR, I_CODE_DOWN_ERROR_FEEDBACK,
 I_CODE_PRE_AGGREGATION, I_CODE_PRE_AGGREGATION_2, I_CODE_PRE_AGGREGATION_3) = (
    ICFG.index(kinds.code_setting(k)) for k in ("momentum", "compressor", "error_feedback", "aggregation", "attack",
                                                "server_optimizer", "estimator", "down_compressor",
                                                "down_error_feedback", "pre_aggregation", "pre_aggregation_2",
                                                "pre_aggregation_3"))
I_STEP_SCALED, I_SUMMED, I_OMNISCIENT, I_INCREMENTS, I_CORRECTS, I_SEARCH, I_TWO_POINT, I_LAZY = (
    ICFG.index(kinds.flag_setting(f)) for f in ("STEP_SCALED", "SUMMED", "OMNISCIENT", "INCREMENTS", "CORRECTS",
                                                "SEARCH", "TWO_POINT", "LAZY"))
N_ICFG = len(ICFG)
(F_LR, F_STOP_LOSS, F_WEIGHT_DECAY, F_DOWN_BITS, F_BUDGET, F_SERVER_LR, F_PROX_MU, F_EXTRA_UP, F_EXTRA_DOWN, F_LATENCY,
 F_SERVER_BANDWIDTH, F_BUDGET_SECONDS, F_DEADLINE, F_STALENESS) = range(len(FCFG))
#: rows of ``sp``, the stages' parameters: one row for the stage of each kind (``kinds.NAMES``, in that order), its
#: kernels' ``p`` (``signsim.stages.base``); momentum's holds (beta, beta2)
SP_ROW = {kind: row for row, kind in enumerate(kinds.NAMES)}
(SP_MOMENTUM, SP_COMPRESSOR, SP_AGGREGATION, SP_ATTACK, SP_SERVER_OPTIMIZER, SP_ESTIMATOR, SP_DOWN_COMPRESSOR,
 SP_PRE_AGGREGATION, SP_PRE_AGGREGATION_2, SP_PRE_AGGREGATION_3, SP_ERROR_FEEDBACK) = (
    SP_ROW[k] for k in ("momentum", "compressor", "aggregation", "attack", "server_optimizer", "estimator",
                        "down_compressor", "pre_aggregation", "pre_aggregation_2", "pre_aggregation_3",
                        "error_feedback"))
N_SP = len(SP_ROW)
#: rows of the server's ``down`` state with a compressed downlink (docs/theory.md §8.8): the update u before
#: compression, the error feedback's scratch (its ``g``), the broadcast C(.), its memory e (or EF21's w), its
#: server-side running sum (EF21)
D_UPDATE, D_SCRATCH, D_OUT, D_MEMORY, D_SERVER = range(5)
# ``counters``: history rows written, iterations completed
C_ROWS, C_DONE = 0, 1
# ``tally``: bits sent so far, up (all messages) and down (every broadcast times its recipients: the round's S
# participants, every worker for a two-point estimator); the
# most bits sent up in one iteration; the oracle calls of a two-point estimator's run (MARINA: M in a round of
# exact gradients, 2 S in another; otherwise the history counts S H a round); then the simulated clock's entries
# (``signsim.engine.clock``: seconds so far, and their parts computing, uploading and downloading)
T_UP, T_DOWN, T_UP_MAX, T_CALLS = 0, 1, 2, 3
N_TALLY = 8
#: history columns, in order (declared in ``signsim/history.py``)
HIST = history.KEYS
H_ITER, H_LOSS, H_GRAD_L2, H_GRAD_L1, H_DIST, H_EXTRA, H_TRAIN_ACC, H_TEST_ACC, H_BITS_UP, H_BITS_DOWN = map(
    history.index, ("iter", "loss", "grad_l2", "grad_l1", "distance", "extra", "train_acc", "test_acc", "bits_up",
                    "bits_down"))
H_TEST_LOSS = history.index("test_loss")
H_GRAD_CALLS = history.index("grad_calls")
H_TIME = history.index("time")
N_HIST = history.N_COLUMNS


def worker_gen(gens, m):
    """Worker m's generator: unchecked access in a typed list (a bounds check could raise, and a raise makes
    the parallel loop run serially), plain indexing in the serial loop's reflected list."""
    return gens[m]


@overload(worker_gen, inline="always")
def _worker_gen(gens, m):
    if isinstance(gens, nbtypes.ListType):
        return lambda gens, m: gens.getitem_unchecked(m)
    return lambda gens, m: gens[m]


@njit(cache=True)
def step_size(schedule, lr0, k):
    """gamma_k = gamma_0 (constant) or gamma_0 / sqrt(k + 1) (sqrt), docs/theory.md §2."""
    if schedule == Schedule.SQRT:
        return lr0 / np.sqrt(k + 1.0)
    if schedule == Schedule.CONSTANT:
        return lr0
    raise ValueError("unknown schedule code")


# Compiled without Numba's runtime: nothing on a worker's path allocates (integer scratch comes in ``iwork``,
# indices are drawn by ``signsim.draws``), so its array views and arguments cost no atomic reference counts,
# which otherwise made up over half of a small problem's step. Kernels it calls that must allocate (the MLP
# oracle's scratch) ask for the runtime themselves; none returns an array.
@njit(cache=True, _nrt=False)
def worker_gradient(problems, m, x, g, gen, data, icfg):
    """g <- worker m's stochastic gradient at x: the problem's oracle, then the noise model. Compiled once per plan's
    ``problems`` (family of problems and noise model, ``signsim.engine.plan``) and shared by every composition of
    stages, so that a new composition compiles only its own small ``worker_step`` and loop."""
    noisy_gradient(problems, icfg[I_PROBLEM], icfg[I_NOISE], x, m, gen, icfg[I_TAU], data, g)


# A round's H local steps, inlined into the worker step that calls it once: a call of its own passed about a hundred
# scalar arguments (the data bundle, the round's buffers) at every worker step, which made SSDM's step on Rosenbrock
# (d = 10, M = 32) 9 to 10 us an iteration against 7 to 8 inlined (4 December 2026), at the same compile time
@njit(inline="always", _nrt=False)
def local_gradient(problems, m, j, lr, mu, x, workers, gen, data, icfg, cm, c):
    """Worker m's pseudo-gradient of the round in slot j (docs/theory.md §12), in the rows j of the ``workers``'
    buffers: with H = 1 its stochastic gradient at x, in G[j]; with H > 1 the exact sum u = sum_{h<H} g(y^h) of its
    H local SGD steps y^{h+1} = y^h - lr g(y^h) from y^0 = x, in U[j] (Y[j] holds y^h, G[j] each g(y^h)). With
    FedProx's weight mu > 0 (§12.5) each g(y^h) is the proximal one, g(y^h) + mu (y^h - x), so that x - lr u is
    still the local iterate y^H. With an estimator that corrects the local gradients (its CORRECTS flag: SCAFFOLD,
    §12.6) each is then g + c - cm, cm the worker's state (its shift, c_m) and c the server's (hbar[0])."""
    H = icfg[I_LOCAL_STEPS]
    g = workers.G[j]
    if H == 1:
        worker_gradient(problems, m, x, g, gen, data, icfg)
        if icfg[I_CORRECTS]:
            for i in range(g.shape[0]):
                g[i] += c[i] - cm[i]
        return
    y = workers.Y[j]
    u = workers.U[j]
    d = x.shape[0]
    for i in range(d):
        y[i] = x[i]
    for h in range(H):
        worker_gradient(problems, m, y, g, gen, data, icfg)
        if mu != 0.0:  # (zero at h = 0, where y = x)
            for i in range(d):
                g[i] += mu * (y[i] - x[i])
        if icfg[I_CORRECTS]:
            for i in range(d):
                g[i] += c[i] - cm[i]
        if h == 0:
            for i in range(d):
                u[i] = g[i]
        else:
            for i in range(d):
                u[i] += g[i]
        if h < H - 1:
            for i in range(d):
                y[i] -= lr * g[i]


# The worker step, and the worker's stage kernels in it, are inlined into the loop by LLVM (``forceinline``):
# Numba's own ``inline="always"`` would inline its IR into a loop lowered with reference counts, while the step
# (compiled without Numba's runtime) returns views it did not count. Called instead, the step took about 40 ns
# a worker and round passing its arguments (about 180 machine words), and its kernels another 1 us of an SSDM
# iteration's 5.5 on Rosenbrock (d = 10, M = 32; 4 December 2026)
@njit(cache=True, _nrt=False, forceinline=True)
def worker_step(plan, m, j, k, lr, x, hbar, workers, gen, data, run):
    """Worker m's round, in slot j of the round's participants: pseudo-gradient (``local_gradient``), momentum,
    error feedback, compression, attack (the composed stages, their parameters and codes in ``run``, the
    ``RunState``). The momentum stage sees the worker's own round count (its rounds so far; k with full
    participation)."""
    icfg, sp = run.icfg, run.sp
    mom, err, iwork, G, msg, wbits = workers.mom, workers.err, workers.iwork, workers.G, workers.msg, workers.wbits
    seen = workers.seen
    shift = workers.shift
    h = shift[0] if shift.shape[0] == 1 else shift[m]  # 1 x 1 without an estimator's shift
    problems, stages = plan.problems, plan.stages
    local_gradient(problems, m, j, lr, run.fcfg[F_PROX_MU], x, workers, gen, data, icfg, h, hbar[0])
    g = G[j] if icfg[I_LOCAL_STEPS] == 1 else workers.U[j]
    if icfg[I_TWO_POINT]:  # MARINA's difference: minus the oracle at the previous iterate hbar[2] (H = 1, exact)
        gp = workers.Y[j]
        worker_gradient(problems, m, hbar[2], gp, gen, data, icfg)
        for i in range(g.shape[0]):
            g[i] -= gp[i]
    mm = mom[0] if mom.shape[0] == 1 else mom[m]  # mom is a 1 x 1 placeholder without momentum
    si = 0 if seen.shape[0] == 1 else m  # seen has one entry without a momentum state
    v = momentum_step(stages, icfg[I_CODE_MOMENTUM], seen[si], g, mm, sp[SP_MOMENTUM])
    seen[si] += 1
    out = msg[j]
    e = err[0] if err.shape[0] == 1 else err[m]  # err is a 1 x 1 placeholder without error feedback
    v = est_before(stages, icfg[I_CODE_ESTIMATOR], v, g, h, sp[SP_ESTIMATOR])
    # a Byzantine worker sends every round (the lazy rule is the honest workers')
    if icfg[I_LAZY] and m >= icfg[I_BYZANTINE] and not ef_sends(stages, icfg[I_CODE_ERROR_FEEDBACK], k, v, e,
                                                               sp[SP_ERROR_FEEDBACK]):
        for i in range(out.shape[0]):  # nothing sent (CLAG's trigger not met, §8.2): the server adds nothing
            out[i] = 0.0
        wbits[j] = 0.0
    else:
        u = ef_before(stages, icfg[I_CODE_ERROR_FEEDBACK], lr, v, g, e)
        iw = iwork[0] if iwork.shape[0] == 1 else iwork[j]  # 1 x 1 without a sparsifier
        wbits[j] = compress(stages, icfg[I_CODE_COMPRESSOR], u, out, sp[SP_COMPRESSOR], icfg[I_SIGN_ZERO], gen, iw)
        ef_after(stages, icfg[I_CODE_ERROR_FEEDBACK], e, out)
    est_after(stages, icfg[I_CODE_ESTIMATOR], h, hbar, out, sp[SP_ESTIMATOR], icfg[I_LOCAL_STEPS])
    if m < icfg[I_BYZANTINE]:
        attack_row(stages, icfg[I_CODE_ATTACK], out, sp[SP_ATTACK], gen)


@njit(inline="always")  # inlined: its sum over the messages stays a parallel loop in the threaded loop
def server_aggregate(stages, rows, n0, agg, icfg, sp, gen):
    """The round's chain of pre-aggregations on its n0 messages ``rows`` (in place), then the aggregation into
    ``agg`` (docs/theory.md §8.4, §8.9)."""
    d = agg.shape[0]
    n1 = pre_aggregate(stages, icfg[I_CODE_PRE_AGGREGATION], rows, n0, sp[SP_PRE_AGGREGATION], gen)
    if not 1 <= n1 <= n0:  # a pre-aggregation keeps 1..n of its n rows (a plugin's rows(), checked every round)
        return False
    n2 = pre_aggregate_2(stages, icfg[I_CODE_PRE_AGGREGATION_2], rows, n1, sp[SP_PRE_AGGREGATION_2], gen)
    if not 1 <= n2 <= n1:
        return False
    n = pre_aggregate_3(stages, icfg[I_CODE_PRE_AGGREGATION_3], rows, n2, sp[SP_PRE_AGGREGATION_3], gen)
    if not 1 <= n <= n2:
        return False
    if icfg[I_SUMMED]:
        for i in prange(d):
            s = 0.0
            for j in range(n):
                s += rows[j, i]
            agg[i] = s
        finish_aggregate(stages, icfg[I_CODE_AGGREGATION], agg, n, sp[SP_AGGREGATION], icfg[I_TIE], gen)
    else:
        robust_aggregate(stages, icfg[I_CODE_AGGREGATION], rows[:n], agg, sp[SP_AGGREGATION])
    return True


@njit(cache=True)
def attack_factor(stages, rows, nb, agg, icfg, sp, gen):
    """The factor of a searching attack (its SEARCH flag: alie-opt, ipm-opt; docs/theory.md §8.5) for this round: the
    one that puts the aggregate of the round's messages, after the run's pre-aggregations and aggregation, farthest
    from the mean of the honest rows nb.. (ByzFL's expansion-contraction search: from START, step DELTA doubled while
    the distance grows, then times RATIO, EVALS evaluations; the attack's parameters). ``agg`` (the previous
    aggregate, where centred clipping starts) is left as it was."""
    p = sp[SP_ATTACK]
    evals, ratio = int(p[0]), p[3]
    S, d = rows.shape
    mean = np.zeros(d)
    for j in range(nb, S):
        for i in range(d):
            mean[i] += rows[j, i]
    for i in range(d):
        mean[i] /= S - nb
    q = np.zeros(p.shape[0])
    trial = np.empty((S, d), dtype=rows.dtype)
    out = np.empty(d, dtype=agg.dtype)
    best_x = p[1]
    best_y = -1.0
    delta = p[2]
    expanding = True
    for e in range(evals):
        x = best_x if e == 0 else best_x + delta
        q[0] = x
        for j in range(S):
            for i in range(d):
                trial[j, i] = rows[j, i]
        for i in range(d):
            out[i] = agg[i]
        attack_rows(stages, icfg[I_CODE_ATTACK], trial, nb, q)
        server_aggregate(stages, trial, S, out, icfg, sp, gen)
        y = 0.0
        for i in range(d):
            y += (out[i] - mean[i]) ** 2
        y = np.sqrt(y)
        if e == 0:
            best_y = y
        elif expanding:
            if y > best_y:
                best_x, best_y = x, y
                delta *= 2.0
            else:
                delta *= ratio
                expanding = False
        else:
            if y > best_y:
                best_x, best_y = x, y
            delta *= ratio
    return best_x


@njit(inline="always")
def server_direction(stages, icfg, agg, server, sp, n, M, k):
    """The server's step direction from the aggregate ``agg`` of n messages (of M workers) in round k: the error
    feedback's, then the estimator's, then the server optimizer's (docs/theory.md §8, §12.4)."""
    direction = est_direction(stages, icfg[I_CODE_ESTIMATOR],
                              ef_direction(stages, icfg[I_CODE_ERROR_FEEDBACK], agg, server.srv), server.hbar,
                              sp[SP_ESTIMATOR], n, M, icfg[I_LOCAL_STEPS])
    return server_update(stages, icfg[I_CODE_SERVER_OPTIMIZER], direction, server.opt, sp[SP_SERVER_OPTIMIZER], k)


@njit(inline="always")
def move(problems, icfg, x, direction, scale, lr, wd, trial, data):
    """x <- x - scale direction (- lr wd x with weight decay); with ``monotone``, only if f does not increase
    (signSGD's "option 2": x <- argmin{f(x), f(x - step)}, f from the problem's ``data``; ``trial``: scratch of
    length d)."""
    pf, pi, A, b = data.pf, data.pi, data.A, data.b
    d = x.shape[0]
    if icfg[I_MONOTONE]:
        for i in range(d):
            if wd != 0.0:
                trial[i] = x[i] - (scale * direction[i] + lr * wd * x[i])
            else:
                trial[i] = x[i] - scale * direction[i]
        before = problem_loss(problems, icfg[I_PROBLEM], x, pf, pi, A, b)
        if problem_loss(problems, icfg[I_PROBLEM], trial, pf, pi, A, b) <= before:
            for i in range(d):
                x[i] = trial[i]
    elif wd != 0.0:
        for i in range(d):
            x[i] -= scale * direction[i] + lr * wd * x[i]
    else:
        for i in range(d):
            x[i] -= scale * direction[i]


def _searching(stages, rows, nb, agg, icfg, sp, gen):
    return attack_factor(stages, rows, nb, agg, icfg, sp, gen)


def _not_searching(stages, rows, nb, agg, icfg, sp, gen):
    return 0.0  # (never called: the loop searches only under the SEARCH flag of its composition's attack)


#: ``attack_factor`` for a loop whose stages may search (``plan.searches``), else nothing to compile: a composition
#: whose attack does not search (most) skips the line search's compile, and that of the aggregation inside it
search_factor = overloaded("search_factor", "stages, rows, nb, agg, icfg, sp, gen", __name__,
                           lambda t: t.plan_key if isinstance(t, StagesType) else None,
                           lambda t: _searching if searches(t) else _not_searching)


@njit(cache=True)
def record(problems, k, x, err, gbuf, tally, data, run):
    """Append one history row at iterate x_k to ``run.hist`` (the gradient in ``gbuf``, the workers' error-feedback
    memories ``err``, the bits and the clock so far in ``tally``; the problem's ``data``, a ``ProblemData``);
    return Status.DIVERGED when the loss or the iterate is not finite, Status.TARGET when the loss is at or below
    the stop-loss target, else Status.OK."""
    pf, pi, A, b = data.pf, data.pi, data.A, data.b
    icfg, fcfg, x_star, hist, counters = run.icfg, run.fcfg, run.x_star, run.hist, run.counters
    loss, train_acc = problem_evaluate(problems, icfg[I_PROBLEM], x, pf, pi, A, b, gbuf)
    l1 = 0.0
    l2 = 0.0
    for i in range(gbuf.shape[0]):
        l1 += abs(gbuf[i])
        l2 += gbuf[i] * gbuf[i]
    dist = np.nan
    if x_star.shape[0] > 0:
        dist = 0.0
        for i in range(x.shape[0]):
            dist += (x[i] - x_star[i]) ** 2
        dist = np.sqrt(dist)
    extra = np.nan
    if icfg[I_TRACK_ERROR]:  # mean over workers of ||e_m||_2
        extra = 0.0
        for m in range(err.shape[0]):
            s = 0.0
            for i in range(err.shape[1]):
                s += np.float64(err[m, i]) * np.float64(err[m, i])  # float64 sums also for float32 state (--dtype)
            extra += np.sqrt(s)
        extra /= err.shape[0]
    r = counters[C_ROWS]
    hist[r, H_ITER] = k
    hist[r, H_LOSS] = loss
    hist[r, H_GRAD_L2] = np.sqrt(l2)
    hist[r, H_GRAD_L1] = l1
    hist[r, H_DIST] = dist
    hist[r, H_EXTRA] = extra
    hist[r, H_TRAIN_ACC] = train_acc
    hist[r, H_TEST_ACC] = problem_accuracy(problems, icfg[I_PROBLEM], x, pf, pi, A, b, True)
    hist[r, H_TEST_LOSS] = problem_test_loss(problems, icfg[I_PROBLEM], x, pf, pi, A, b)
    # S H oracle calls per round (§12), or as a two-point estimator's rounds or an asynchronous run's clients made them
    hist[r, H_GRAD_CALLS] = (tally[T_CALLS] if icfg[I_TWO_POINT] or icfg[I_BUFFER]
                             else k * icfg[I_CLIENTS] * icfg[I_LOCAL_STEPS])
    hist[r, H_BITS_UP] = tally[T_UP]
    hist[r, H_BITS_DOWN] = tally[T_DOWN]
    hist[r, H_TIME] = tally[clock.T_TIME] if icfg[I_TOPOLOGY] != 0 else np.nan  # (no system model: no clock)
    counters[C_ROWS] = r + 1
    if not (np.isfinite(loss) and np.isfinite(l2) and np.all(np.isfinite(x))):
        return Status.DIVERGED
    if loss <= fcfg[F_STOP_LOSS]:
        return Status.TARGET
    return Status.OK


@njit(inline="always")  # inlined: its workers stay a parallel loop in the threaded loop
def full_round(problems, x, agg, G, gens, data, icfg, M):
    """agg <- the mean over all M workers of their exact gradients at x (a round of MARINA's c_k = 1, §8.10),
    computed S at a time in the slots of ``G`` and summed in worker order (so the thread count changes nothing).
    The oracle draws nothing (the run checked it is exact), so each slot is handed the first generator."""
    d = x.shape[0]
    S = G.shape[0]
    gen = worker_gen(gens, 0)
    for i in range(d):
        agg[i] = 0.0
    for m0 in range(0, M, S):
        n = min(S, M - m0)
        for j in prange(n):
            worker_gradient(problems, m0 + j, x, G[j], gen, data, icfg)
        for j in range(n):
            for i in range(d):
                agg[i] += G[j, i]
    for i in range(d):
        agg[i] /= M


@njit(cache=True)
def check_settings(sign_zero, tie):
    """Raise for an unknown sign(0) or tie code (the loop calls this before its parallel part)."""
    if not (sign_zero == SignZero.RANDOM or sign_zero == SignZero.PLUS or sign_zero == SignZero.ZERO):
        raise ValueError("unknown sign-zero code")
    if not (tie == Tie.RANDOM or tie == Tie.ZERO):
        raise ValueError("unknown tie code")


def run_rounds(plan, k0, k1, K, data, workers, server, run, gens):
    """Run rounds k0 <= k < k1 of a K-round run; record history every ``eval_every`` rounds and at k = K, or at
    the first round whose bits (up + down) reach the budget ``fcfg[F_BUDGET]``, where the run stops with
    Status.BUDGET (docs/theory.md §12). The arguments are the four bundles (``ProblemData``, ``Workers``,
    ``Server``, ``RunState``) and the workers' generators. Returns a Status; ``counters`` holds the rows written
    and the rounds completed, ``tally`` the bits sent. Round k's S participants (``part[k - k0]``, ascending, drawn
    by the driver before the chunk; ``part[0]`` = 0..M-1 when every worker takes part) fill the slots 0..S-1 of
    ``G``, ``msg``, ``wbits``, ``Y`` and ``U``; the Byzantine ones (worker index < ``byzantine``) come first. Worker
    m's generator in round k is ``gens[(k - k0) S + j]`` for slot j (``gens[m]`` when every worker takes part)."""
    problems, stages = plan.problems, plan.stages
    err, G, msg, wbits = workers.err, workers.G, workers.msg, workers.wbits
    x, agg, gbuf, tally = server.x, server.agg, server.gbuf, server.tally
    server_gen, part = server.gen, server.part
    icfg, fcfg, sp, counters = run.icfg, run.fcfg, run.sp, run.counters
    M = icfg[I_WORKERS]
    d = x.shape[0]
    S = icfg[I_CLIENTS]
    sampled = S < M
    lr0 = fcfg[F_LR]
    wd = fcfg[F_WEIGHT_DECAY]
    every = icfg[I_EVAL_EVERY]
    B = icfg[I_BYZANTINE]
    check_settings(icfg[I_SIGN_ZERO], icfg[I_TIE])
    check_problem(problems, icfg[I_PROBLEM])
    check_noise(icfg[I_NOISE])
    topology = icfg[I_TOPOLOGY]  # the simulated clock's (0: no system model, no clock; docs/theory.md §14)
    # every worker, for the clock: a two-point estimator's broadcast goes to every worker, its full rounds come from
    # every worker
    everyone = np.arange(M if topology != 0 and icfg[I_TWO_POINT] else 0)
    steps = icfg[I_LOCAL_STEPS] * (2 if icfg[I_TWO_POINT] else 1)  # the gradients a participant computes a round
    # a deadline or over-selection (§14.5): the server aggregates the slots ``kept[:n_in]``, ascending
    selecting = fcfg[F_DEADLINE] < np.inf or icfg[I_KEEP] > 0
    kept = np.arange(S)
    # a participant that does not hold the current model first downloads it (§12, "catch-up"): ``synced[m]``, the
    # version of the model worker m holds, ``synced[M]`` the server's (the rounds so far in which x moved; 0: x_0);
    # pre[j], slot j's download
    catching = icfg[I_CATCH_UP] != 0 and sampled
    pre = np.zeros(S)
    synced = server.synced
    for k in range(k0, k1):
        if k % every == 0:
            status = record(problems, k, x, err, gbuf, tally, data, run)
            if status != Status.OK:
                return status
        lr = step_size(icfg[I_SCHEDULE], lr0, k)
        row = k - k0 if sampled else 0
        fresh = est_fresh(stages, icfg[I_CODE_ESTIMATOR], k, server.hbar, sp[SP_ESTIMATOR], server_gen)
        n = M if fresh else S  # the messages the round's aggregate is made of
        # who receives the broadcast: the round's participants; every worker for a two-point estimator (MARINA's g
        # is kept by every worker, so each needs every round's broadcast, §8.10)
        recv = M if icfg[I_TWO_POINT] else S
        silent = False  # a lazy method's round in which no participant sent anything (below)
        empty = False  # a round in which no message reached the server in time (§14.5): no server step
        cut = np.inf  # when the server stopped waiting (§14.5)
        if fresh:
            # every worker sends its exact gradient at x, uncompressed, and receives their mean as floats (MARINA's
            # c_k = 1, §8.10)
            full_round(problems, x, agg, G, gens, data, icfg, M)
            for j in range(S):
                pre[j] = 0.0
            tally[T_UP] += M * FLOAT_BITS * d
            tally[T_UP_MAX] = max(tally[T_UP_MAX], M * FLOAT_BITS * d)
            tally[T_DOWN] += M * FLOAT_BITS * d
            tally[T_CALLS] += M
        else:
            if catching:
                for j in range(S):
                    pre[j] = FLOAT_BITS * d if synced[part[row, j]] != synced[M] else 0.0
                    tally[T_DOWN] += pre[j]
            for j in prange(S):
                m = part[row, j]
                slot = row * S + j if sampled else m
                # j as int64: the parallel loop's index is unsigned, and its body is typed as a plain loop first, so
                # the worker step would compile twice (once per index type)
                worker_step(worker_plan(plan), m, np.int64(j), k, lr, x, server.hbar, workers, worker_gen(gens, slot),
                            data, run)
            n_in = S
            if selecting:  # only the messages in time, moved to the first rows in slot order
                up = clock.Uploads(part[row], S, steps, wbits, fcfg[F_EXTRA_UP], pre)
                n_in, cut = clock_select(plan.clock, up, server.system, fcfg[F_LATENCY], fcfg[F_DEADLINE],
                                         icfg[I_KEEP], kept)
                for w in range(n_in):
                    if kept[w] != w:
                        for i in range(d):
                            msg[w, i] = msg[kept[w], i]
                n = n_in
                empty = n_in == 0
            rows = msg[:n_in]
            if icfg[I_OMNISCIENT] and B > 0:
                nb = 0  # the round's Byzantine participants: the first rows, as part[row] ascends
                while nb < n_in and part[row, kept[nb]] < B:
                    nb += 1
                if 0 < nb < n_in:  # (no honest message to read when every participant is Byzantine, §12)
                    if icfg[I_SEARCH]:  # the factor that hurts this round's aggregate most (alie-opt, ipm-opt)
                        q = np.zeros(sp.shape[1])
                        q[0] = search_factor(stages, rows, nb, agg, icfg, sp, server_gen)
                        attack_rows(stages, icfg[I_CODE_ATTACK], rows, nb, q)
                    else:
                        attack_rows(stages, icfg[I_CODE_ATTACK], rows, nb, sp[SP_ATTACK])
            # the chain of pre-aggregations (§8.9): each transforms the first n rows in place, and may leave fewer;
            # then the aggregation
            # (nothing in time: no aggregate; agg keeps the last one, where centred clipping starts, §8.4)
            if not empty and not server_aggregate(stages, rows, n_in, agg, icfg, sp, server_gen):
                return Status.CONTRACT
            tally[T_CALLS] += 2 * S  # (read only for a two-point estimator's run: its oracle at x and at x^{k-1})
            up = S * fcfg[F_EXTRA_UP]  # what a participant sends besides its message (SCAFFOLD's control variate)
            silent = icfg[I_LAZY] != 0  # (a worker that sends reports its message's bits, > 0; a silent one 0)
            for j in range(S):
                if not 0.0 <= wbits[j] < np.inf:  # a message's bits: a finite number >= 0 (a plugin's, checked)
                    return Status.CONTRACT
                up += wbits[j]
                if wbits[j] > 0.0:
                    silent = False
            tally[T_UP] += up
            tally[T_UP_MAX] = max(tally[T_UP_MAX], up)
        bcast = 0.0  # the bits each recipient of the round's broadcast downloads (the clock's)
        if icfg[I_DOWNLINK] or fresh:
            pass  # the broadcast is the compressed update, counted below (or, fresh, counted above)
        elif silent or empty:
            pass  # nobody sent (or in time): the aggregate is 0 and g stays; each worker takes the round's step itself
            # (§8.2), or nobody moves (§14.5)
        elif icfg[I_SPARSE_DOWN]:
            bcast = sparse_broadcast_bits(agg)
            tally[T_DOWN] += recv * bcast
        else:
            bcast = fcfg[F_DOWN_BITS]
            tally[T_DOWN] += recv * bcast
        if sampled and icfg[I_INCREMENTS]:  # EF21-PP: the server's g moves by (1/M) sum of the S increments, §8.2
            for i in range(d):
                agg[i] *= S / M
        tally[T_DOWN] += S * fcfg[F_EXTRA_DOWN]  # what the server sends besides the broadcast (SCAFFOLD's c)
        if not empty:  # (a round in which no message arrived in time leaves the server as it was, §14.5)
            direction = server_direction(stages, icfg, agg, server, sp, n, M, k)
            scale = fcfg[F_SERVER_LR] * (lr if icfg[I_STEP_SCALED] else 1.0)
            if icfg[I_DOWNLINK]:  # the server broadcasts C(u) of the update u, with its own error feedback (§8.8)
                down = server.down
                u = down[D_UPDATE]
                for i in range(d):
                    u[i] = scale * direction[i]
                v = down_ef_before(stages, icfg[I_CODE_DOWN_ERROR_FEEDBACK], 1.0, u, down[D_SCRATCH], down[D_MEMORY])
                out = down[D_OUT]
                bcast = compress_down(stages, icfg[I_CODE_DOWN_COMPRESSOR], v, out, sp[SP_DOWN_COMPRESSOR],
                                      icfg[I_SIGN_ZERO], server_gen, server.diwork[0])
                tally[T_DOWN] += S * bcast
                recv = S
                down_ef_after(stages, icfg[I_CODE_DOWN_ERROR_FEEDBACK], down[D_MEMORY], out)
                direction = down_ef_direction(stages, icfg[I_CODE_DOWN_ERROR_FEEDBACK], out, down[D_SERVER])
                scale = 1.0
            if icfg[I_TWO_POINT]:  # the iterate the next round's differences start from (MARINA's x^k, §8.10)
                for i in range(d):
                    server.hbar[2, i] = x[i]
            # (G[0] is free scratch until the next iteration)
            move(problems, icfg, x, direction, scale, lr, wd, G[0], data)
        if topology != 0:  # the round's simulated time (docs/theory.md §14)
            if fresh:  # every worker computes its gradient and sends it, then receives the mean (floats)
                clock_advance_all(plan.clock, topology, everyone, M, np.float64(FLOAT_BITS * d), server.system,
                                  fcfg[F_LATENCY], fcfg[F_SERVER_BANDWIDTH], tally)
            else:
                clock_advance(plan.clock, topology, clock.Uploads(part[row], S, steps, wbits, fcfg[F_EXTRA_UP], pre),
                              bcast + fcfg[F_EXTRA_DOWN], everyone if recv == M and S < M else part[row],
                              server.system, fcfg[F_LATENCY], fcfg[F_SERVER_BANDWIDTH], tally, cut)
        if catching:  # who holds x_{k+1}: every worker after a round every worker received, else the participants
            if empty:  # x did not move: the participants hold it (those that had to, downloaded it)
                for j in range(S):
                    synced[part[row, j]] = synced[M]
            else:
                synced[M] += 1
                if fresh or recv == M:
                    for m in range(M):
                        synced[m] = synced[M]
                else:
                    for j in range(S):
                        synced[part[row, j]] = synced[M]
        counters[C_DONE] = k + 1
        # the budgets (inf without one), docs/theory.md §12, §14
        if tally[T_UP] + tally[T_DOWN] >= fcfg[F_BUDGET] or tally[clock.T_TIME] >= fcfg[F_BUDGET_SECONDS]:
            status = record(problems, k + 1, x, err, gbuf, tally, data, run)
            return Status.BUDGET if status == Status.OK else status
    if k1 == K:
        return record(problems, K, x, err, gbuf, tally, data, run)
    return Status.OK


#: ``run_rounds`` compiled serially, once per plan (``signsim.engine.plan``) whose ``parallel`` is off: for a small
#: run or one Numba thread. nogil: the driver keeps handling signals while a chunk runs in its helper thread
run_chunk = njit(cache=True, nogil=True)(run_rounds)
#: ``run_rounds`` compiled with its workers' steps (and the sums over messages) in parallel, once per plan whose
#: ``parallel`` is on (the same function compiled with other flags: the plan's type tells them apart in the cache)
run_chunk_threaded = njit(cache=True, nogil=True, parallel=True)(run_rounds)


def compiled(plan):
    """The loop ``plan`` runs in: ``run_chunk_threaded`` or ``run_chunk``, as its ``parallel`` says."""
    return run_chunk_threaded if plan.parallel.on else run_chunk
