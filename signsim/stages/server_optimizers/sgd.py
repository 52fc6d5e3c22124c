"""The server's plain step (FedAvg; docs/theory.md §12.4): x <- x - eta_s gamma_k direction."""

NAME = "sgd"
PARAMS = ()
SUMMARY = "x <- x - eta_s gamma_k direction"
THEORY = "§12.4"
STATE = False


def update(direction, opt, p, k):
    return direction


def reference(direction, opt, p, k):
    return direction
