"""mimic[:E]: every Byzantine worker sends the message of the round's honest participant E (0 the first; ByzFL's
Mimic with epsilon = E; docs/theory.md §8.5), which over-weights that worker's data. Omniscient. E beyond the round's
honest participants takes the last."""

from signsim.stages.base import Param

NAME = "mimic"
PARAMS = (Param("e", "int", low=0, high=2 ** 31, default=0.0),)
SUMMARY = "copy the message of honest participant E of the round (default 0, the first)"
THEORY = "§8.5"
OMNISCIENT = True


def row(out, p, gen):
    return


def rows(msg, B, p):
    M, d = msg.shape
    src = min(B + int(p[0]), M - 1)
    for m in range(B):
        for i in range(d):
            msg[m, i] = msg[src, i]


def reference(msg, p, gen):
    return msg


def reference_rows(msgs, B, p):
    out = msgs.copy()
    out[:B] = msgs[min(B + int(p[0]), len(msgs) - 1)]
    return out
