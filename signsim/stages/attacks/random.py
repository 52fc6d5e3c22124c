"""random: a Byzantine worker sends |msg_i| with a fair random sign, one uniform per coordinate (Bernstein et al.
2019; docs/theory.md §2). Blind."""

NAME = "random"
PARAMS = ()
SUMMARY = "send |msg_i| with a fair random sign"
THEORY = "§8.5"
OMNISCIENT = False


def row(out, p, gen):
    for i in range(out.shape[0]):
        out[i] = abs(out[i]) if gen.random() < 0.5 else -abs(out[i])


def rows(msg, B, p):
    return


def reference(msg, p, gen):
    import numpy as np

    return np.where(gen.random(msg.size) < 0.5, 1.0, -1.0) * np.abs(msg)


def reference_rows(msgs, B, p):
    return msgs


def sign_law(p):
    """P(sent | own sign) for a blind Byzantine worker's sign message, rows own +1, 0, -1 and columns sent +1, 0, -1:
    |msg_i| with a fair sign makes a nonzero sign a fair +-1 and leaves a 0 (``--votes binomial`` draws its counts
    from it, docs/theory.md §11)."""
    return ((0.5, 0.0, 0.5), (0.0, 1.0, 0.0), (0.5, 0.0, 0.5))
