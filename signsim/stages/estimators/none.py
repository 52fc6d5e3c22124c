"""No estimator: the worker compresses its vector v itself (docs/theory.md §2)."""

NAME = "none"
PARAMS = ()
SUMMARY = "u = v"
THEORY = "§2"
STATE = False


def extra_bits(d):
    return 0.0, 0.0


def fresh(k, hbar, p, gen):  # no round of exact gradients
    return False


def before(v, g, h, p):
    return v


def after(h, hbar, out, p, H):
    return


def direction(agg, hbar, p, S, M, H):
    return agg


def reference_correct(g, h, hbar, p):
    return g


def reference_before(v, h, p):
    return v


def reference_after(h, hbar, msg, p, H):
    return


def reference_direction(broadcast, hbar, p, S, M, H):
    return broadcast
