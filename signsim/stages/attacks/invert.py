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
