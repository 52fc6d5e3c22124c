"""A run's stages are parsed once (``signsim.stages.plan``): every layer below the config reads the same ``Stage``
objects, a default that needs the dimension is filled in without parsing again, and a changed config is parsed
anew."""

import sys
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from signsim import methods
from signsim.engine.build import build
from signsim.errors import InputError
from signsim.interface import config
from signsim.stages import plan, registry


def parses(fn) -> Counter:
    """(kind, spec) -> how many times ``registry.parse`` ran while ``fn()`` did (by its code object, so that every
    module's imported name of it counts)."""
    code, seen = registry.parse.__code__, Counter()

    def profile(frame, event, arg):
        if event == "call" and frame.f_code is code:
            seen[(frame.f_locals["kind"], str(frame.f_locals["spec"]))] += 1

    plan._KEPT.clear()
    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return seen


@pytest.mark.parametrize("options", [
    {},  # the default method, SSDM
    {"method": "topk-ef", "aggregate": "mean", "down_compressor": "top-k", "down_feedback": "ef21",
     "pre_aggregate": "clip:2,bucketing:2", "clients_per_round": 4, "workers": 8},
    {"method": "sgd", "compressor": "natural", "grad_estimator": "diana:0.5", "server_opt": "fedavgm:0.9"},
])
def test_a_run_parses_each_of_its_specs_once(options):
    opts = {"problem": "quadratic", "dim": 12, "iters": 2, **options}
    seen = parses(lambda: build(config.resolve(opts)))
    assert seen, "the count saw no parse"
    assert max(seen.values()) == 1, seen
    # every spec the user chose is among them
    for field, kind in (("compressor", "compressor"), ("aggregate", "aggregation"), ("grad_estimator", "estimator"),
                        ("server_opt", "server_optimizer"), ("down_compressor", "down_compressor")):
        if field in options:
            assert (kind, options[field]) in seen


def test_the_engine_reads_the_stages_the_config_parsed():
    cfg = config.resolve({"problem": "quadratic", "dim": 12, "iters": 2, "method": "topk-ef"})
    chosen = plan.of_config(cfg, methods.get(cfg.method))
    settings = build(cfg).settings
    assert settings.aggregate is chosen.aggregate and settings.error_feedback is chosen.error_feedback
    assert settings.compressor.module is chosen.compressor.module
    assert not chosen.compressor.resolved and settings.compressor.params == (2.0,)  # top-k: k = ceil(12/10)


def test_a_config_changed_afterwards_is_parsed_anew():
    cfg = config.resolve({"problem": "quadratic", "dim": 12, "iters": 2, "compressor": "qsgd:4"})
    method = methods.get(cfg.method)
    first = plan.of_config(cfg, method)
    cfg.compressor = "qsgd:8"
    assert plan.of_config(cfg, method).compressor.params[0] == 8.0 and first.compressor.params[0] == 4.0
    swept = replace(cfg, aggregate="median")
    assert plan.of_config(swept, method).aggregate.name == "median"


@pytest.mark.parametrize("spec, d, expect", [("top-k", 25, 3.0), ("top-k", 10, 1.0), ("top-k:7", 25, 7.0),
                                             ("rand-k", 1, 1.0), ("qsgd:3", 5, 3.0)])
def test_at_dim_equals_parsing_at_that_dimension(spec, d, expect):
    open_ = registry.parse("compressor", spec)
    at = open_.at_dim(d)
    direct = registry.parse("compressor", spec, d)
    assert at == direct and at.resolved and at.params[0] == expect
    assert np.array_equal(at.param_array(), direct.param_array())


def test_at_dim_checks_the_limits_in_the_dimension_with_the_users_option():
    with pytest.raises(InputError, match="--compressor top-k:7"):
        registry.parse("compressor", "top-k:7").at_dim(5, "--compressor")


def test_the_method_given_decides_the_stages_it_fills_in():
    """The memo is keyed by the method too: the same config with another method's defaults is another set of stages
    (its momentum, compressor and error feedback)."""
    cfg = config.resolve({"problem": "quadratic", "dim": 12, "iters": 2, "method": "ssdm"})
    assert plan.of_config(cfg, methods.get("ssdm")).momentum.name == "ema-first"
    assert plan.of_config(cfg, methods.get("lion")).momentum.name == "lion"


def test_a_dimension_check_names_the_spec_as_the_user_wrote_it():
    with pytest.raises(InputError, match=r"^--compressor top-k:2e1: k exceeds the dimension 10$"):
        build(config.resolve({"problem": "quadratic", "dim": 10, "iters": 2, "compressor": "top-k:2e1"}))
