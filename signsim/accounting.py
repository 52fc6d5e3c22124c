"""Communication accounting, docs/theory.md §7: bits per message and per direction.

Uplink of one iteration = the sum over workers of the message size; downlink = the server's broadcast times M.
Each compressor module declares its message's size as a formula (``bits``) beside the kernel that counts the
bits of every message as it produces it (``signsim.stages.compressors``); each aggregation module declares the
size of its broadcast (``down_bits``), and whether it is sparse (then counted as the run goes). The tables of
docs/reference.md list them. Byzantine workers send messages of the same size. Everything here is a pure
function of the settings, so it can be audited and tested on its own (``tests/base/test_accounting.py``); the tests
compare it with the kernels' counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from signsim.stages.base import FLOAT_BITS, index_bits  # noqa: F401 - re-exported


def _stage(kind: str, stage):
    from signsim.stages import registry

    return registry.parse(kind, stage) if isinstance(stage, str) else stage


def messages_may_be_zero(compressor, sign_zero) -> bool:
    """Can a coordinate of a worker message be exactly 0 (so that a sum of messages can tie at 0)?"""
    return bool(_stage("compressor", compressor).module.may_be_zero(int(sign_zero)))


def uplink_bits(compressor, d: int, sign_zero, nonzero: int | None = None) -> int:
    """Bits of one worker's message (``compressor``: a resolved Stage or a spec; ``nonzero``: the message's
    non-zero entries, d when unknown, for the messages whose size depends on them)."""
    c = _stage("compressor", compressor)
    from signsim.stages.plugins import declared

    return int(declared(c.module, "bits", d, c.params, int(sign_zero), nonzero))


def message_bits(compressor, v, out, sign_zero) -> int:
    """Bits of the worker message ``out`` = C(``v``), exactly as the kernel counts it: the module's
    ``message_bits`` where the size depends on more than the count of non-zero entries (QSGD's Elias code: the
    gaps and the levels), else ``uplink_bits`` with that count."""
    import numpy as np

    c = _stage("compressor", compressor)
    if hasattr(c.module, "message_bits"):
        from signsim.stages.plugins import declared

        return int(declared(c.module, "message_bits", v, out, c.params, int(sign_zero)))
    return uplink_bits(c, out.size, sign_zero, int(np.count_nonzero(out)))


def broadcast_is_sparse(compressor, aggregate) -> bool:
    """The mean of sparse messages is sent as (index, float) pairs when that is cheaper; its size depends on
    the iteration, so the run counts it: 1 + min(32 d, n (32 + I)) for n non-zero entries."""
    return bool(_stage("aggregation", aggregate).module.sparse(_stage("compressor", compressor).module))


def sparse_broadcast_bits(d: int, nonzero: int) -> int:
    return 1 + min(FLOAT_BITS * d, nonzero * (FLOAT_BITS + index_bits(d)))


def downlink_bits(compressor, aggregate, M: int, d: int, sign_zero, tie) -> int:
    """Bits of the server's broadcast to one worker (for a sparse broadcast: its dense upper bound)."""
    c, a = _stage("compressor", compressor), _stage("aggregation", aggregate)
    from signsim.stages.plugins import declared

    return int(declared(a.module, "down_bits", c.module, c.params, M, d, int(sign_zero), int(tie)))


@dataclass(frozen=True)
class BitsPerIteration:
    up: int  # summed over the M workers
    down: int  # the broadcast times M


def bits_per_iteration(compressor, aggregate, M: int, d: int, sign_zero, tie, down=None,
                       extra=(0.0, 0.0), exact_rounds: int = 0, catch_up: int = 0) -> BitsPerIteration:
    """Bits of one iteration (upper bounds for the messages whose size varies: QSGD, sparse broadcasts); with a
    compressed downlink (``down``, its compressor: docs/theory.md §8.8) the broadcast is that compressor's message;
    ``extra``: what each participant sends and receives besides (the estimator's ``extra_bits``: SCAFFOLD's control
    variates, §12.6); ``exact_rounds``: for a run with rounds in which each of its n workers sends its exact gradient
    in floats (MARINA's, §8.10), n, who also receive every round's broadcast (the bound is then the larger of the two
    kinds of round); ``catch_up``: how many of a round's participants may first download the model they missed (§12:
    M of them with partial participation, as an upper bound)."""
    up = M * uplink_bits(compressor, d, sign_zero) + int(M * extra[0])
    down_ = M * (downlink_bits(compressor, aggregate, M, d, sign_zero, tie) if down is None
                 else uplink_bits(down, d, sign_zero)) + int(M * extra[1])
    if exact_rounds:  # its rounds of exact gradients: n floats vectors each way; its other rounds' broadcast to n
        n = exact_rounds
        up = max(up, n * FLOAT_BITS * d)
        down_ = max(down_, n * FLOAT_BITS * d, n * downlink_bits(compressor, aggregate, M, d, sign_zero, tie))
    return BitsPerIteration(up=up, down=down_ + catch_up * FLOAT_BITS * d)


def budget_bits(cfg) -> float:
    """The communication budget of a run config (a RunConfig or its dict) in bits: ``--budget-bits``, or
    ``--budget-mb`` times 8e6; inf without one (docs/theory.md §12)."""
    get = cfg.get if isinstance(cfg, dict) else lambda name: getattr(cfg, name, None)
    if get("budget_bits") is not None:
        return float(get("budget_bits"))
    if get("budget_mb") is not None:
        return float(get("budget_mb")) * 8e6
    return math.inf


def smallest_round_bits(compressor, aggregate, M: int, d: int, sign_zero, tie, down=None, extra=(0.0, 0.0)) -> int:
    """The fewest bits one iteration can send, up plus down (docs/theory.md §12): the bits of one iteration for
    fixed-size messages; for a message or broadcast whose size varies (QSGD, a sparse broadcast), its size with no
    non-zero entry. A communication budget below this stops nothing and is refused. ``down``: a compressed
    downlink's compressor (docs/theory.md §8.8)."""
    c, a = _stage("compressor", compressor), _stage("aggregation", aggregate)
    up = M * uplink_bits(c, d, sign_zero, 0) + int(M * (extra[0] + extra[1]))
    if down is not None:
        return up + M * uplink_bits(down, d, sign_zero, 0)
    if broadcast_is_sparse(c, a):
        return up + M * sparse_broadcast_bits(d, 0)
    return up + M * downlink_bits(c, a, M, d, sign_zero, tie)
