"""nnm:F: nearest-neighbour mixing (Allouah, Farhadkhani, Guerraoui, Gupta, Pinot and Stephan 2023, "Fixing by mixing";
ByzFL's NNM; docs/theory.md §8.9): each of the n messages is replaced by the mean of its n - F nearest messages
(Euclidean, itself included; ties: the lower index), all computed from the messages as received. Needs n > F."""

import numpy as np

from signsim.errors import InputError
from signsim.stages.base import Param
from signsim.stages.rows import BLOCK, distance_lanes, pair_distances
from signsim.stages.sorting import stable_order

NAME = "nnm"
PARAMS = (Param("f", "int", low=0, high=2 ** 31),)
SUMMARY = "each message <- the mean of its n - f nearest messages, itself included (Allouah et al. 2023)"
THEORY = "§8.9"


def rows(n, params):
    f = int(params[0])
    if not n > f:
        raise InputError(f"nnm:{f} needs more than f = {f} messages per round (it gets {n})")
    return n


def pre(msg, n, p, gen):
    k = n - int(p[0])
    d = msg.shape[1]
    D = np.empty((n, distance_lanes(n)))
    pair_distances(msg, n, D)  # D[a, b] = squared_distance(msg, a, b), bit for bit
    dist = np.empty(n)
    order = np.empty(n, dtype=np.int64)
    near = np.empty((n, k), dtype=np.int64)
    for a in range(n):
        for b in range(n):
            dist[b] = D[a, b]
        stable_order(dist, order)  # ties to the lower index
        for c in range(k):
            near[a, c] = order[c]
    out = np.empty((n, BLOCK))  # a block of the new rows (msg's are read until the block is done)
    for i0 in range(0, d, BLOCK):
        w = min(BLOCK, d - i0)
        for a in range(n):  # the mean of a's k nearest, summed in that order (as mean_of_rows)
            for j in range(w):
                out[a, j] = 0.0
            for c in range(k):
                src = msg[near[a, c], i0:i0 + w]  # (a slice: indices j >= 0 that Numba need not wrap around)
                for j in range(w):
                    out[a, j] += src[j]
            for j in range(w):
                out[a, j] = out[a, j] / k
        for a in range(n):
            dst = msg[a, i0:i0 + w]
            for j in range(w):
                dst[j] = out[a, j]
    return n


def reference(msgs, params, gen):
    n = msgs.shape[0]
    k = n - int(params[0])
    out = []
    for a in range(n):
        dist = np.linalg.norm(msgs - msgs[a], axis=1)
        near = sorted(range(n), key=lambda b: (dist[b], b))[:k]
        out.append(msgs[near].mean(axis=0))
    return np.array(out)


def work(n, d, p):
    return n * n * d  # every pair's squared distance


def memory(n, d, p):
    return 8 * n * ((n + 7) // 8 * 8 + n + 128)  # the distances, each one's nearest, a block of the output
