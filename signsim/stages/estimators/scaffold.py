"""SCAFFOLD (docs/theory.md §12.6; Karimireddy, Kale, Mohri, Reddi, Stich and Suresh 2020, Algorithm 1 with option
II): each worker keeps a control variate c_m, the server c; every local gradient is corrected by c - c_m, so the
round's pseudo-gradient is u = sum_{h<H} (g(y^h) - c_m + c) with y^{h+1} = y^h - lr (g(y^h) - c_m + c); the worker
sends msg = C(u) (x - y^H = lr u with the identity) and sets c_m <- c_m - c + msg / H; the server steps along the
mean of the messages and sets c <- c + (S / M) (mean / H - c), the mean of the S increments msg / H - c over all M
workers. The uplink also carries the increment of c_m and the downlink c, 32 d bits each per participant."""

from signsim.stages.base import FLOAT_BITS

NAME = "scaffold"
PARAMS = ()
SUMMARY = "local gradients + c - c_m; c_m <- c_m - c + msg/H; c <- c + (S/M)(mean/H - c); 32 d more bits each way"
THEORY = "§12.6"
STATE = True  # c_m per worker (the shift); c on the server (hbar[0])
CORRECTS = True  # the loop adds hbar[0] - h_m = c - c_m to each local gradient


def extra_bits(d):
    return float(FLOAT_BITS * d), float(FLOAT_BITS * d)


def fresh(k, hbar, p, gen):  # no round of exact gradients
    return False


def before(v, g, h, p):
    return v


def after(h, hbar, out, p, H):
    c = hbar[0]
    for i in range(h.shape[0]):
        h[i] += out[i] / H - c[i]


def direction(agg, hbar, p, S, M, H):
    c, out = hbar[0], hbar[1]
    rate = S / M
    for i in range(agg.shape[0]):
        out[i] = agg[i]
        c[i] += rate * (agg[i] / H - c[i])
    return out


def reference_correct(g, h, hbar, p):
    return g + hbar[0] - h


def reference_before(v, h, p):
    return v


def reference_after(h, hbar, msg, p, H):
    h[:] = h - hbar[0] + msg / H


def reference_direction(broadcast, hbar, p, S, M, H):
    hbar[0] = hbar[0] + S / M * (broadcast / H - hbar[0])
    return broadcast.copy()
