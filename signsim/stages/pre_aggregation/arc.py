"""arc:F: adaptive robust clipping (Allouah, Guerraoui, Gupta, Jellouli, Rizk and Stephan 2024, "Boosting robustness
by clipping gradients in distributed learning"; ByzFL's ARC; docs/theory.md §8.9): with k = floor(2 F (n - F) / n),
the k messages of largest norm (ties: the higher index clipped first, i.e. a stable ascending sort) are clipped to
the norm of the largest remaining one. Needs n >= F."""

import math

import numpy as np

from signsim.errors import InputError
from signsim.stages.base import Param
from signsim.stages.rows import row_sq_norms
from signsim.stages.sorting import stable_order

NAME = "arc"
PARAMS = (Param("f", "int", low=0, high=2 ** 31),)
SUMMARY = "clip the floor(2f(n-f)/n) largest messages to the norm of the next largest (Allouah et al. 2024)"
THEORY = "§8.9"


def rows(n, params):
    f = int(params[0])
    if not n >= f:
        raise InputError(f"arc:{f} needs at least f = {f} messages per round (it gets {n})")
    return n


def pre(msg, n, p, gen):
    f = int(p[0])
    k = (2 * f * (n - f)) // n
    if k <= 0:
        return n
    d = msg.shape[1]
    norms = np.empty(n)
    row_sq_norms(msg, n, norms)  # each row's sum in coordinate order, several rows side by side
    for a in range(n):
        norms[a] = math.sqrt(norms[a])
    order = np.empty(n, dtype=np.int64)
    stable_order(norms, order)  # ascending, ties to the lower index
    tau = norms[order[n - k - 1]]
    for c in range(n - k, n):
        a = order[c]
        if norms[a] > tau:
            scale = tau / norms[a]
            for i in range(d):
                msg[a, i] = msg[a, i] * scale
    return n


def reference(msgs, params, gen):
    n, f = msgs.shape[0], int(params[0])
    k = (2 * f * (n - f)) // n
    out = msgs.copy()
    if k <= 0:
        return out
    norms = np.linalg.norm(msgs, axis=1)
    order = sorted(range(n), key=lambda a: (norms[a], a))
    tau = norms[order[n - k - 1]]
    for a in order[n - k:]:
        if norms[a] > tau:
            out[a] = msgs[a] * (tau / norms[a])
    return out
