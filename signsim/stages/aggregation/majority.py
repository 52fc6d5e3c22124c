"""majority: sign(sum_m msg_m); a tied coordinate (sum exactly 0) becomes a fair +-1 from the server's stream
(--tie random, coordinate order) or 0 (docs/theory.md §2). d bits, 2 d when ties go to 0 and a tie can
happen (M even, or messages that may be 0)."""

from signsim.stages.base import FLOAT_BITS  # noqa: F401 - the declared sizes use plain d here

NAME = "majority"
PARAMS = ()
SUMMARY = "sign of the sum of the messages (ties: --tie)"
THEORY = "§8.4"
SUMMED = True
TIE_ZERO = 1  # ``signsim.codes.Tie.ZERO``
TIE_RANDOM = 0


def finish(agg, M, p, tie, gen):
    for i in range(agg.shape[0]):
        s = agg[i]
        if s > 0.0:
            agg[i] = 1.0
        elif s < 0.0:
            agg[i] = -1.0
        elif tie == TIE_ZERO:
            agg[i] = 0.0
        elif tie == TIE_RANDOM:
            agg[i] = 1.0 if gen.random() < 0.5 else -1.0
        else:
            raise ValueError("unknown tie code")


def robust(msg, agg, p):
    return


def sparse(compressor):
    return False


def down_bits(compressor, cparams, M, d, sign_zero, tie):
    ties_possible = M % 2 == 0 or compressor.may_be_zero(sign_zero)
    return (2 if tie == TIE_ZERO and ties_possible else 1) * d


def reference(msgs, p, tie, server, prev):
    import numpy as np

    total = np.zeros(msgs.shape[1])
    for row in msgs:
        total = total + row
    broadcast = np.sign(total)
    ties = np.flatnonzero(total == 0)
    if tie == TIE_RANDOM and ties.size:
        broadcast[ties] = np.where(server.random(ties.size) < 0.5, 1.0, -1.0)
    return broadcast
