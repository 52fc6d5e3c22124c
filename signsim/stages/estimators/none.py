"""No estimator: the worker compresses its vector v itself (docs/theory.md §2)."""

NAME = "none"
PARAMS = ()
SUMMARY = "u = v"
THEORY = "§2"
STATE = False


def before(v, g, h, p):
    return v


def after(h, out, p):
    return


def direction(agg, hbar, p, S, M):
    return agg


def reference_before(v, h, p):
    return v


def reference_after(h, msg, p):
    return


def reference_direction(broadcast, hbar, p, S, M):
    return broadcast
