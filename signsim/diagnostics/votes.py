"""What each worker sends and what the vote of M workers returns, coordinate by coordinate
(docs/theory.md §1; derivations in docs/theory.md §9).

The law of one worker's raw sign on coordinate i is three probabilities, P(g_hat_i > 0), P(g_hat_i = 0) and
P(g_hat_i < 0). The ``--sign-zero`` policy turns it into the law of the message (``random``: a zero becomes
+-1 with probability 1/2 each; ``plus``: +1; ``zero``: 0), a blind Byzantine worker transforms the message
(``invert``: swap + and -; ``random``: a fair sign times |message|), and the vote is the sign of the sum of
the M independent messages: its law is a convolution of M three-point laws (a Poisson-binomial law when
no message is 0), computed exactly in O(M^2) per coordinate. A tied vote is broken by ``--tie``
(``random``: +-1 with probability 1/2; ``zero``: 0).

Everything here is written relative to s_i = sign g_i: "agree" is P(message_i = s_i), "disagree"
P(message_i = -s_i), and E<g, message> = sum_i (agree_i - disagree_i) |g_i|.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

SIGN_ZERO = ("random", "plus", "zero")
TIES = ("random", "zero")
ATTACKS = ("invert", "random")


@dataclass
class Law:
    """Per worker (rows) and coordinate (columns): P(+1), P(0), P(-1) of a sign or a message."""

    plus: np.ndarray
    zero: np.ndarray
    minus: np.ndarray

    def rows(self, index: np.ndarray) -> Law:
        return Law(self.plus[index], self.zero[index], self.minus[index])


def message_law(raw: Law, sign_zero: str) -> Law:
    """The message sign(g_hat) under the sign(0) policy."""
    if sign_zero == "random":
        half = raw.zero / 2
        return Law(raw.plus + half, np.zeros_like(raw.zero), raw.minus + half)
    if sign_zero == "plus":
        return Law(raw.plus + raw.zero, np.zeros_like(raw.zero), raw.minus.copy())
    if sign_zero == "zero":
        return Law(raw.plus.copy(), raw.zero.copy(), raw.minus.copy())
    raise ValueError(f"sign_zero {sign_zero!r}")


def attacked_law(msg: Law, attack: str) -> Law:
    """A blind Byzantine worker's message: ``invert`` sends -message; ``random`` sends |message| with a fair
    sign."""
    if attack == "invert":
        return Law(msg.minus.copy(), msg.zero.copy(), msg.plus.copy())
    if attack == "random":
        half = (msg.plus + msg.minus) / 2
        return Law(half, msg.zero.copy(), half.copy())
    raise ValueError(f"attack {attack!r}")


def agree_disagree(law: Law, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P(sign = sign g_i) and P(sign = -sign g_i), per row and coordinate (NaN where g_i = 0)."""
    pos, neg = g > 0, g < 0
    agree = np.where(pos, law.plus, np.where(neg, law.minus, np.nan))
    disagree = np.where(pos, law.minus, np.where(neg, law.plus, np.nan))
    return agree, disagree


def inner_product(g: np.ndarray, agree: np.ndarray, disagree: np.ndarray) -> float:
    """E<g, message> = sum_i (agree_i - disagree_i) |g_i| over g_i != 0."""
    nz = g != 0
    return float(np.sum((agree[nz] - disagree[nz]) * np.abs(g[nz])))


@njit(cache=True, parallel=True)
def sum_law_kernel(plus, zero, minus):
    """Law of sum_m message_m for each coordinate: P(sum = s) for s = -M..M (column s + M), by adding one
    worker at a time (O(M^2) per coordinate). plus, zero, minus: M x d."""
    M, d = plus.shape
    out = np.zeros((d, 2 * M + 1))
    for i in prange(d):
        cur = np.zeros(2 * M + 1)
        nxt = np.zeros(2 * M + 1)
        cur[M] = 1.0
        for m in range(M):
            p, z, q = plus[m, i], zero[m, i], minus[m, i]
            lo, hi = M - m, M + m  # the support so far
            nxt[lo - 1] = q * cur[lo]
            nxt[hi + 1] = p * cur[hi]
            if m > 0:
                nxt[lo] = z * cur[lo] + q * cur[lo + 1]
                nxt[hi] = z * cur[hi] + p * cur[hi - 1]
            else:
                nxt[lo] = z * cur[lo]
            for s in range(lo + 1, hi):
                nxt[s] = p * cur[s - 1] + z * cur[s] + q * cur[s + 1]
            cur, nxt = nxt, cur
        out[i, :] = cur
    return out


def sum_law_ref(law: Law) -> np.ndarray:
    """NumPy reference of ``sum_law_kernel``: repeated convolution with each worker's three-point law."""
    M, d = law.plus.shape
    out = np.zeros((d, 2 * M + 1))
    for i in range(d):
        dist = np.array([1.0])
        for m in range(M):
            dist = np.convolve(dist, [law.minus[m, i], law.zero[m, i], law.plus[m, i]])
        out[i] = dist
    return out


@dataclass
class Vote:
    plus: np.ndarray  # P(vote_i = +1)
    minus: np.ndarray  # P(vote_i = -1)
    tie: np.ndarray  # P(sum_i = 0), before the tie rule


def vote_law(messages: Law, tie: str) -> Vote:
    """The law of sign(sum of the M messages), with a tie broken by ``tie``; messages are M x d."""
    plus = np.ascontiguousarray(messages.plus, dtype=np.float64)
    M = plus.shape[0]
    dist = sum_law_kernel(plus, np.ascontiguousarray(messages.zero, dtype=np.float64),
                          np.ascontiguousarray(messages.minus, dtype=np.float64))
    return vote_of_sum(dist, M, tie)


def vote_of_sum(dist: np.ndarray, M: int, tie: str) -> Vote:
    """The vote sign(sum) from the law of the sum (d x (2M + 1), column s + M), a tie broken by ``tie``."""
    up, down, tied = dist[:, M + 1:].sum(axis=1), dist[:, :M].sum(axis=1), dist[:, M]
    if tie == "random":
        return Vote(up + tied / 2, down + tied / 2, tied)
    if tie == "zero":
        return Vote(up, down, tied)
    raise ValueError(f"tie {tie!r}")


def vote_inner_product(g: np.ndarray, vote: Vote) -> float:
    """E<g, vote> = sum_i (P(vote_i = sign g_i) - P(vote_i = -sign g_i)) |g_i|: the rho_M-norm."""
    return inner_product(g, *agree_disagree(Law(vote.plus, np.zeros_like(vote.plus), vote.minus), g))


def worker_messages(raw: Law, worker_class: np.ndarray, sign_zero: str, byzantine: int = 0,
                    attack: str = "invert") -> Law:
    """The M workers' message laws (M x d): worker m's oracle is row ``worker_class[m]`` of ``raw``; the first
    ``byzantine`` workers are attacked (as the engine does)."""
    msg = message_law(raw, sign_zero).rows(np.asarray(worker_class))
    if byzantine:
        bad = attacked_law(msg.rows(np.arange(byzantine)), attack)
        msg.plus[:byzantine], msg.zero[:byzantine], msg.minus[:byzantine] = bad.plus, bad.zero, bad.minus
    return msg
