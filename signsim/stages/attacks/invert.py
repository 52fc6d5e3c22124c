"""invert: a Byzantine worker sends -msg (Bernstein et al. 2019; docs/theory.md §2). Blind."""

NAME = "invert"
PARAMS = ()
SUMMARY = "send -msg"
THEORY = "§8.5"
OMNISCIENT = False


def row(out, p, gen):
    for i in range(out.shape[0]):
        out[i] = -out[i]


def rows(msg, B, p):
    return


def reference(msg, p, gen):
    return -msg


def reference_rows(msgs, B, p):
    return msgs


def sign_law(p):
    """P(sent | own sign) for a blind Byzantine worker's sign message, rows own +1, 0, -1 and columns sent +1, 0, -1:
    -msg swaps +1 and -1 (``--votes binomial`` draws its counts from it, docs/theory.md §11)."""
    return ((0.0, 0.0, 1.0), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0))
