"""identity: C(v) = v, sent as 32-bit floats (docs/theory.md §8.1). omega = 0."""

NAME = "identity"
PARAMS = ()
SUMMARY = "the vector itself, 32-bit floats (omega = 0)"
KIND = "unbiased"
THEORY = "§8.1"
SCRATCH = False
BROADCAST = "floats"  # the mean of floats is floats
#: the sum of two messages is a message of the same encoding (32-bit floats): a ring all-reduce can carry them
#: (``--topology allreduce``, docs/theory.md §14)
ALLREDUCE = True
#: C(2^j v) = 2^j C(v) in law: the diversity's estimates may compute in a power-of-two unit (docs/theory.md §10.4)
DEGREE = 1


def constant(d):
    return 0.0


def may_be_zero(sign_zero):
    return True


def kernel(v, out, p, sign_zero, gen, iwork):
    d = v.shape[0]
    for i in range(d):
        out[i] = v[i]
    return 32.0 * d


def bits(d, p, sign_zero, nonzero):
    return 32 * d


def reference(v, p, sign_zero, gen):
    return v.copy()
