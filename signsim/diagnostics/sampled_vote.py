"""The majority vote of S workers sampled uniformly without replacement from M, exact over the sampling
(docs/theory.md §12.1).

Each worker m sends a message with its own three-point law (P(+1), P(0), P(-1)) per coordinate, independently
of the others and of the sampling. The server samples a set T of S workers, every S-subset with probability
1/C(M, S), and returns sign(sum_{m in T} message_m), a tie broken by ``--tie``. Going through the workers in
order and including worker m with probability (S - j)/(M - m) when j of the workers before it are included
draws a uniform S-subset (selection sampling), so the joint law of (j, partial sum) after worker m is

    P_{m+1}(j, s) = (1 - q_m(j)) P_m(j, s)
                    + q_m(j - 1) [p+_m P_m(j - 1, s - 1) + p0_m P_m(j - 1, s) + p-_m P_m(j - 1, s + 1)],

with q_m(j) = (S - j)/(M - m), P_0 = delta_(0, 0); the law of the vote's sum is P_M(S, .). Every term is a
probability (no binomial coefficients, no overflow), O(M S^2) per coordinate. ``sampled_sum_law`` is the
compiled kernel (one (S + 1) x (2S + 1) table per coordinate, updated in place, only the reachable j and s),
``sampled_sum_law_ref`` its NumPy reference (vectorized over the coordinates).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from signsim.diagnostics.votes import Law, Vote, vote_of_sum


def sampled_sum_law(messages: Law, S: int) -> np.ndarray:
    """P(sum over the sampled workers = s) for s = -S..S (column s + S), per coordinate (rows): messages is
    M x d, S of the M workers sampled uniformly without replacement (compiled; called over ranges of
    coordinates, so that Ctrl-C acts between them)."""
    from signsim.interface.interrupts import chunked

    plus, zero, minus = (np.ascontiguousarray(a, dtype=np.float64) for a in (messages.plus, messages.zero,
                                                                             messages.minus))
    M, d = plus.shape
    if not 1 <= S <= M:
        raise ValueError(f"S = {S} sampled of M = {M} workers")
    out = np.zeros((d, 2 * S + 1))
    chunked(d, lambda lo, hi: _sampled_range(plus, zero, minus, S, lo, hi, out))
    return out


@njit(cache=True, parallel=True, nogil=True)
def _sampled_range(plus, zero, minus, S, lo, hi, out):
    M = plus.shape[0]
    for i in prange(lo, hi):
        P = np.zeros((S + 1, 2 * S + 1))  # P[j, s + S]
        P[0, S] = 1.0
        for m in range(M):
            left = M - m
            p, z, q = plus[m, i], zero[m, i], minus[m, i]
            j_hi = min(m, S - 1)  # rows that can take worker m (j = S cannot)
            j_lo = max(0, S - left)  # rows that can still reach S
            # row j + 1 from rows j + 1 and j, for j from high to low: row j is still the old one when read
            for j in range(j_hi, j_lo - 1, -1):
                take = (S - j) / left  # q(j)
                stay = 1.0 - (S - j - 1) / left  # 1 - q(j + 1)
                for s in range(S - j - 1, S + j + 2):  # |s| <= j + 1
                    v = stay * P[j + 1, s]
                    acc = z * P[j, s]
                    if s > 0:
                        acc += p * P[j, s - 1]
                    if s < 2 * S:
                        acc += q * P[j, s + 1]
                    P[j + 1, s] = v + take * acc
            # the lowest row receives nothing (the row below it cannot reach S: its mass is 0) and keeps 1 - q
            keep = 1.0 - (S - j_lo) / left
            for s in range(2 * S + 1):
                P[j_lo, s] *= keep
        for s in range(2 * S + 1):
            out[i, s] = P[S, s]


def sampled_sum_law_ref(messages: Law, S: int) -> np.ndarray:
    """NumPy reference of ``sampled_sum_law``: the whole recursion vectorized over the coordinates."""
    plus, zero, minus = (np.asarray(a, dtype=np.float64) for a in (messages.plus, messages.zero, messages.minus))
    M, d = plus.shape
    if not 1 <= S <= M:
        raise ValueError(f"S = {S} sampled of M = {M} workers")
    P = np.zeros((S + 1, 2 * S + 1, d))  # P[j, s + S, i]
    P[0, S] = 1.0
    j = np.arange(S + 1, dtype=np.float64)
    for m in range(M):
        q = np.clip((S - j) / (M - m), 0.0, 1.0)[:, None, None]  # P(worker m is sampled | j sampled so far)
        taken = q[:-1] * P[:-1]  # from j to j + 1 (j = S cannot take another)
        new = (1.0 - q) * P
        new[1:, 1:] += plus[m] * taken[:, :-1]
        new[1:] += zero[m] * taken
        new[1:, :-1] += minus[m] * taken[:, 1:]
        P = new
    return np.ascontiguousarray(P[S].T)


def sampled_vote_law(messages: Law, S: int, tie: str) -> Vote:
    """The law of the majority vote of S workers sampled uniformly without replacement from the M rows of
    ``messages``, over both the sampling and the messages; a tie broken by ``tie``."""
    return vote_of_sum(sampled_sum_law(messages, S), S, tie)


def memory(M: int, S: int, d: int) -> int:
    """Bytes ``sampled_sum_law`` holds at once besides the messages: the d x (2S + 1) result and a few
    (S + 1) x (2S + 1) tables (one per thread)."""
    import os

    return 8 * (2 * S + 1) * (d + (S + 1) * max(4, os.cpu_count() or 1))
