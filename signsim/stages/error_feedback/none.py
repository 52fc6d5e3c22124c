"""No error feedback: msg = C(v), x <- x - gamma_k aggregate (docs/theory.md §2)."""

NAME = "none"
PARAMS = ()
SUMMARY = "msg = C(v)"
THEORY = "§2"
STATE = False  # no per-worker memory
SERVER_STATE = False
STEP_SCALED = True  # the step is gamma_k times the direction
TRACK_ERROR = False  # the history's ``extra`` column


def sends(k, v, e, p):  # every round
    return True


def before(lr, v, g, e):
    return v


def after(e, out):
    return


def direction(agg, srv):
    return agg


def reference_before(lr, v, e):
    return v


def reference_after(e, u, msg):
    return


def reference_direction(broadcast, srv):
    return broadcast
