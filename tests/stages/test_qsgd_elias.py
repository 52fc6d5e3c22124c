"""QSGD's Elias-coded message (docs/theory.md §8.1): ``qsgd:S:elias`` counts the bits of the paper's encoding.

The oracle here shares no code with signsim's kernel: a plain-Python Elias omega encoder and decoder on strings of
'0' and '1', a plain-Python quantizer drawing the same uniforms, and a bit-level encoder and decoder of the whole
message (the norm as an IEEE float32, then for each non-zero level the omega code of its gap, a sign bit and the
omega code of the level). The kernel's count must equal the length of the string it writes, for every vector."""

import math
import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from signsim import accounting, stages
from signsim.engine import loop, stage_kernels
from signsim.engine.driver import simulate
from signsim.engine.reference import ReferenceRun
from signsim.errors import InputError
from signsim.stages import elias
from signsim.stages.compressors import qsgd

from ..conftest import make_engine

# ----- the oracle: Elias omega on bit strings (Elias 1975; the recursive code of Alistarh et al. 2017) -----


def omega_encode(k: int) -> str:
    assert k >= 1
    code = "0"
    while k > 1:
        b = format(k, "b")
        code = b + code
        k = len(b) - 1
    return code


def omega_decode(bits: str, pos: int) -> tuple[int, int]:
    """(k, position after its code)."""
    n = 1
    while bits[pos] == "1":
        m = int(bits[pos:pos + n + 1], 2)
        pos += n + 1
        n = m
    return n, pos + 1


def quantize(x: list[float], s: int, u: list[float]) -> tuple[float, list[int], list[int]]:
    """(norm, signs (+1/-1), levels) of QSGD, as the paper defines it, in plain Python (same operation order)."""
    total = 0.0
    for xi in x:
        total += xi * xi
    nrm = math.sqrt(total)
    levels, signs = [], []
    for xi, ui in zip(x, u, strict=True):
        if nrm == 0.0:
            levels.append(0)
        else:
            r = s * abs(xi) / nrm
            lo = math.floor(r)
            levels.append(lo + 1 if ui < r - lo else lo)
        signs.append(1 if xi > 0.0 else -1)
    return nrm, signs, levels


def encode_message(nrm: float, signs: list[int], levels: list[int]) -> str:
    out = [format(struct.unpack(">I", struct.pack(">f", nrm))[0], "032b")]
    last = 0
    for i, (sg, lv) in enumerate(zip(signs, levels, strict=True)):
        if lv:
            out.append(omega_encode(i + 1 - last) + ("1" if sg < 0 else "0") + omega_encode(lv))
            last = i + 1
    return "".join(out)


def decode_message(bits: str, d: int) -> tuple[float, list[int]]:
    """(the norm as sent, the signed levels); the receiver knows d and the message's length."""
    nrm = struct.unpack(">f", struct.pack(">I", int(bits[:32], 2)))[0]
    signed = [0] * d
    pos, at = 32, 0
    while pos < len(bits):
        gap, pos = omega_decode(bits, pos)
        sign = -1 if bits[pos] == "1" else 1
        level, pos = omega_decode(bits, pos + 1)
        at += gap
        signed[at - 1] = sign * level
    return nrm, signed


# ----- the integer code ------------------------------------------------------------------------------------

# Elias omega codewords of 1..16 as OEIS A281193 lists them (also the table of Wikipedia's "Elias omega coding")
OMEGA_CODEWORDS = ["0", "100", "110", "101000", "101010", "101100", "101110", "1110000", "1110010", "1110100",
                   "1110110", "1111000", "1111010", "1111100", "1111110", "10100100000"]
OMEGA_1_TO_16 = [1, 3, 3, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7, 11]


def test_omega_codewords_and_lengths_from_the_literature():
    assert [omega_encode(k) for k in range(1, 17)] == OMEGA_CODEWORDS
    assert [len(c) for c in OMEGA_CODEWORDS] == OMEGA_1_TO_16
    assert [elias.omega_bits(k) for k in range(1, 17)] == OMEGA_1_TO_16
    assert elias.omega_bits_np(np.arange(1, 17)).tolist() == OMEGA_1_TO_16


def test_omega_lengths_match_the_encoder_and_the_decoder_inverts_it():
    ks = list(range(1, 5000)) + [2 ** e + o for e in range(12, 62) for o in (-1, 0, 1)]
    lengths = elias.omega_bits_np(np.array(ks))
    for k, n in zip(ks, lengths, strict=True):
        code = omega_encode(k)
        assert elias.omega_bits(k) == n == len(code), k
        assert omega_decode(code + "1", 0) == (k, len(code))  # prefix-free: the trailing bit is not read
    small = elias.omega_bits_np(np.arange(1, 5000))
    assert np.all(np.diff(small) >= 0) and np.all(small <= 2 * np.arange(1, 5000) - 1)  # the bound `bits` uses
    with pytest.raises(ValueError):
        elias.omega_bits_np([0])


# ----- the message ------------------------------------------------------------------------------------------

finite = st.one_of(st.just(0.0), st.sampled_from([1.0, -1.0, 0.5, -0.5]),
                   st.floats(-1e3, 1e3, allow_nan=False, allow_subnormal=False),
                   st.builds(lambda m, e: m * 10.0 ** e, st.floats(-10, 10), st.integers(-30, 30)))  # heavy tails
vectors = st.one_of(st.lists(finite, min_size=1, max_size=60),
                    st.integers(1, 300).map(lambda d: [0.0] * d),  # the zero vector
                    st.tuples(st.integers(1, 400), st.integers(0, 2 ** 32 - 1)).map(  # sparse, long gaps
                        lambda t: np.where(np.random.default_rng(t[1]).random(t[0]) < 0.02,
                                           np.random.default_rng(t[1] + 1).standard_cauchy(t[0]), 0.0).tolist()))
levels_s = st.sampled_from([1, 2, 3, 4, 7, 8, 15, 16, 255, 1000, 2 ** 20, 2 ** 31])


def kernel(spec: str, x: np.ndarray, seed: int):
    return stage_kernels.compress_once(stages.parse_compressor(spec, x.size), x, 0, np.random.default_rng(seed))


@given(vectors, levels_s, st.integers(0, 2 ** 32 - 1))
def test_kernel_counts_the_length_of_the_message_the_oracle_writes_and_reads_back(x, s, seed):
    x = np.array(x, dtype=np.float64)
    d = x.size
    out, counted = kernel(f"qsgd:{s}:elias", x, seed)
    nrm, signs, levels = quantize(x.tolist(), s, np.random.default_rng(seed).random(d).tolist())
    message = encode_message(nrm, signs, levels)
    assert counted == len(message)
    assert accounting.message_bits(f"qsgd:{s}:elias", x, out, 0) == len(message)
    # the bound `bits` declares holds for this message, given its non-zeros and over all messages
    n = int(np.count_nonzero(out))
    assert len(message) <= accounting.uplink_bits(f"qsgd:{s}:elias", d, 0, n) <= \
        accounting.uplink_bits(f"qsgd:{s}:elias", d, 0)
    sent_norm, signed = decode_message(message, d)
    assert sent_norm == np.float32(nrm)
    assert signed == [sg * lv for sg, lv in zip(signs, levels, strict=True)]  # the round trip is exact
    # the kernel's message is the decoded one (signsim's iterate keeps the norm in float64; 32 bits are counted)
    np.testing.assert_array_equal(out, np.array([nrm * abs(q) / s * (1.0 if q > 0 else -1.0) if q else 0.0
                                                 for q in signed]))
    # the same draws give the same vector with the fixed-length code: the coding changes the bits only
    fixed, fixed_bits = kernel(f"qsgd:{s}", x, seed)
    np.testing.assert_array_equal(fixed, out)
    L, index = math.ceil(math.log2(s + 1)), max(1, math.ceil(math.log2(d)))
    assert fixed_bits == 33 + min(d * (1 + L), n * (index + 1 + L))


def test_degenerate_messages():
    # the zero vector: the norm only; d = 1: gap 1 (1 bit), sign, level s (a unit vector quantizes exactly)
    assert kernel("qsgd:4:elias", np.zeros(7), 0)[1] == 32
    assert kernel("qsgd:4:elias", np.array([-3.0]), 0)[1] == 32 + 1 + 1 + len(omega_encode(4))
    # every coordinate equal: r_i = s / sqrt(d) = 1 for s = 4, d = 16, so every level is exactly 1 (no draw wins)
    out, counted = kernel("qsgd:4:elias", np.full(16, -2.0), 3)
    assert np.all(out == -2.0) and counted == 32 + 16 * (1 + 1 + 1)


# ----- the spec, the records, the runs ------------------------------------------------------------------------

def test_the_spec_records_the_coding_and_keeps_qsgd_4():
    assert stages.parse_compressor("qsgd").spec == "qsgd:4"
    assert stages.parse_compressor("qsgd:4:fixed").spec == "qsgd:4"
    assert stages.parse_compressor("qsgd:4:elias").spec == "qsgd:4:elias"
    with pytest.raises(InputError, match="empty"):  # an empty field is refused, not taken as the default (s = 4)
        stages.parse_compressor("qsgd::elias")
    assert stages.compressor_constant("qsgd:4:elias", 100)["coding"] == "elias"
    assert qsgd.bits(10, (4.0, 1.0), 0, None) == 32 + 10 * (2 + 6)


@pytest.mark.parametrize("spec", ["qsgd:4:huffman", "qsgd:4:elias:1", "qsgd:4:1"])
def test_bad_codings_exit_2_naming_them(cli, spec):
    r = cli("run", "--compressor", spec, "--iters", "2")
    lines = r.err.strip().splitlines()
    assert r.code == 2 and len(lines) == 1 and spec in lines[0], r.err


def test_elias_runs_the_same_iterates_with_fewer_bits(cli):
    base = ["run", "--method", "qsgd", "--problem", "quadratic", "--dim", "200", "--workers", "4", "--iters", "15",
            "--eval-every", "1", "--noise", "gaussian:1", "--json"]
    fixed = cli(*base).json()
    coded = cli(*base, "--compressor", "qsgd:4:elias").json()
    assert fixed["stages"]["compressor"]["spec"] == "qsgd:4"
    assert coded["stages"]["compressor"]["spec"] == "qsgd:4:elias"
    assert [r["loss"] for r in coded["history"]] == [r["loss"] for r in fixed["history"]]
    assert [r["bits_down"] for r in coded["history"]] == [r["bits_down"] for r in fixed["history"]]
    assert 0 < coded["final"]["bits_up"] < fixed["final"]["bits_up"]
    assert coded["bits_per_iter"]["up"] == 4 * (32 + 200 * (2 + 6))  # the declared bound


def test_compiled_run_matches_the_replay_message_by_message():
    engine, problem, model, params, settings, cfg = make_engine(
        iters=8, eval_every=1, method="qsgd", compressor="qsgd:3:elias", problem="quadratic", dim=40, workers=3,
        noise="gaussian:1")
    simulate(engine)
    ref = ReferenceRun(problem, model, params, settings, cfg.workers, cfg.seed)
    for _ in range(8):
        ref.step()
    np.testing.assert_allclose(engine.x, ref.x, rtol=1e-12, atol=1e-14)
    assert engine.tally[loop.T_UP] == ref.bits_up > 0


def test_check_stage_passes_the_elias_coding(cli):
    r = cli("check-stage", "qsgd:4:elias", "--samples", "200")
    assert r.code == 0, r.out + r.err
    assert "FAIL" not in r.out
