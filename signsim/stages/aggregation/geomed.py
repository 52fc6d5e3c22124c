"""geomed:NU:T: the geometric median argmin_y sum_m ||y - msg_m||_2 by T steps of the smoothed Weiszfeld algorithm
(Weiszfeld 1937; Pillutla, Kakade and Harchaoui 2022; ByzFL's GeometricMedian; docs/theory.md §8.4): from z = 0,
z <- sum_m msg_m / b_m / sum_m 1 / b_m with b_m = max(NU, ||msg_m - z||_2); messages with an infinite entry are
left out. ByzFL's defaults NU = 0.1, T = 3. 32 d bits."""

import math

import numpy as np

from signsim.stages.base import FLOAT_BITS, Param

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
    for _ in range(T):
        total = 0.0
        for m in range(M):
            if finite[m]:
                s = 0.0
                for i in range(d):
                    t = msg[m, i] - z[i]
                    s += t * t
                w[m] = 1.0 / max(nu, math.sqrt(s))
                total += w[m]
        for i in range(d):
            s = 0.0
            for m in range(M):
                if finite[m]:
                    s += w[m] * msg[m, i]
            z[i] = s / total
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
