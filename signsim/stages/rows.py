"""Helpers the robust aggregations share (plain Python, compiled into each kernel that calls them): distances
between messages, Krum's scores, the mean of chosen ones, and their Gram matrix about a centre."""

import math

import numpy as np

from signsim.stages.sorting import sort_in_place

#: how many nearest others a Krum score sums, by the code of the ``scores`` choice (``krum``, ``multikrum``):
#: Blanchard et al.'s M - f - 2, or ByzFL's M - f - 1 (docs/theory.md §8.4)
KRUM_SCORES = ("blanchard", "byzfl")


def krum_neighbours(M, f, convention):
    """The nearest other messages a Krum score sums: M - f - 2 (Blanchard et al., code 0) or M - f - 1 (ByzFL)."""
    return M - f - 2 + convention


def squared_distance(msg, a, b):
    """||msg_a - msg_b||_2^2."""
    s = 0.0
    for i in range(msg.shape[1]):
        t = msg[a, i] - msg[b, i]
        s += t * t
    return s


def krum_scores(msg, n, score):
    """score[m] <- Krum's score of message m: the sum of its n smallest squared distances to the other messages."""
    M = msg.shape[0]
    row = np.empty(M - 1)
    for m in range(M):
        c = 0
        for j in range(M):
            if j != m:
                row[c] = squared_distance(msg, m, j)
                c += 1
        sort_in_place(row)
        total = 0.0
        for c in range(n):
            total += row[c]
        score[m] = total


def mean_of_rows(msg, order, k, agg):
    """agg <- the mean of the messages order[0], ..., order[k - 1], summed in that order."""
    for i in range(msg.shape[1]):
        s = 0.0
        for c in range(k):
            s += msg[order[c], i]
        agg[i] = s / k


def centred_gram(msg, G, bad):
    """G <- the Gram matrix of the messages about a centre z, G[a, b] = (msg_a - z) . (msg_b - z), where z is the
    last message with every entry finite (the spectral rules depend on differences only: z just keeps the rounding
    at the scale of the honest spread); bad[a] <- whether message a has a non-finite entry or ||msg_a - z||^2
    overflows (its row and column of G are 0). Returns the number of bad messages."""
    M, d = msg.shape
    for a in range(M):
        bad[a] = False
        for i in range(d):
            if not math.isfinite(msg[a, i]):
                bad[a] = True
                break
    z = M - 1
    while z > 0 and bad[z]:
        z -= 1
    for a in range(M):
        for b in range(a, M):
            s = 0.0
            if not (bad[a] or bad[b]):
                for i in range(d):
                    s += (msg[a, i] - msg[z, i]) * (msg[b, i] - msg[z, i])
            G[a, b] = s
            G[b, a] = s
    n = 0
    for a in range(M):
        if not bad[a] and not math.isfinite(G[a, a]):
            bad[a] = True
        if bad[a]:
            n += 1
            for b in range(M):
                G[a, b] = 0.0
                G[b, a] = 0.0
    return n
