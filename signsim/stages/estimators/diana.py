"""DIANA (Mishchenko, Gorbunov, Takáč and Richtárik 2019; docs/theory.md §8.7): each worker keeps a shift h_m and sends
msg = C(v - h_m), then h_m <- h_m + alpha msg; the server keeps hbar, the mean of every worker's h_m, steps along
hbar + the mean of the round's messages, then hbar <- hbar + alpha (S / M) mean (with S of M workers taking part,
the shifts of the absent ones stand still). Needs the mean."""

from signsim.stages.base import Param

NAME = "diana"
PARAMS = (Param("alpha", low=0.0, high=1.0, low_open=True),)
SUMMARY = "msg = C(v - h_m), h_m <- h_m + alpha msg; direction hbar + mean, hbar <- hbar + alpha (S/M) mean"
THEORY = "§8.7"
STATE = True  # h_m per worker, hbar on the server


def extra_bits(d):
    return 0.0, 0.0


def fresh(k, hbar, p, gen):  # no round of exact gradients
    return False


def before(v, g, h, p):
    for i in range(h.shape[0]):  # u = v - h_m, written over g (no longer needed; v may be g itself)
        g[i] = v[i] - h[i]
    return g


def after(h, hbar, out, p, H):
    alpha = p[0]
    for i in range(h.shape[0]):
        h[i] += alpha * out[i]


def direction(agg, hbar, p, S, M, H):
    rate = p[0] * S / M
    mean, out = hbar[0], hbar[1]
    for i in range(agg.shape[0]):
        out[i] = mean[i] + agg[i]
        mean[i] += rate * agg[i]
    return out


def reference_correct(g, h, hbar, p):
    return g


def reference_before(v, h, p):
    return v - h


def reference_after(h, hbar, msg, p, H):
    h[:] = h + p[0] * msg


def reference_direction(broadcast, hbar, p, S, M, H):
    out = hbar[0] + broadcast
    hbar[0] = hbar[0] + p[0] * S / M * broadcast
    return out
