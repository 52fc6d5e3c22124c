"""Integer codes that select branches inside the compiled loop: the one place where every code is assigned.

Numba caches a kernel only when it dispatches on plain integers (not on function objects), so every choice a
run makes (compressor, server rule, sign conventions, schedule, attack) reaches the engine as one of these.
This module imports nothing heavy: the CLI and the registries can use it freely.
"""

from enum import IntEnum


class Problem(IntEnum):
    """Problem codes (one module each in ``signsim.problems``, kernels in ``signsim.engine.dispatch``)."""

    ROSENBROCK = 1
    QUADRATIC = 2
    SIGN_TRAP = 3
    VOTE_TRAP = 4
    LOGISTIC = 5
    LEAST_SQUARES = 6
    MLP = 7


class Noise(IntEnum):
    """Noise-model codes (one module each in ``signsim.noise``, draws in ``signsim.engine.dispatch``)."""

    NONE = 0
    GAUSSIAN = 1
    LAPLACE = 2
    UNIFORM = 3
    STUDENT_T = 4
    BIMODAL = 5
    SKEWED = 6
    CAUCHY = 7
    STABLE = 8


class Momentum(IntEnum):
    """The first stage of a worker: what it compresses (docs/theory.md §2, §8)."""

    NONE = 0  # v = g_hat
    EMA = 1  # m <- beta m + (1 - beta) g_hat, m_0 = 0; v = m
    EMA_FIRST = 2  # the same with m_0 = g_hat(x_0) (SSDM)
    LION = 3  # v = beta1 m + (1 - beta1) g_hat, then m <- beta2 m + (1 - beta2) g_hat, m_0 = 0


class Compressor(IntEnum):
    """What a worker sends (docs/theory.md §8; encodings and sizes in ``signsim.stages``)."""

    IDENTITY = 0  # full-precision vector (SGD)
    SIGN = 1  # sign(v), sign(0) by the SignZero policy
    STO_SIGN = 2  # stochastic sign: +1 w.p. 1/2 + v_i / (2 ||v||_2), else -1
    SCALED_SIGN = 3  # (||v||_1 / d) sign(v)
    SCALED_SIGN_EF = 3  # the name it had when error feedback was welded to it
    QSGD = 4  # ||v||_2 sign(v_i) xi_i / s, xi_i a stochastic rounding of s |v_i| / ||v||_2
    TERNGRAD = 5  # max|v| sign(v_i) Bernoulli(|v_i| / max|v|)
    TOP_K = 6  # the k entries of largest |v_i| (ties: the lower index first), zeros elsewhere
    RAND_K = 7  # (d / k) v on k coordinates drawn uniformly without replacement
    NATURAL = 8  # sign(v_i) times an unbiased stochastic rounding of |v_i| to a power of two
    ONEBIT = 9  # 1-bit SGD: v_i >= 0 -> mean of those entries, v_i < 0 -> mean of the negative ones


class ErrorFeedback(IntEnum):
    """How a worker corrects its compression error (docs/theory.md §8)."""

    NONE = 0  # msg = C(v), x <- x - gamma_k aggregate
    EF = 1  # p = gamma_k v + e, msg = C(p), e <- p - msg; x <- x - aggregate
    EF21 = 2  # msg = C(v - g_m), g_m <- g_m + msg; server g <- g + aggregate, x <- x - gamma_k g


class Aggregate(IntEnum):
    """What the server does with the M messages."""

    MEAN = 0  # (1/M) sum_m msg_m
    MAJORITY = 1  # sign(sum_m msg_m), ties by the Tie policy
    MEDIAN = 2  # coordinate-wise median (the mean of the two middle values for even M)
    TRIMMED = 3  # coordinate-wise mean after dropping the floor(beta M) largest and smallest values


class SignZero(IntEnum):
    """What sign(0) returns in a worker message."""

    RANDOM = 0  # a fair random +-1 (keeps 1-bit messages)
    PLUS = 1  # +1
    ZERO = 2  # 0 (a ternary message: 2 bits per coordinate)


class Tie(IntEnum):
    """How the server breaks a tied vote (sum of messages exactly 0)."""

    RANDOM = 0  # a fair random +-1 drawn from the server's stream
    ZERO = 1  # 0 (the broadcast becomes ternary when ties can occur)


class Schedule(IntEnum):
    """Step-size schedule: gamma_k."""

    CONSTANT = 0  # gamma_k = gamma_0
    SQRT = 1  # gamma_k = gamma_0 / sqrt(k + 1)


class Attack(IntEnum):
    """What the first ``--byzantine`` workers send. INVERT and RANDOM are blind (Bernstein et al. 2019); ALIE
    and IPM are omniscient: they see the honest messages of the same iteration."""

    INVERT = 0  # send -msg
    RANDOM = 1  # send |msg_i| times a fair random sign, coordinate by coordinate
    ALIE = 2  # honest mean - z * honest standard deviation, per coordinate (Baruch et al. 2019)
    IPM = 3  # -eps * honest mean (Xie et al. 2020)


class Status(IntEnum):
    """How the compiled loop ended a chunk."""

    OK = 0
    DIVERGED = 1
    TARGET = 2  # the loss reached the stop-loss target


def choice(enum: type[IntEnum], name: str) -> IntEnum:
    """Map a user-facing name (``'sto-sign'``, ``'random'``) to its code."""
    return enum[name.upper().replace("-", "_")]


def names(enum: type[IntEnum]) -> list[str]:
    """The user-facing names of an enum, in code order."""
    return [e.name.lower().replace("_", "-") for e in enum]
