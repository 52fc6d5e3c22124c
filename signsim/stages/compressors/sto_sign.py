"""sto-sign: +1 with probability 1/2 + v_i / (2 ||v||_2), else -1; 0 for v = 0 (docs/theory.md §3, §8). d bits;
||v||_2 C(v) is unbiased. One uniform per coordinate, in coordinate order."""

import math

NAME = "sto-sign"
PARAMS = ()
SUMMARY = "+1 w.p. 1/2 + v_i/(2||v||_2) else -1; ||v||_2 C(v) is unbiased"
KIND = "biased"
THEORY = "§8.1"
SCRATCH = False
BROADCAST = "sign-sum"
#: C(2^j v) = C(v): the diversity's estimates may compute in any power-of-two unit (docs/theory.md §10.4)
DEGREE = 0


def constant(d):
    return None


def may_be_zero(sign_zero):
    return True  # the stochastic sign of the zero vector is 0


def kernel(v, out, p, sign_zero, gen, iwork):
    d = v.shape[0]
    nrm = 0.0
    for i in range(d):
        nrm += float(v[i]) * float(v[i])  # float64 products of a float32 v (--dtype)
    nrm = math.sqrt(nrm)
    if nrm == 0.0:
        for i in range(d):
            out[i] = 0.0
    else:
        for i in range(d):
            out[i] = 1.0 if gen.random() < 0.5 + v[i] / (2.0 * nrm) else -1.0
    return 1.0 * d


def bits(d, p, sign_zero, nonzero):
    return d


def reference(v, p, sign_zero, gen):
    import numpy as np

    nrm = np.linalg.norm(v)
    if nrm == 0:
        return np.zeros_like(v)
    return np.where(gen.random(v.size) < 0.5 + v / (2 * nrm), 1.0, -1.0)


def sum_values(M, sign_zero):
    """How many values the sum of M messages takes per coordinate: M + 1 (values +-1; the zero vector, which has
    probability 0 under noise, is not counted separately)."""
    return M + 1


def moments(G, p, sign_zero):
    """(E||C(g_j)||^2, E C(g_j)) for the rows g_j of G (docs/theory.md §10.4): d and g_j / ||g_j||_2; 0 and 0 for
    g_j = 0 (sent as zeros)."""
    import numpy as np

    norm = np.sqrt(np.einsum("ij,ij->i", G, G))
    mean = np.divide(G, norm[:, None], out=np.zeros_like(G), where=norm[:, None] > 0)
    return np.where(norm > 0, float(G.shape[1]), 0.0), mean
