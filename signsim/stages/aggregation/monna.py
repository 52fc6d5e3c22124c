"""monna:F: mean of the nearest neighbours (Farhadkhani et al. 2023; ByzFL's MoNNA; docs/theory.md §8.4): the mean of
the M - F messages nearest (Euclidean, ties: the lower worker index) to a trusted one. ByzFL trusts a given worker;
here it is the round's last participant, which is honest whenever one is (signsim's Byzantine workers come first).
Needs M > 2 F. 32 d bits."""

import numpy as np

from signsim.errors import InputError
from signsim.stages.base import FLOAT_BITS, Param
from signsim.stages.rows import mean_of_rows_blocked, row_sq_dists
from signsim.stages.sorting import stable_order

NAME = "monna"
PARAMS = (Param("f", "int", low=0, high=2 ** 31),)
SUMMARY = "mean of the M - f messages nearest to the last (honest) participant's (Farhadkhani et al. 2023)"
THEORY = "§8.4"
SUMMED = False


def check_workers(M, byzantine, spec):
    f = int(float(str(spec).partition(":")[2] or 0))
    if not M > 2 * f:
        raise InputError(f"--aggregate {spec} with --workers {M}: MoNNA needs M > 2 f")


def finish(agg, M, p, tie, gen):
    return


def robust(msg, agg, p):
    M = msg.shape[0]
    dist = np.empty(M)
    row_sq_dists(msg, M, msg[M - 1], dist)  # = squared_distance(msg, m, M - 1), bit for bit
    order = np.empty(M, dtype=np.int64)
    stable_order(dist, order)  # ties to the lower index
    mean_of_rows_blocked(msg, order, M - int(p[0]), agg)


def sparse(compressor):
    return False


def down_bits(compressor, cparams, M, d, sign_zero, tie):
    return FLOAT_BITS * d


def reference(msgs, p, tie, server, prev):
    M = msgs.shape[0]
    k = M - int(p[0])
    dist = np.linalg.norm(msgs - msgs[-1], axis=1)
    keep = sorted(range(M), key=lambda m: (dist[m], m))[:k]
    return msgs[keep].mean(axis=0)
