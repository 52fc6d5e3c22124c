"""Robust aggregations and pre-aggregations (n = 20 messages, f = 4) at d = 10^4 and 10^6: signsim's compiled kernel
against the same rule in NumPy, each module's own ``reference`` (always), and ByzFL's NumPy code (its aggregators and
pre-aggregators, when ``byzfl`` imports: ``pip install byzfl`` is an optional extra of this benchmark only, never
of signsim). Each call gets the same float64 (20, d) messages (a fresh copy for the rules that work in place); the
time of a rule is the median over ``--repeat`` rounds of the mean of several calls, in turn, in one process. Prints
each time and the ratio contender / signsim (above 1: signsim is faster). Asserts nothing.

    python benchmarks/bench_robust.py [--d 10000,1000000] [--rules trimmed,median,...] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

N, F = 20, 4
#: signsim's spec, kind, entry, and ByzFL's class and arguments (None: no counterpart)
RULES = {
    "trimmed": ("trimmed:0.2", "aggregation", ("aggregators", "TrMean", {"f": F})),
    "median": ("median", "aggregation", ("aggregators", "Median", {})),
    "meamed": ("meamed:4", "aggregation", ("aggregators", "Meamed", {"f": F})),
    "krum": ("krum:4", "aggregation", ("aggregators", "Krum", {"f": F})),
    "multikrum": ("multikrum:4", "aggregation", ("aggregators", "MultiKrum", {"f": F})),
    "geomed": ("geomed", "aggregation", ("aggregators", "GeometricMedian", {})),
    "monna": ("monna:4", "aggregation", ("aggregators", "MoNNA", {"f": F, "idx": N - 1})),
    "cclip": ("cclip:100", "aggregation", ("aggregators", "CenteredClipping", {"tau": 100.0})),
    "caf": ("caf:4", "aggregation", ("aggregators", "CAF", {"f": F})),
    "mda": ("mda:4", "aggregation", ("aggregators", "MDA", {"f": F})),
    "nnm": ("nnm:4", "pre_aggregation", ("preaggregators", "NNM", {"f": F})),
    "bucketing": ("bucketing:2", "pre_aggregation", ("preaggregators", "Bucketing", {"s": 2})),
    "clip": ("clip:2", "pre_aggregation", ("preaggregators", "Clipping", {"c": 2.0})),
    "arc": ("arc:4", "pre_aggregation", ("preaggregators", "ARC", {"f": F})),
}


def _byzfl_without_its_package_init() -> None:
    """ByzFL's package ``__init__`` imports its training framework (torchvision), which its aggregators do not use:
    register the package by its folder only, so that ``byzfl.aggregators`` imports alone."""
    import importlib.util
    import sys
    import types

    spec = importlib.util.find_spec("byzfl")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("byzfl is not installed (pip install byzfl)")
    package = types.ModuleType("byzfl")
    package.__path__ = list(spec.submodule_search_locations)
    sys.modules["byzfl"] = package


def byzfl_rule(where: str, name: str, kwargs: dict):
    """ByzFL's rule, or None (not installed, or its package does not import here: the reason is printed once)."""
    try:
        import importlib

        try:
            module = importlib.import_module(f"byzfl.aggregators.{where}")
        except ImportError:
            _byzfl_without_its_package_init()
            module = importlib.import_module(f"byzfl.aggregators.{where}")
        return getattr(module, name)(**kwargs)
    except Exception as e:  # noqa: BLE001 - an optional contender
        if not getattr(byzfl_rule, "said", False):
            print(f"ByzFL not used: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            byzfl_rule.said = True
        return None


def timed(call, fresh, repeat: int, inner: int) -> float:
    rounds = []
    for _ in range(repeat):
        spent = 0.0
        for _ in range(inner):
            a = fresh()
            t0 = time.perf_counter()
            call(a)
            spent += time.perf_counter() - t0
        rounds.append(spent / inner)
    return statistics.median(rounds)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", default="10000,1000000")
    ap.add_argument("--rules", default=",".join(RULES))
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    from signsim.engine.stage_kernels import stage_function
    from signsim.stages import registry

    print(f"n = {N}, f = {F}; load average {os.getloadavg()[0]:.2f}")
    rng = np.random.default_rng(1)
    for name in a.rules.split(","):
        spec, kind, (where, cls, kwargs) = RULES[name]
        stage = registry.parse(kind, spec)
        p, mod = stage.param_array(), stage.module
        in_place = kind == "pre_aggregation"
        kernel = stage_function(mod, "robust" if not in_place else "pre", False)
        if in_place:
            def ours(msg, k=kernel, p=p):
                return k(msg, msg.shape[0], p, np.random.default_rng(0))

            def numpy(msg, mod=mod, params=tuple(stage.params)):
                return mod.reference(msg, params, np.random.default_rng(0))
        else:
            def ours(msg, k=kernel, p=p):
                return k(msg, np.zeros(msg.shape[1]), p)

            def numpy(msg, mod=mod, p=p):
                return mod.reference(msg, p, 0, np.random.default_rng(0), np.zeros(msg.shape[1]))
        ours(rng.standard_normal((N, 50)))  # compiled or loaded from the cache before any timing
        for d in (int(x) for x in a.d.split(",")):
            byz = byzfl_rule(where, cls, kwargs)  # (one per d: centred clipping keeps its last aggregate)
            msg = rng.standard_normal((N, d))
            fresh = (lambda m=msg: m.copy()) if in_place else (lambda m=msg: m)
            inner = max(1, int(3e5 // d))
            t_ours = timed(ours, fresh, a.repeat, inner)
            row = f"{name:10s} d = {d:>9,d}  signsim {t_ours * 1e3:9.3f} ms"
            if name not in ("mda",) or d <= 10**4:  # (MDA's NumPy reference walks every subset in Python)
                t_np = timed(numpy, fresh, max(1, a.repeat // 2), 1)
                row += f"  NumPy reference {t_np * 1e3:9.3f} ms ({t_np / t_ours:6.1f}x)"
            if byz is not None:
                t_b = timed(byz, fresh, a.repeat, inner)
                row += f"  ByzFL {t_b * 1e3:9.3f} ms ({t_b / t_ours:6.2f}x)"
            print(row, flush=True)


if __name__ == "__main__":
    main()
