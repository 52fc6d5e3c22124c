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


BLOCK = 128


def distance_lanes(n):
    """Columns of the matrix pair_distances fills: n rounded up to a multiple of 8 (one vector register)."""
    return (n + 7) // 8 * 8


def pair_distances(msg, n, D):
    """D[a, b] <- ||msg_a - msg_b||^2 for a, b < n, each summed from +0.0 in coordinate order as
    squared_distance(msg, a, b) (so D[b, a] = D[a, b] bit for bit: (x - y)^2 = (y - x)^2). D is n x
    distance_lanes(n); its columns >= n are left 0-ish scratch. The sums of one row a run side by side across b
    (vector lanes), 8 coordinates per pass over the row."""
    d = msg.shape[1]
    P = distance_lanes(n)
    T = np.zeros((BLOCK, P))  # a block of coordinates, transposed: T[j, m] = msg[m, i0 + j]
    for a in range(n):
        for b in range(P):
            D[a, b] = 0.0
    for i0 in range(0, d, BLOCK):
        w = min(BLOCK, d - i0)
        for m in range(n):
            src = msg[m, i0:i0 + w]  # (a slice: indices j >= 0 that Numba need not wrap around)
            for j in range(w):
                T[j, m] = src[j]
        for a in range(n):
            j = 0
            while j + 8 <= w:
                x0 = T[j, a]
                x1 = T[j + 1, a]
                x2 = T[j + 2, a]
                x3 = T[j + 3, a]
                x4 = T[j + 4, a]
                x5 = T[j + 5, a]
                x6 = T[j + 6, a]
                x7 = T[j + 7, a]
                for b in range(P):
                    s = D[a, b]
                    t = x0 - T[j, b]
                    s += t * t
                    t = x1 - T[j + 1, b]
                    s += t * t
                    t = x2 - T[j + 2, b]
                    s += t * t
                    t = x3 - T[j + 3, b]
                    s += t * t
                    t = x4 - T[j + 4, b]
                    s += t * t
                    t = x5 - T[j + 5, b]
                    s += t * t
                    t = x6 - T[j + 6, b]
                    s += t * t
                    t = x7 - T[j + 7, b]
                    s += t * t
                    D[a, b] = s
                j += 8
            while j < w:
                x0 = T[j, a]
                for b in range(P):
                    t = x0 - T[j, b]
                    D[a, b] += t * t
                j += 1


def krum_scores_of(D, M, n, score):
    """score[m] <- Krum's score of message m from the squared distances D (pair_distances): the sum of its n
    smallest distances to the other messages, in increasing order (as krum_scores)."""
    row = np.empty(M - 1)
    for m in range(M):
        c = 0
        for j in range(M):
            if j != m:
                row[c] = D[m, j]
                c += 1
        sort_in_place(row)
        total = 0.0
        for c in range(n):
            total += row[c]
        score[m] = total


def mean_of_rows_blocked(msg, order, k, agg):
    """agg <- the mean of the messages order[0], ..., order[k - 1], summed from +0.0 in that order (as
    mean_of_rows), a block of coordinates at a time."""
    d = msg.shape[1]
    acc = np.empty(BLOCK)
    for i0 in range(0, d, BLOCK):
        w = min(BLOCK, d - i0)
        for j in range(w):
            acc[j] = 0.0
        for c in range(k):
            src = msg[order[c], i0:i0 + w]
            for j in range(w):
                acc[j] += src[j]
        dst = agg[i0:i0 + w]
        for j in range(w):
            dst[j] = acc[j] / k


def row_sq_norms(msg, n, out):
    """out[a] <- sum over i of msg[a, i]^2, summed from +0.0 in coordinate order, for a < n: four rows at a time,
    so that their sums' chains run side by side."""
    d = msg.shape[1]
    a = 0
    while a + 4 <= n:
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        for i in range(d):
            x0 = msg[a, i]
            x1 = msg[a + 1, i]
            x2 = msg[a + 2, i]
            x3 = msg[a + 3, i]
            s0 += x0 * x0
            s1 += x1 * x1
            s2 += x2 * x2
            s3 += x3 * x3
        out[a] = s0
        out[a + 1] = s1
        out[a + 2] = s2
        out[a + 3] = s3
        a += 4
    while a < n:
        s0 = 0.0
        for i in range(d):
            x0 = msg[a, i]
            s0 += x0 * x0
        out[a] = s0
        a += 1


def row_sq_dists(msg, n, ref, out):
    """out[a] <- ||msg_a - ref||^2 = sum over i of (msg[a, i] - ref[i])^2, summed from +0.0 in coordinate order (as
    squared_distance when ref is a row of msg), for a < n: four rows at a time."""
    d = msg.shape[1]
    a = 0
    while a + 4 <= n:
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        for i in range(d):
            r = ref[i]
            x0 = msg[a, i] - r
            x1 = msg[a + 1, i] - r
            x2 = msg[a + 2, i] - r
            x3 = msg[a + 3, i] - r
            s0 += x0 * x0
            s1 += x1 * x1
            s2 += x2 * x2
            s3 += x3 * x3
        out[a] = s0
        out[a + 1] = s1
        out[a + 2] = s2
        out[a + 3] = s3
        a += 4
    while a < n:
        s0 = 0.0
        for i in range(d):
            x0 = msg[a, i] - ref[i]
            s0 += x0 * x0
        out[a] = s0
        a += 1


def centred_gram_blocked(msg, G, bad):
    """As rows.centred_gram (the same G, bad and count, bit for bit), the products summed a block of coordinates
    at a time with the pairs side by side: G[a, b] = sum over i in order of (msg[a, i] - msg[z, i]) *
    (msg[b, i] - msg[z, i]), a product that does not depend on which of a, b comes first."""
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
    P = distance_lanes(M)
    S = np.zeros((M, P))
    T = np.zeros((BLOCK, P))  # T[j, m] = msg[m, i0 + j] - msg[z, i0 + j]
    zr = msg[z]
    for i0 in range(0, d, BLOCK):
        w = min(BLOCK, d - i0)
        zb = zr[i0:i0 + w]
        for m in range(M):
            src = msg[m, i0:i0 + w]
            for j in range(w):
                T[j, m] = src[j] - zb[j]
        for a in range(M):
            j = 0
            while j + 4 <= w:
                x0 = T[j, a]
                x1 = T[j + 1, a]
                x2 = T[j + 2, a]
                x3 = T[j + 3, a]
                for b in range(P):
                    s = S[a, b]
                    s += x0 * T[j, b]
                    s += x1 * T[j + 1, b]
                    s += x2 * T[j + 2, b]
                    s += x3 * T[j + 3, b]
                    S[a, b] = s
                j += 4
            while j < w:
                x0 = T[j, a]
                for b in range(P):
                    S[a, b] += x0 * T[j, b]
                j += 1
    for a in range(M):
        for b in range(M):
            G[a, b] = 0.0 if bad[a] or bad[b] else S[a, b]
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

