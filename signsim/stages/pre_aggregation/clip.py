"""clip:TAU: static clipping (ByzFL's Clipping; docs/theory.md §8.9): each message v <- v min(1, TAU / ||v||_2)."""

import math

import numpy as np

from signsim.stages.base import Param
from signsim.stages.rows import row_sq_norms

NAME = "clip"
PARAMS = (Param("tau", default=2.0, low=0.0, low_open=True),)
SUMMARY = "each message v <- v min(1, tau / ||v||_2)"
THEORY = "§8.9"


def rows(n, params):
    return n


def pre(msg, n, p, gen):
    tau = p[0]
    sq = np.empty(n)
    row_sq_norms(msg, n, sq)  # each row's sum in coordinate order, several rows side by side
    for a in range(n):
        norm = math.sqrt(sq[a])
        if norm > tau:
            scale = tau / norm
            for i in range(msg.shape[1]):
                msg[a, i] = msg[a, i] * scale
    return n


def reference(msgs, params, gen):
    tau = params[0]
    norms = np.linalg.norm(msgs, axis=1)
    scale = np.where(norms > tau, tau / np.where(norms > 0, norms, 1.0), 1.0)
    return msgs * scale[:, None]
