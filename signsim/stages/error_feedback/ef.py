"""Error feedback (Karimireddy et al. 2019; docs/theory.md §8): p = gamma_k v + e, msg = C(p), e <- p - msg;
x <- x - aggregate (the step size sits inside the message). Needs a contractive compressor."""

NAME = "ef"
PARAMS = ()
SUMMARY = "p = gamma_k v + e, msg = C(p), e <- p - msg; x <- x - aggregate"
THEORY = "§8.2"
STATE = True
SERVER_STATE = False
STEP_SCALED = False
TRACK_ERROR = True  # the history's ``extra`` column: mean over workers of ||e_m||_2


def sends(k, v, e, p):  # every round
    return True


def before(lr, v, g, e):
    for i in range(e.shape[0]):
        e[i] += lr * v[i]
    return e


def after(e, out):
    for i in range(e.shape[0]):
        e[i] -= out[i]


def direction(agg, srv):
    return agg


def reference_before(lr, v, e):
    return lr * v + e


def reference_after(e, u, msg):
    e[:] = u - msg


def reference_direction(broadcast, srv):
    return broadcast
