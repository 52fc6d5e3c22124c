"""CLAG, compressed lazy aggregation (Richtárik, Sokolov, Fatkhullin, Gasanov, Li and Gorbunov 2022, "3PC: Three
Point Compressors for Communication-Efficient Distributed Training and a Better Theory for Lazy Aggregation";
docs/theory.md §8.2): EF21 whose worker sends only when its gradient has moved away from its estimate g_m more than
zeta times from its last gradient y_m: if ||v - g_m||^2 > zeta ||v - y_m||^2, msg = C(v - g_m) and g_m <- g_m + msg;
otherwise nothing (0 bits) and g_m stays; then y_m <- v. A worker's first round always sends. The server keeps
g <- g + aggregate (the mean of g_m) and steps x <- x - gamma_k g. LAG is CLAG with the identity compressor. The state
per worker is g_m and y_m (``STATE_WIDTH`` = 2: e = [g_m, y_m])."""

import numpy as np

from signsim.stages.base import Param

NAME = "clag"
PARAMS = (Param("zeta", default=1.0, low=0.0),)
SUMMARY = ("EF21 that sends C(v - g_m) only if ||v - g_m||^2 > zeta ||v - y_m||^2 (y_m: its last v), else nothing; "
           "server g <- g + aggregate")
THEORY = "§8.2"
STATE = True
STATE_WIDTH = 2  # g_m, then y_m
SERVER_STATE = True  # the server's running g
STEP_SCALED = True
TRACK_ERROR = False
LAZY = True


def sends(k, v, e, p):
    d = v.shape[0]
    moved = 0.0  # ||v - g_m||^2
    changed = 0.0  # ||v - y_m||^2
    for i in range(d):
        moved += (v[i] - e[i]) ** 2
        changed += (v[i] - e[d + i]) ** 2
        e[d + i] = v[i]
    return k == 0 or moved > p[0] * changed


def before(lr, v, g, e):
    for i in range(v.shape[0]):  # u = v - g_m, written over g (no longer needed)
        g[i] = v[i] - e[i]
    return g


def after(e, out):
    for i in range(out.shape[0]):
        e[i] += out[i]


def direction(agg, srv):
    for i in range(agg.shape[0]):
        srv[i] += agg[i]
    return srv


def reference_sends(k, v, e, p):
    d = v.size
    g_m, y_m = e[:d], e[d:]
    send = k == 0 or float(np.sum((v - g_m) ** 2)) > p[0] * float(np.sum((v - y_m) ** 2))
    y_m[:] = v
    return send


def reference_before(lr, v, e):
    return v - e[: v.size]


def reference_after(e, u, msg):
    e[: msg.size] += msg


def reference_direction(broadcast, srv):
    srv[:] = srv + broadcast
    return srv.copy()
