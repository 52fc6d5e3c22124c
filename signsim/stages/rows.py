"""Helpers the robust aggregations share (plain Python, compiled into each kernel that calls them): distances
between messages and the mean of chosen ones."""


def squared_distance(msg, a, b):
    """||msg_a - msg_b||_2^2."""
    s = 0.0
    for i in range(msg.shape[1]):
        t = msg[a, i] - msg[b, i]
        s += t * t
    return s


def mean_of_rows(msg, order, k, agg):
    """agg <- the mean of the messages order[0], ..., order[k - 1], summed in that order."""
    for i in range(msg.shape[1]):
        s = 0.0
        for c in range(k):
            s += msg[order[c], i]
        agg[i] = s / k
