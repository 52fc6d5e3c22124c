"""cclip:TAU[:L]: centered clipping (Karimireddy, He, Jaggi 2021; docs/theory.md §8.4). From v = the previous
iteration's aggregate (0 at the start), L times: v <- v + (1/M) sum_m (msg_m - v) min(1, tau / ||msg_m - v||_2);
the server broadcasts v. L = 1 by default (their experiments, with worker momentum). 32 d bits."""

import math

import numpy as np

from signsim.stages.base import FLOAT_BITS, Param
from signsim.stages.rows import row_sq_dists

NAME = "cclip"
FORM = "cclip:TAU[:L]"
PARAMS = (Param("tau", "float", low=0.0, low_open=True, high=1e300), Param("iters", "int", default=1, low=1, high=1000))
SUMMARY = "centered clipping of the messages around the last aggregate, L rounds (Karimireddy et al. 2021)"
THEORY = "§8.4"
SUMMED = False


def finish(agg, M, p, tie, gen):
    return


def robust(msg, agg, p):
    """``agg`` holds the previous aggregate on entry (the loop writes it only here)."""
    M, d = msg.shape
    tau = p[0]
    step = np.zeros(d)
    sq = np.empty(M)
    for _ in range(int(p[1])):
        for i in range(d):
            step[i] = 0.0
        row_sq_dists(msg, M, agg, sq)  # each ||msg_m - agg||^2 in coordinate order, four rows side by side
        for m in range(M):
            nrm = math.sqrt(sq[m])
            w = 1.0 if nrm <= tau else tau / nrm
            src = msg[m]
            for i in range(d):
                step[i] += (src[i] - agg[i]) * w
        for i in range(d):
            agg[i] += step[i] / M


def sparse(compressor):
    return False


def down_bits(compressor, cparams, M, d, sign_zero, tie):
    return FLOAT_BITS * d


def reference(msgs, p, tie, server, prev):
    v = prev.copy()
    for _ in range(int(p[1])):
        diff = msgs - v
        nrm = np.sqrt((diff**2).sum(axis=1))
        w = np.where(nrm <= p[0], 1.0, p[0] / np.where(nrm > 0, nrm, 1.0))
        total = np.zeros(v.size)
        for m in range(msgs.shape[0]):  # in worker order, as the kernel sums
            total = total + diff[m] * w[m]
        v = v + total / msgs.shape[0]
    return v
