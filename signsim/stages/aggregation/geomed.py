"""geomed:NU:T: the geometric median argmin_y sum_m ||y - msg_m||_2 by T steps of the smoothed Weiszfeld algorithm
(Weiszfeld 1937; Pillutla, Kakade and Harchaoui 2022; ByzFL's GeometricMedian; docs/theory.md §8.4): from z = 0,
z <- sum_m msg_m / b_m / sum_m 1 / b_m with b_m = max(NU, ||msg_m - z||_2); messages with an infinite entry are
left out. ByzFL's defaults NU = 0.1, T = 3. 32 d bits."""

import math

import numpy as np

from signsim.stages.base import FLOAT_BITS, Param
from signsim.stages.rows import BLOCK, row_sq_dists

NAME = "geomed"
PARAMS = (Param("nu", "float", low=0.0, low_open=True, default=0.1),
          Param("t", "int", low=0, high=10_000, default=3))
SUMMARY = "geometric median by T smoothed Weiszfeld steps from 0, distances floored at nu (default 0.1:3)"
THEORY = "§8.4"
SUMMED = False


def finish(agg, M, p, tie, gen):
    return


def robust(msg, agg, p):
    M, d = msg.shape
    nu, T = p[0], int(p[1])
    finite = np.ones(M, dtype=np.bool_)
    for m in range(M):
        for i in range(d):
            if math.isinf(msg[m, i]):
                finite[m] = False
                break
    z = np.zeros(d)
    w = np.zeros(M)
    dist = np.empty(M)
    acc = np.empty(BLOCK)
    for _ in range(T):
        row_sq_dists(msg, M, z, dist)  # ||msg_m - z||^2, each summed in coordinate order (four rows at a time)
        total = 0.0
        for m in range(M):
            if finite[m]:
                w[m] = 1.0 / max(nu, math.sqrt(dist[m]))
                total += w[m]
        for i0 in range(0, d, BLOCK):  # z_i = sum over m (in order) of w_m msg[m, i] / total, a block at a time
            width = min(BLOCK, d - i0)
            for j in range(width):
                acc[j] = 0.0
            for m in range(M):
                if finite[m]:
                    wm = w[m]
                    src = msg[m, i0:i0 + width]
                    for j in range(width):
                        acc[j] += wm * src[j]
            dst = z[i0:i0 + width]
            for j in range(width):
                dst[j] = acc[j] / total
    for i in range(d):
        agg[i] = z[i]


def sparse(compressor):
    return False


def down_bits(compressor, cparams, M, d, sign_zero, tie):
    return FLOAT_BITS * d


def reference(msgs, p, tie, server, prev):
    nu, T = p[0], int(p[1])
    x = msgs[~np.isinf(msgs).any(axis=1)]
    z = np.zeros(msgs.shape[1])
    for _ in range(T):
        beta = np.maximum(np.linalg.norm(x - z, axis=1), nu)
        z = (x / beta[:, None]).sum(axis=0) / (1.0 / beta).sum()
    return z


def work(n, d, p):
    return max(1, int(p[1])) * n * d  # T Weiszfeld steps
