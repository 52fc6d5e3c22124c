"""No momentum: the worker compresses its stochastic gradient, v = g_hat (docs/theory.md §2)."""

NAME = "none"
PARAMS = ()
SUMMARY = "v = g_hat"
THEORY = "§2"
STATE = False  # no per-worker buffer


def kernel(k, g, m, p):
    return g


def reference(k, g, m, p):
    return g
