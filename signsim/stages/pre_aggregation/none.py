"""none: the messages go to the aggregation as they are (docs/theory.md §8.9)."""

NAME = "none"
PARAMS = ()
SUMMARY = "the messages as they are"
THEORY = "§8.9"


def rows(n, params):
    return n


def pre(msg, n, p, gen):
    return n


def reference(msgs, params, gen):
    return msgs
