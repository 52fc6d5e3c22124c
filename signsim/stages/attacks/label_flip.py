"""label-flip: a Byzantine worker computes its gradient honestly, by the run's method, on its own data with every
label flipped (docs/theory.md §8.5): y -> C - 1 - y for C classes (the MLP's class indices; ByzFL's LabelFlipping
convention), y -> -y for logistic regression's +-1 labels. Blind; it acts on the data, not on the message: its
LABELS flag (``signsim.stages.kinds``, a setup flag) has the run's data setup give the Byzantine workers the flipped
copy of the labels (``signsim.problems.finite_sum.with_flipped_labels``), and its row and rows leave the message as
it is. Only for the problems with class labels (logistic, mlp); the others refuse it."""

NAME = "label-flip"
PARAMS = ()
SUMMARY = "compute the gradient on flipped labels (y -> C-1-y; logistic y -> -y)"
THEORY = "§8.5"
OMNISCIENT = False
LABELS = True


def row(out, p, gen):
    return


def rows(msg, B, p):
    return


def reference(msg, p, gen):
    return msg


def reference_rows(msgs, B, p):
    return msgs
