"""The simulated clock of a run with a system model (``--compute``, ``--uplink``, ..., docs/theory.md §14).

One round takes, for the parameter server (``Topology.PS``): each participant's h gradients (h c_m seconds, c_m
its compute time), then its message: latency alpha plus b_m / U_m (its bits over its uplink; nothing, not even
alpha, for a worker that sent nothing); the server's own link, when it has a bandwidth B_s, carries every bit of
the round: the uploads end no sooner than min_m h c_m + alpha + (sum_m b_m) / B_s. Then the broadcast: alpha +
D / W_m for each recipient m (D its bits, W_m its downlink), and no sooner than alpha + R D / B_s for R recipients.
The round's time is the uploads' end plus the broadcast's.

For the ring collectives among the round's S participants (in their order, the link m_i -> m_{i+1} of bandwidth
min(U_{m_i}, W_{m_{i+1}})), every participant waits for the slowest to compute (max_m h c_m), then:
- all-gather: S - 1 steps; in step s each participant i forwards the message of participant i - s, so the step
  takes alpha + max_i b_{i-s} / B_i (Thakur, Rabenseifner and Gropp 2005: (S - 1)(alpha + b / B) for equal b, B);
- all-reduce (reduce-scatter then all-gather of blocks of b / S bits): 2 (S - 1) (alpha + b / (S B_min)), with
  b the largest message and B_min the slowest link of the ring (the same paper's ring all-reduce).
No broadcast follows a collective: every participant computes the aggregate itself.

The round also adds, to the run's ``tally``, the time on its critical path spent computing (the latest finisher's
h c_m), uploading (the rest of the uploads' end) and downloading, and to each participant's idle time the round's
time minus its own busy time (its computing, its upload and its download).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from numba import njit

from signsim.codes import Topology

#: rows of the loop's per-worker ``system`` array: compute seconds per gradient, uplink and downlink in bits per
#: second, then (written by the loop) the idle seconds and the rounds taken part in so far
W_COMPUTE, W_UP, W_DOWN, W_IDLE, W_ROUNDS = range(5)
N_SYSTEM = 5
#: the clock's entries of the loop's ``tally`` (after the bits): simulated seconds so far, and their parts on each
#: round's critical path
T_TIME, T_COMPUTE, T_UPLOAD, T_DOWNLOAD = 4, 5, 6, 7

PS, ALLREDUCE, ALLGATHER = int(Topology.PS), int(Topology.ALLREDUCE), int(Topology.ALLGATHER)

#: a round's uploads: slot j < n is worker ``who[j]``, which first downloads ``pre[j]`` bits of the model it missed
#: (0: it holds the current one), then computes ``steps`` gradients and sends ``bits[j] + extra_up`` bits (nothing,
#: not even ``extra_up``, when bits[j] = 0: a silent worker)
Uploads = namedtuple("Uploads", "who n steps bits extra_up pre")


@njit(cache=True)
def ring_link(system, who, n, i):
    """The bandwidth of the ring's link from participant i to participant i + 1 (mod n)."""
    return min(system[W_UP, who[i]], system[W_DOWN, who[(i + 1) % n]])


@njit(cache=True)
def start_time(system, m, pre, latency, shared=0.0):
    """When worker m starts computing: at once, or after downloading the model it missed (``pre`` bits: alpha +
    pre / W_m, and no sooner than ``shared``, when the server's link has carried every such download of the round,
    docs/theory.md §14.2)."""
    return max(latency + pre / system[W_DOWN, m], shared) if pre > 0.0 else 0.0


@njit(cache=True)
def finish_time(system, m, steps, bits, extra_up, pre, latency):
    """When worker m's upload ends on a parameter server, from the round's start: its catch-up download, h c_m,
    then alpha + b_m / U_m (nothing for a worker that sent nothing)."""
    b = bits + extra_up if bits > 0.0 else 0.0
    return (start_time(system, m, pre, latency) + steps * system[W_COMPUTE, m]
            + (latency + b / system[W_UP, m] if b > 0.0 else 0.0))


@njit(cache=True)
def select(up, system, latency, deadline, keep, kept):
    """Which of the round's n participants (their ``Uploads``, ``up``) the server aggregates (docs/theory.md §14.5):
    those whose upload ends by ``deadline`` (inf: no deadline) and, with ``keep`` > 0 (over-selection), only the
    first ``keep`` to finish (ties by slot). Writes their slots, ascending, to ``kept``; returns (how many, the time
    the server stops waiting: the deadline when someone missed it, the keep-th finish, else the last finish)."""
    who, n, steps, bits, extra_up, pre = up.who, up.n, up.steps, up.bits, up.extra_up, up.pre
    finish = np.empty(n)
    for j in range(n):
        finish[j] = finish_time(system, who[j], steps, bits[j], extra_up, pre[j], latency)
    order = np.argsort(finish, kind="mergesort")  # stable: ties in slot order
    take = np.zeros(n, dtype=np.bool_)
    cut = 0.0
    count = 0
    for r in range(n):
        j = order[r]
        if finish[j] > deadline or (keep > 0 and count == keep):
            break
        take[j] = True
        cut = finish[j]
        count += 1
    if count < n and deadline < np.inf and (keep == 0 or count < keep):
        cut = deadline  # someone was late: the server waited until the deadline
    w = 0
    for j in range(n):
        if take[j]:
            kept[w] = j
            w += 1
    return count, cut


@njit(cache=True)
def advance(topology, up, down, recipients, system, latency, server_bw, tally, cutoff):
    """Add one round to the clock. ``up``: the round's ``Uploads`` (the workers that sent, slot j worker ``who[j]``);
    ``down``: the bits each recipient downloads (0: no broadcast); ``recipients``: the workers that receive it
    (``who[:n]``, or every worker for a two-point estimator); ``system``: the per-worker table (``W_*``);
    ``latency``: alpha; ``server_bw``: B_s (inf: unlimited); ``cutoff``: when the server stopped waiting (a
    deadline or over-selection, §14.5; inf: it waits for everyone). Returns the round's time."""
    who, n, steps, bits, extra_up, pre = up.who, up.n, up.steps, up.bits, up.extra_up, up.pre
    comp = 0.0  # the critical path's compute, its catch-up download, and the end of the uploads (or the collective)
    catch = 0.0
    end = 0.0
    t_down = 0.0
    shared = 0.0  # the catch-up downloads through the server's link: alpha + (their bits) / B_s
    if topology == PS and server_bw < np.inf:
        caught = 0.0
        for j in range(n):
            caught += pre[j]
        if caught > 0.0:
            shared = latency + caught / server_bw
    if topology == PS:
        first = np.inf
        total = 0.0
        for j in range(n):
            m = who[j]
            s0 = start_time(system, m, pre[j], latency, shared)
            c = steps * system[W_COMPUTE, m]
            b = bits[j] + extra_up if bits[j] > 0.0 else 0.0
            u = latency + b / system[W_UP, m] if b > 0.0 else 0.0
            if (s0 + c + u > end or j == 0) and s0 + c + u <= cutoff:
                end = s0 + c + u
                comp = c
                catch = s0
            first = min(first, s0 + c)
            total += b
        if total > 0.0 and server_bw < np.inf:
            shared = first + latency + total / server_bw
            if shared > end:
                end = shared
                comp = first
                catch = 0.0
        if cutoff < np.inf and end < cutoff:  # the server stopped waiting at the cutoff (a deadline, §14.5)
            end = cutoff
            if comp == 0.0 and catch == 0.0:
                comp = min(cutoff, first)
        if down > 0.0:
            for m in recipients:
                t_down = max(t_down, latency + down / system[W_DOWN, m])
            if server_bw < np.inf:
                t_down = max(t_down, latency + recipients.shape[0] * down / server_bw)
    else:
        for j in range(n):
            m = who[j]
            s0 = start_time(system, m, pre[j], latency)
            c = steps * system[W_COMPUTE, m]
            if s0 + c > catch + comp:
                catch = s0
                comp = c
        comm = 0.0
        sent = False
        for j in range(n):
            sent = sent or bits[j] > 0.0
        if topology == ALLGATHER and sent:
            for s in range(n - 1):
                step = 0.0
                for i in range(n):
                    b = bits[(i - s) % n]
                    if b > 0.0:
                        step = max(step, (b + extra_up) / ring_link(system, who, n, i))
                comm += latency + step
        elif topology == ALLREDUCE and sent and n > 1:
            b = 0.0
            slowest = np.inf
            for i in range(n):
                b = max(b, bits[i] + extra_up if bits[i] > 0.0 else 0.0)
                slowest = min(slowest, ring_link(system, who, n, i))
            comm = 2.0 * (n - 1) * (latency + b / (n * slowest))
        end = catch + comp + comm
    total_time = end + t_down
    tally[T_TIME] += total_time
    tally[T_COMPUTE] += comp
    tally[T_UPLOAD] += end - comp - catch
    tally[T_DOWNLOAD] += t_down + catch
    for j in range(n):  # each participant's idle time: the round's, less its own work
        m = who[j]
        s0 = start_time(system, m, pre[j], latency, shared)
        system[W_ROUNDS, m] += 1.0
        c = steps * system[W_COMPUTE, m]
        if topology == PS:
            b = bits[j] + extra_up if bits[j] > 0.0 else 0.0
            busy = s0 + c + (latency + b / system[W_UP, m] if b > 0.0 else 0.0)
            if down > 0.0:
                busy += latency + down / system[W_DOWN, m]
        else:
            busy = s0 + c + (end - comp - catch)
        system[W_IDLE, m] += max(0.0, total_time - busy)
    return total_time


@njit(cache=True)
def advance_all(topology, everyone, M, bits, system, latency, server_bw, tally):
    """``advance`` for a round in which all M workers (``everyone``: 0..M-1) compute one exact gradient each and
    send it as ``bits`` bits, then receive the mean, as many bits (MARINA's full round, docs/theory.md §8.10)."""
    return advance(topology, Uploads(everyone, M, np.int64(1), np.full(M, bits), 0.0, np.zeros(M)), bits, everyone,
                   system, latency, server_bw, tally, np.inf)
