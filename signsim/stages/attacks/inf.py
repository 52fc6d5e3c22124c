"""inf: a Byzantine worker sends +inf in every coordinate (ByzFL's Inf attack; docs/theory.md §8.5). Blind. A rule
that averages it diverges (the run stops as diverged); the median, trimmed mean and geomed leave it out."""

import math

NAME = "inf"
PARAMS = ()
SUMMARY = "send +inf in every coordinate"
THEORY = "§8.5"
OMNISCIENT = False


def row(out, p, gen):
    for i in range(out.shape[0]):
        out[i] = math.inf


def rows(msg, B, p):
    return


def reference(msg, p, gen):
    import numpy as np

    return np.full(msg.size, np.inf)


def reference_rows(msgs, B, p):
    return msgs
