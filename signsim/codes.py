"""Integer codes that select branches inside the compiled loop: the one place where every code is assigned.

Numba caches a kernel only when it dispatches on plain integers (not on function objects), so the choices a run
makes that are not stages (problem, noise, sign conventions, schedule) reach the engine as one of these. The stages
(momentum, compressor, error feedback, aggregation, attack) have no codes: each run's loop is composed from their
modules (``signsim.stages``, ``signsim.engine.compose``).
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
    EXTERNAL = 8  # gradients computed outside the loop (a PyTorch model)


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


class Topology(IntEnum):
    """How the messages of a round travel, for the simulated clock (``--topology``, docs/theory.md §14); NONE: no
    system model (the run keeps no clock)."""

    NONE = 0
    PS = 1  # a parameter server: each worker's link to it, and the server's own link
    ALLREDUCE = 2  # a ring all-reduce among the round's participants
    ALLGATHER = 3  # a ring all-gather among the round's participants


class Status(IntEnum):
    """How the compiled loop ended a chunk."""

    OK = 0
    DIVERGED = 1
    TARGET = 2  # the loss reached the stop-loss target
    BUDGET = 3  # the bits sent up and down reached the communication budget, or the clock its (docs/theory.md §12, §14)
    CONTRACT = 4  # a stage returned what its contract forbids (a plugin's: bits not finite or < 0, rows out of 1..n)


def choice(enum: type[IntEnum], name: str) -> IntEnum:
    """Map a user-facing name (``'sto-sign'``, ``'random'``) to its code."""
    return enum[name.upper().replace("-", "_")]


def names(enum: type[IntEnum]) -> list[str]:
    """The user-facing names of an enum, in code order."""
    return [e.name.lower().replace("_", "-") for e in enum]
