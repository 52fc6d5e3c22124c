"""Bit accounting (docs/theory.md §7) against hand-computed counts, independent of the compressors."""

import pytest

from signsim.accounting import bits_per_iteration, downlink_bits, uplink_bits
from signsim.codes import SignZero, Tie

from ..conftest import run_engine

Z, T = SignZero, Tie


class C:  # the compressors by spec
    IDENTITY, SIGN, STO_SIGN, SCALED_SIGN_EF = "identity", "sign", "sto-sign", "scaled-sign"


class A:
    MEAN, MAJORITY = "mean", "majority"


@pytest.mark.parametrize(("compressor", "sign_zero", "bits"), [
    (C.IDENTITY, Z.RANDOM, 32 * 100),
    (C.SIGN, Z.RANDOM, 100),
    (C.SIGN, Z.PLUS, 100),
    (C.SIGN, Z.ZERO, 200),
    (C.STO_SIGN, Z.ZERO, 100),
    (C.SCALED_SIGN_EF, Z.RANDOM, 100 + 32),
    (C.SCALED_SIGN_EF, Z.ZERO, 200 + 32),
])
def test_uplink(compressor, sign_zero, bits):
    assert uplink_bits(compressor, 100, sign_zero) == bits


@pytest.mark.parametrize(("compressor", "aggregate", "M", "sign_zero", "tie", "per_coord"), [
    (C.IDENTITY, A.MEAN, 8, Z.RANDOM, T.RANDOM, 32),
    (C.SCALED_SIGN_EF, A.MEAN, 8, Z.RANDOM, T.RANDOM, 32),
    (C.SIGN, A.MAJORITY, 7, Z.RANDOM, T.RANDOM, 1),
    (C.SIGN, A.MAJORITY, 7, Z.RANDOM, T.ZERO, 1),  # odd M of +-1 messages cannot tie
    (C.SIGN, A.MAJORITY, 8, Z.RANDOM, T.ZERO, 2),  # even M can: ternary broadcast
    (C.SIGN, A.MAJORITY, 7, Z.ZERO, T.ZERO, 2),  # zero messages can tie at odd M
    (C.SIGN, A.MAJORITY, 8, Z.ZERO, T.RANDOM, 1),
    (C.STO_SIGN, A.MEAN, 1, Z.RANDOM, T.RANDOM, 1),  # sums in {-1, 1}
    (C.STO_SIGN, A.MEAN, 3, Z.RANDOM, T.RANDOM, 2),  # {-3, -1, 1, 3}
    (C.STO_SIGN, A.MEAN, 32, Z.RANDOM, T.RANDOM, 6),  # 33 values
    (C.SIGN, A.MEAN, 31, Z.RANDOM, T.RANDOM, 5),  # 32 values
    (C.SIGN, A.MEAN, 31, Z.ZERO, T.RANDOM, 6),  # 63 values in -31..31
    (C.IDENTITY, A.MAJORITY, 4, Z.RANDOM, T.RANDOM, 1),
])
def test_downlink(compressor, aggregate, M, sign_zero, tie, per_coord):
    assert downlink_bits(compressor, aggregate, M, 10, sign_zero, tie) == 10 * per_coord


def test_both_directions_scale_with_workers():
    b = bits_per_iteration(C.STO_SIGN, A.MEAN, 32, 10, Z.RANDOM, T.RANDOM)
    assert (b.up, b.down) == (32 * 10, 32 * 6 * 10)


def test_run_history_counts_bits_cumulatively(cli):
    r = cli("run", "--method", "signsgd", "--workers", "5", "--iters", "40", "--eval-every", "10", "--json")
    doc = r.json()
    d = doc["problem"]["dim"]
    assert doc["bits_per_iter"] == {"up": 5 * d, "down": 5 * d, "up_mean": 5 * d, "up_worst": 5 * d, "down_mean": 5 * d}
    for row in doc["history"]:
        assert row["bits_up"] == row["iter"] * 5 * d
        assert row["bits_down"] == row["iter"] * 5 * d
    assert doc["final"]["bits_up"] == 40 * 5 * d
    assert run_engine(iters=3).iters_done == 3
