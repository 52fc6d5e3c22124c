"""Numbers as text and as shares (``signsim.numbers``).

floor(share x count) takes the share as written in decimal (``floor_share``, docs/theory.md §12, §8.4): the one rule
of ``--participation`` and ``trimmed:BETA``; the oracle is exact rational arithmetic on the decimal text. A number's
text is plain ASCII with ASCII spaces around it: a no-break space or ``1_0`` is refused by every option, the
check-stage's integers included."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from signsim.engine.stage_kernels import stage_function
from signsim.numbers import floor_share, to_float, to_int
from signsim.rounds import clients_per_round
from signsim.stages import registry


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 999_999), st.integers(1, 1_000_000))
def test_floor_share_is_the_floor_of_the_decimal_product(micro, count):
    text = f"0.{micro:06d}"
    assert floor_share(float(text), count) == math.floor(Fraction(text) * count)


def test_the_audit_case_and_its_neighbours():
    assert 0.29 * 100 < 29  # the floating-point product the rule forgives
    assert floor_share(0.29, 100) == 29 and floor_share(0.28, 100) == 28
    assert clients_per_round(100, 0.29, None) == 29
    assert floor_share(0.0, 7) == 0 and floor_share(0.5, 3) == 1


def test_trimmed_drops_floor_of_beta_m_as_written():
    trimmed = registry.builtin("aggregation")["trimmed"]
    kernel = stage_function(trimmed, "robust", False)
    rng = np.random.default_rng(3)
    msg = rng.standard_normal((100, 7))
    for beta, t in ((0.29, 29), (0.28, 28), (0.1, 10), (0.0, 0), (0.49, 49)):
        agg = np.zeros(7)
        kernel(msg, agg, np.array([beta]))
        kept = np.sort(msg, axis=0)[t:100 - t]
        expected = np.array([math.fsum(c) / (100 - 2 * t) for c in kept.T])
        np.testing.assert_allclose(agg, expected, rtol=1e-13, atol=0)
        np.testing.assert_array_equal(trimmed.reference(msg, np.array([beta]), 0, None, None), agg)


@pytest.mark.parametrize("text", ["\u00a01", "1\u00a0", "\u20031", "1_0", "\uff11", "\u0661"])
def test_a_number_is_plain_ascii_with_ascii_spaces(text):
    with pytest.raises(ValueError):
        to_int(text)
    with pytest.raises(ValueError):
        to_float(text)
    assert to_int(" 1\t") == 1 and to_float("\n2.5 ") == 2.5


@pytest.mark.parametrize("args", [
    ("run", "--workers", "\u00a02", "--iters", "3"),
    ("run", "--lr", "\u00a00.1", "--iters", "3"),
    ("run", "--aggregate", "trimmed:\u00a00.1", "--iters", "3"),
    ("check-stage", "sign", "--samples", "1_0"),
    ("check-stage", "sign", "--seed", "\u00a01"),
    ("check-stage", "sign", "--plugin", ""),
    ("run", "--plugin", "a.py,", "--iters", "2"),
])
def test_spelled_oddly_is_refused_in_one_line(cli, args):
    r = cli(*args)
    assert r.code == 2, r
    assert len(r.err.strip().splitlines()) == 1 and "error" in r.err, r.err
