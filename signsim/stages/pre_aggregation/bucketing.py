"""bucketing:S: bucketing (Karimireddy, He and Jaggi 2022, "Byzantine-robust learning on heterogeneous datasets via
bucketing"; ByzFL's Bucketing; docs/theory.md §8.9): the n messages in a random order (a Fisher-Yates shuffle from the
server's stream: position i swapped with i + integers(0, n - i)), cut into ceil(n / S) buckets of S consecutive ones
(the last one smaller when S does not divide n); the aggregation gets the bucket means."""

import numpy as np

from signsim import draws
from signsim.stages.base import Param

NAME = "bucketing"
PARAMS = (Param("s", "int", default=2, low=1, high=2 ** 31),)
SUMMARY = "the means of ceil(n/s) buckets of s messages in a random order (Karimireddy et al. 2022)"
THEORY = "§8.9"


def rows(n, params):
    s = int(params[0])
    return (n + s - 1) // s


def pre(msg, n, p, gen):
    s = int(p[0])
    d = msg.shape[1]
    perm = np.arange(n)
    for i in range(n):
        j = i + draws.index(gen, n - i)
        t = perm[i]
        perm[i] = perm[j]
        perm[j] = t
    nb = (n + s - 1) // s
    W = 256
    out = np.empty((nb, W))  # a block of the buckets' means (msg's rows are read until the block is done)
    for i0 in range(0, d, W):
        w = min(W, d - i0)
        for b in range(nb):
            lo = b * s
            hi = min(n, lo + s)
            for j in range(w):
                out[b, j] = 0.0
            for c in range(lo, hi):  # summed in the bucket's order, from +0.0
                src = msg[perm[c], i0:i0 + w]  # (a slice: indices j >= 0 that Numba need not wrap around)
                for j in range(w):
                    out[b, j] += src[j]
            for j in range(w):
                out[b, j] = out[b, j] / (hi - lo)
        for b in range(nb):
            dst = msg[b, i0:i0 + w]
            for j in range(w):
                dst[j] = out[b, j]
    return nb


def reference(msgs, params, gen):
    n, s = msgs.shape[0], int(params[0])
    order = list(range(n))
    for i in range(n):
        j = i + int(gen.integers(0, n - i))
        order[i], order[j] = order[j], order[i]
    return np.array([msgs[order[lo:lo + s]].mean(axis=0) for lo in range(0, n, s)])
