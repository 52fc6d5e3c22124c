"""EF21 (Richtárik et al. 2021; docs/theory.md §8.2): msg = C(v - g_m), g_m <- g_m + msg; the server keeps
g <- g + aggregate and steps x <- x - gamma_k g. Needs a contractive compressor and the mean. With S of M workers
taking part (EF21-PP, Fatkhullin et al. 2021), g_m of the absent ones stands still and the server's g, the mean of
every g_m, moves by (1/M) sum of the S messages (``INCREMENTS``: the loop scales the mean by S/M)."""

NAME = "ef21"
PARAMS = ()
SUMMARY = "msg = C(v - g_m), g_m <- g_m + msg; server g <- g + aggregate, x <- x - gamma_k g"
THEORY = "§8.2"
STATE = True
SERVER_STATE = True  # the server's running g
STEP_SCALED = True
TRACK_ERROR = False
INCREMENTS = True  # the server sums increments of the mean over all M workers (EF21-PP)


def sends(k, v, e, p):  # every round
    return True


def before(lr, v, g, e):
    for i in range(e.shape[0]):  # u = v - g_m, written over g (no longer needed)
        g[i] = v[i] - e[i]
    return g


def after(e, out):
    for i in range(e.shape[0]):
        e[i] += out[i]


def direction(agg, srv):
    for i in range(agg.shape[0]):
        srv[i] += agg[i]
    return srv


def reference_before(lr, v, e):
    return v - e


def reference_after(e, u, msg):
    e[:] = e + msg


def reference_direction(broadcast, srv):
    srv[:] = srv + broadcast
    return srv.copy()
