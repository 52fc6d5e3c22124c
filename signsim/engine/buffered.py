"""Asynchronous buffered aggregation on the simulated clock (``--async buffer:B[:poly:A]``, FedBuff; docs/theory.md
§14.6).

C clients train at a time (C: the clients per round, ``--clients-per-round``). A client starts at the server's
current model: it downloads the model (32 d bits, latency + 32 d / W_m seconds) unless it already holds that
version, computes its message with the run's worker stages on it (``loop.worker_step``: H local gradients, momentum,
error feedback, compression, as in a round), and uploads it (latency + bits / U_m). The server takes the uploads in
the order they arrive; each is weighted by s(tau) = (1 + tau)^-A (A = 0: 1), tau the number of server steps since
its client downloaded the model; after B of them it aggregates the B weighted messages with the run's
pre-aggregations and aggregation and steps, exactly as a round's server does (``loop.server_aggregate``,
``take_step``). At each instant the server first takes every upload that arrived then (in slot order,
stepping whenever B have arrived), then starts a client in each free slot at the model it now holds: the first
free clients of the next row of the server's sampling stream (``participants.sample_rounds``, in the order drawn;
sorted into the free slots), or, when every client trains at once (C = M), the clients that just finished.

A client computes its message when it starts, from what it then holds, and the message waits for its arrival: the
same message as computed at the end of its training. With B = C = S, A = 0 and every client taking the same time
(constant compute times, and constant links with messages of a fixed size, or unlimited links), every client of a
"round" starts and arrives together, so the server steps on the S messages of the round's participants, drawn as
a synchronous round draws them: the run is the synchronous one (tested bit for bit).
"""

from collections import namedtuple

import numpy as np
from numba import njit

from signsim.codes import Status
from signsim.engine import clock
from signsim.engine.dispatch import check_noise, check_problem
from signsim.engine.loop import (
    C_DONE,
    F_BUDGET,
    F_BUDGET_SECONDS,
    F_EXTRA_UP,
    F_LATENCY,
    F_LR,
    F_SERVER_LR,
    F_STALENESS,
    F_WEIGHT_DECAY,
    I_BUFFER,
    I_CLIENTS,
    I_EVAL_EVERY,
    I_LOCAL_STEPS,
    I_NOISE,
    I_PROBLEM,
    I_SCHEDULE,
    I_SIGN_ZERO,
    I_STEP_SCALED,
    I_TIE,
    I_WORKERS,
    T_CALLS,
    T_DOWN,
    T_UP,
    T_UP_MAX,
    check_settings,
    move,
    record,
    server_aggregate,
    server_direction,
    step_size,
    worker_gen,
    worker_step,
)
from signsim.engine.plan import worker_plan
from signsim.stages.base import FLOAT_BITS

#: the asynchronous server's state, kept between chunks: each slot's client (-1: free), the model version it
#: downloaded, when its upload arrives and when it started, with its download and compute seconds (``phase``,
#: C x 2); the version each client holds (``held``, M), whether it trains (``busy``, M), where its generator is in
#: the loop's list of generators (``gen_of``, M; -1: not there yet); the buffer of weighted messages (B x d);
#: ``now`` = [the clock's time]; ``count`` = [messages in the buffer, the server's version, candidate rows used];
#: ``rows``: the server's candidate rows (R x C clients, in the order drawn; 1 x 1 when C = M)
Queue = namedtuple("Queue", "client version finish start phase held busy gen_of buf now count rows")
Q_IN_BUFFER, Q_VERSION, Q_ROWS_USED = 0, 1, 2


@njit(cache=True)
def _overlap(a0, a1, b0, b1):
    """The length of [a0, a1] within [b0, b1]."""
    lo = max(a0, b0)
    hi = min(a1, b1)
    return hi - lo if hi > lo else 0.0


@njit(inline="always")
def _earliest(client, finish):
    """The slot whose upload arrives first (the lowest slot on a tie), -1 when no client trains."""
    j = -1
    for s in range(client.shape[0]):
        if client[s] >= 0 and (j < 0 or finish[s] < finish[j]):
            j = s
    return j


@njit(inline="always")
def take_step(plan, k, lr, n, M, data, workers, server, run):
    """The server's step k from the aggregate of its buffer's n messages, as a round's server takes it."""
    icfg, fcfg = run.icfg, run.fcfg
    direction = server_direction(plan.stages, icfg, server.agg, server, run.sp, n, M, k)
    scale = fcfg[F_SERVER_LR] * (lr if icfg[I_STEP_SCALED] else 1.0)
    move(plan.problems, icfg, server.x, direction, scale, lr, fcfg[F_WEIGHT_DECAY], workers.G[0], data)


@njit(inline="always")
def _start(plan, queue, k, lr, data, workers, server, run, gens):
    """Start a client in every free slot at time ``now`` on the server's model x_k (see the module's docstring).
    Returns False when a candidate row was needed and none is left."""
    icfg, fcfg, tally = run.icfg, run.fcfg, server.tally
    M, C = icfg[I_WORKERS], icfg[I_CLIENTS]
    x, system = server.x, server.system
    client, held, busy, count = queue.client, queue.held, queue.busy, queue.count
    free = 0
    for j in range(C):
        if client[j] < 0:
            free += 1
    if free == 0:
        return True
    who = np.empty(free, dtype=np.int64)  # the clients to start, ascending, and where their generators are
    where = np.empty(free, dtype=np.int64)
    if C == M:  # every client trains at once: the free ones are those that just finished
        n = 0
        for m in range(M):
            if not busy[m]:
                who[n] = m
                where[n] = queue.gen_of[m]
                n += 1
    else:
        r = count[Q_ROWS_USED]
        if r >= queue.rows.shape[0]:
            return False
        count[Q_ROWS_USED] = r + 1
        n = 0
        for i in range(C):  # the first free clients of the row, in the order drawn
            m = queue.rows[r, i]
            if n < free and not busy[m]:
                who[n] = m
                where[n] = queue.gen_of[m]
                n += 1
        for a in range(1, n):  # sorted by client (insertion: n <= C)
            m, w = who[a], where[a]
            b = a - 1
            while b >= 0 and who[b] > m:
                who[b + 1] = who[b]
                where[b + 1] = where[b]
                b -= 1
            who[b + 1] = m
            where[b + 1] = w
    version = count[Q_VERSION]
    now = queue.now[0]
    steps = icfg[I_LOCAL_STEPS]
    latency = fcfg[F_LATENCY]
    model_bits = np.float64(FLOAT_BITS * x.shape[0])
    a = 0
    for j in range(C):
        if client[j] >= 0 or a == n:
            continue
        m = who[a]
        worker_step(worker_plan(plan), m, np.int64(j), k, lr, x, server.hbar, workers, worker_gen(gens, where[a]),
                    data, run)
        a += 1
        tally[T_CALLS] += steps
        down = 0.0
        if held[m] != version:  # it downloads the model it does not hold
            tally[T_DOWN] += model_bits
            down = latency + model_bits / system[clock.W_DOWN, m]
            held[m] = version
        bits = workers.wbits[j]
        up = latency + (bits + fcfg[F_EXTRA_UP]) / system[clock.W_UP, m] if bits > 0.0 else 0.0
        compute = steps * system[clock.W_COMPUTE, m]
        client[j] = m
        busy[m] = True
        queue.version[j] = version
        queue.start[j] = now
        queue.phase[j, 0] = down
        queue.phase[j, 1] = compute
        queue.finish[j] = now + down + compute + up
    return True


@njit(cache=True)
def run_buffered(plan, k0, k1, K, data, workers, server, run, gens, queue):
    """Server steps k0 <= k < k1 of a K-step asynchronous run (the module's docstring); history every
    ``eval_every`` steps and at k = K, as ``loop.run_rounds`` records it. Returns a Status; ``counters[C_DONE]`` is
    the steps completed, which is less than k1 when the candidate rows ran out (the driver draws more and calls
    again)."""
    problems, stages = plan.problems, plan.stages
    icfg, fcfg, sp, counters = run.icfg, run.fcfg, run.sp, run.counters
    x, agg, tally = server.x, server.agg, server.tally
    M, C, B = icfg[I_WORKERS], icfg[I_CLIENTS], icfg[I_BUFFER]
    a = fcfg[F_STALENESS]
    d = x.shape[0]
    check_settings(icfg[I_SIGN_ZERO], icfg[I_TIE])
    check_problem(problems, icfg[I_PROBLEM])
    check_noise(icfg[I_NOISE])
    client, count, buf, msg, wbits = queue.client, queue.count, queue.buf, workers.msg, workers.wbits
    every = icfg[I_EVAL_EVERY]
    for k in range(k0, k1):
        # a step takes at most B starts of clients besides the one before its first arrival
        if C < M and queue.rows.shape[0] - count[Q_ROWS_USED] < B + 1:
            counters[C_DONE] = k
            return Status.OK
        if k % every == 0:
            status = record(problems, k, x, workers.err, server.gbuf, tally, data, run)
            if status != Status.OK:
                return status
        lr = step_size(icfg[I_SCHEDULE], fcfg[F_LR], k)
        up = 0.0
        while count[Q_IN_BUFFER] < B:
            now = queue.now[0]
            j = _earliest(client, queue.finish)  # the next arrival
            if j < 0 or queue.finish[j] > now:
                # every upload of this instant is in: the free slots start, then the clock moves to the next arrival
                if not _start(plan, queue, k, lr, data, workers, server, run, gens):
                    return Status.CONTRACT  # (rows are checked above: not reached)
                j = _earliest(client, queue.finish)
                t = queue.finish[j]
                # the wait is the awaited client's: its download, compute and upload phases that fall in it
                s0 = queue.start[j]
                p0, p1 = queue.phase[j, 0], queue.phase[j, 1]
                tally[clock.T_DOWNLOAD] += _overlap(now, t, s0, s0 + p0)
                tally[clock.T_COMPUTE] += _overlap(now, t, s0 + p0, s0 + p0 + p1)
                tally[clock.T_UPLOAD] += _overlap(now, t, s0 + p0 + p1, t)
                queue.now[0] = t
                tally[clock.T_TIME] = t
            m = client[j]
            w = 1.0 if a == 0.0 else (1.0 + (count[Q_VERSION] - queue.version[j])) ** (-a)
            row = buf[count[Q_IN_BUFFER]]
            for i in range(d):
                row[i] = msg[j, i] * w if w != 1.0 else msg[j, i]
            bits = wbits[j] + fcfg[F_EXTRA_UP] if wbits[j] > 0.0 else 0.0
            if not 0.0 <= wbits[j] < np.inf:  # a message's bits: a finite number >= 0 (a plugin's, checked)
                return Status.CONTRACT
            tally[T_UP] += bits
            up += bits
            server.system[clock.W_ROUNDS, m] += 1.0
            queue.busy[m] = False
            client[j] = -1
            count[Q_IN_BUFFER] += 1
        if not server_aggregate(stages, buf, B, agg, icfg, sp, server.gen):
            return Status.CONTRACT
        count[Q_IN_BUFFER] = 0
        tally[T_UP_MAX] = max(tally[T_UP_MAX], up)
        take_step(plan, k, lr, B, M, data, workers, server, run)
        count[Q_VERSION] += 1
        counters[C_DONE] = k + 1
        if tally[T_UP] + tally[T_DOWN] >= fcfg[F_BUDGET] or tally[clock.T_TIME] >= fcfg[F_BUDGET_SECONDS]:
            status = record(problems, k + 1, x, workers.err, server.gbuf, tally, data, run)
            return Status.BUDGET if status == Status.OK else status
    if k1 == K:
        return record(problems, K, x, workers.err, server.gbuf, tally, data, run)
    return Status.OK
