"""The stages a method is composed of (docs/theory.md §2, §8): one table per stage kind, and the parsing of
the options that choose them (``--compressor``, ``--error-feedback``, ``--aggregate``, ``--attack``).

A method is momentum -> compressor -> error feedback -> attack -> aggregation, composed once per run into
integer codes and float parameters that the compiled loop dispatches on (``signsim.codes``). This module is
pure Python and imports nothing heavy: the CLI, the config and ``signsim list`` use it freely.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from signsim.codes import Aggregate, Attack, Compressor, ErrorFeedback, Momentum
from signsim.errors import InputError


@dataclass(frozen=True)
class CompressorInfo:
    """One compressor: its spec form, a one-line summary, and its constant.

    ``kind`` is "unbiased" (E C(x) = x, E||C(x) - x||^2 <= omega ||x||^2), "contractive"
    (||C(x) - x||^2 <= (1 - alpha) ||x||^2, in expectation for random ones) or "biased" (neither)."""

    code: Compressor
    form: str
    summary: str
    kind: str
    constant: Callable[[int, float], float] | None  # (d, param) -> omega or alpha
    param: str | None = None  # "s" or "k"
    default_param: Callable[[int], float] | None = None


def _default_k(d: int) -> float:
    """k = ceil(d / 10) when a sparsifier is named without its k."""
    return float(max(1, math.ceil(d / 10)))


COMPRESSORS: dict[str, CompressorInfo] = {
    "identity": CompressorInfo(Compressor.IDENTITY, "identity", "the vector itself, 32-bit floats (omega = 0)",
                               "unbiased", lambda d, p: 0.0),
    "sign": CompressorInfo(Compressor.SIGN, "sign", "sign(v), 1 bit per coordinate", "biased", None),
    "sto-sign": CompressorInfo(Compressor.STO_SIGN, "sto-sign",
                               "+1 w.p. 1/2 + v_i/(2||v||_2) else -1; ||v||_2 C(v) is unbiased", "biased", None),
    "scaled-sign": CompressorInfo(Compressor.SCALED_SIGN, "scaled-sign", "(||v||_1/d) sign(v) (alpha = 1/d)",
                                  "contractive", lambda d, p: 1.0 / d),
    "qsgd": CompressorInfo(Compressor.QSGD, "qsgd:S", "QSGD, s levels of |v_i|/||v||_2 stochastically rounded "
                           "(omega = min(d/s^2, sqrt(d)/s))", "unbiased",
                           lambda d, p: min(d / p**2, math.sqrt(d) / p), "s", lambda d: 4.0),
    "terngrad": CompressorInfo(Compressor.TERNGRAD, "terngrad", "TernGrad, max|v| sign(v_i) Bernoulli(|v_i|/max|v|) "
                               "(omega = sqrt(d) - 1)", "unbiased", lambda d, p: math.sqrt(d) - 1.0),
    "top-k": CompressorInfo(Compressor.TOP_K, "top-k:K", "the K largest |v_i|, ties to the lower index "
                            "(alpha = K/d; K = ceil(d/10) if omitted)", "contractive", lambda d, p: p / d, "k",
                            _default_k),
    "rand-k": CompressorInfo(Compressor.RAND_K, "rand-k:K", "(d/K) v on K uniform coordinates (omega = d/K - 1; "
                             "K = ceil(d/10) if omitted)", "unbiased", lambda d, p: d / p - 1.0, "k", _default_k),
    "natural": CompressorInfo(Compressor.NATURAL, "natural", "natural compression, unbiased rounding to a power "
                              "of two (omega = 1/8)", "unbiased", lambda d, p: 0.125),
    "onebit": CompressorInfo(Compressor.ONEBIT, "onebit", "1-bit SGD, sign mask decoded with the means of the "
                             "non-negative and of the negative entries (alpha = 1/d)", "contractive",
                             lambda d, p: 1.0 / d),
}
assert [c.code for c in COMPRESSORS.values()] == list(Compressor)

ERROR_FEEDBACK = {"none": ErrorFeedback.NONE, "ef": ErrorFeedback.EF, "ef21": ErrorFeedback.EF21}
AGGREGATES = {"mean": (Aggregate.MEAN, None), "majority": (Aggregate.MAJORITY, None),
              "median": (Aggregate.MEDIAN, None), "trimmed": (Aggregate.TRIMMED, 0.1)}
ATTACKS = {"invert": (Attack.INVERT, None), "random": (Attack.RANDOM, None), "alie": (Attack.ALIE, 1.0),
           "ipm": (Attack.IPM, 0.1)}
MOMENTA = {"none": Momentum.NONE, "ema": Momentum.EMA, "ema-first": Momentum.EMA_FIRST, "lion": Momentum.LION}
assert list(ERROR_FEEDBACK.values()) == list(ErrorFeedback)
assert [a for a, _ in AGGREGATES.values()] == list(Aggregate)
assert [a for a, _ in ATTACKS.values()] == list(Attack)
assert list(MOMENTA.values()) == list(Momentum)

#: compressors that error feedback (EF, EF21) accepts: the contractive ones
CONTRACTIVE = frozenset(n for n, c in COMPRESSORS.items() if c.kind == "contractive" or n == "identity")


def _number(text: str, option: str, spec: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{option} {spec}: the parameter must be a number") from None
    if not math.isfinite(value):
        raise InputError(f"{option} {spec}: the parameter must be finite")
    return value


def parse_compressor(spec: str, dim: int | None = None) -> tuple[Compressor, float]:
    """``name[:param]`` -> (code, param); the default k of a sparsifier needs ``dim`` (0 until then)."""
    name, _, raw = str(spec).partition(":")
    if name not in COMPRESSORS:
        raise InputError(f"--compressor {spec}: unknown compressor; choose from {', '.join(COMPRESSORS)}")
    info = COMPRESSORS[name]
    if info.param is None:
        if raw:
            raise InputError(f"--compressor {spec}: {name} takes no parameter")
        return info.code, 0.0
    if not raw:
        return info.code, info.default_param(dim) if dim is not None and info.default_param else 0.0
    value = _number(raw, "--compressor", spec)
    if value != int(value) or value < 1:
        raise InputError(f"--compressor {spec}: {info.param} must be an integer >= 1")
    if info.param == "k" and dim is not None and value > dim:
        raise InputError(f"--compressor {spec}: k exceeds the dimension {dim}")
    return info.code, value


def _parse_named(spec: str, table: dict, option: str) -> tuple:
    name, sep, raw = str(spec).partition(":")
    if name not in table:
        raise InputError(f"{option} {spec}: unknown value; choose from {', '.join(table)}")
    code, default = table[name]
    if default is None:
        if sep:
            raise InputError(f"{option} {spec}: {name} takes no parameter")
        return code, 0.0
    return code, _number(raw, option, spec) if sep else default


def parse_aggregate(spec: str) -> tuple[Aggregate, float]:
    """``mean | majority | median | trimmed[:beta]`` (beta in [0, 1/2), default 0.1)."""
    code, beta = _parse_named(spec, AGGREGATES, "--aggregate")
    if code == Aggregate.TRIMMED and not 0 <= beta < 0.5:
        raise InputError(f"--aggregate {spec}: beta must lie in [0, 0.5)")
    return code, beta


def parse_attack(spec: str) -> tuple[Attack, float]:
    """``invert | random | alie[:z] | ipm[:eps]`` (z default 1, eps default 0.1)."""
    return _parse_named(spec, ATTACKS, "--attack")


def parse_error_feedback(spec: str) -> ErrorFeedback:
    if spec not in ERROR_FEEDBACK:
        raise InputError(f"--error-feedback {spec}: unknown value; choose from {', '.join(ERROR_FEEDBACK)}")
    return ERROR_FEEDBACK[spec]


def compressor_constant(spec: str, dim: int) -> dict[str, float | str | None]:
    """{"kind": ..., "omega" or "alpha": value} of a compressor spec at dimension ``dim``."""
    code, param = parse_compressor(spec, dim)
    info = COMPRESSORS[str(spec).partition(":")[0]]
    out: dict[str, float | str | None] = {"kind": info.kind}
    if info.constant is not None:
        out["alpha" if info.kind == "contractive" else "omega"] = info.constant(dim, param)
    if info.param is not None:
        out[info.param] = int(param)
    return out


def check_composition(cfg, method_name: str) -> None:
    """Combinations that make no sense exit 2 naming both options."""
    comp = str(cfg.compressor).partition(":")[0]
    ef = cfg.error_feedback
    agg, _ = parse_aggregate(cfg.aggregate)  # beta < 1/2 keeps at least one value of every column
    attack, _ = parse_attack(cfg.attack)
    if ef != "none" and comp not in CONTRACTIVE:
        raise InputError(f"--error-feedback {ef} with --compressor {cfg.compressor}: error feedback needs a "
                         f"contractive compressor ({', '.join(sorted(CONTRACTIVE))})")
    if ef != "none" and agg == Aggregate.MAJORITY:
        raise InputError(f"--aggregate {cfg.aggregate} does not apply to method '{method_name}' with "
                         f"--error-feedback {ef} (the server must average the corrected messages)")
    if ef == "ef21" and agg != Aggregate.MEAN:
        raise InputError(f"--aggregate {cfg.aggregate} with --error-feedback ef21: EF21's server sums the "
                         "increments, which only the mean allows")
    if attack in (Attack.ALIE, Attack.IPM) and cfg.byzantine >= cfg.workers:
        raise InputError(f"--attack {cfg.attack} with --byzantine {cfg.byzantine}: the attack needs at least one "
                         "honest worker")


def describe(settings, cfg, dim: int) -> dict:
    """The resolved stages of a run, for its results document (with the compressor's omega or alpha)."""
    return {
        "momentum": settings.momentum_kind.name.lower().replace("_", "-"),
        "compressor": {"spec": cfg.compressor, **compressor_constant(cfg.compressor, dim)},
        "error_feedback": settings.error_feedback.name.lower(),
        "aggregate": {"rule": settings.aggregate.name.lower(), "param": settings.aggregate_param},
        "attack": {"rule": settings.attack.name.lower(), "param": settings.attack_param,
                   "byzantine": settings.byzantine},
        "weight_decay": settings.weight_decay,
    }
