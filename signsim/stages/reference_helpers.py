"""NumPy helpers of the stages' references (the replay, ``signsim.engine.reference``)."""

from signsim.stages.base import SIGN_ZERO_PLUS, SIGN_ZERO_RANDOM


def sign_with_policy(v, policy, gen):
    """sign(v) with sign(0) by policy, one uniform per zero coordinate for RANDOM."""
    import numpy as np

    s = np.sign(v)
    zeros = np.flatnonzero(v == 0)
    if policy == SIGN_ZERO_PLUS:
        s[zeros] = 1.0
    elif policy == SIGN_ZERO_RANDOM and zeros.size:
        s[zeros] = np.where(gen.random(zeros.size) < 0.5, 1.0, -1.0)
    return s
