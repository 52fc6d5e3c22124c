"""Each run's loop, composed from the stages it uses (docs/theory.md §2, §8).

A stage's kernels are plain Python functions in its module (``signsim.stages.base``). ``stage_function``
compiles one with Numba under a name of its own (a plugin's name carries a hash of its source, so an edited
plugin is never run stale from Numba's cache, which does not notice edits to callees), after compiling the
helper functions it calls from its module's namespace (inlined). Every run that uses a stage shares that one
compiled kernel, so a new composition compiles only its own ``worker_step`` and loop (``loops``): copies of
``loop.worker_step`` and ``loop.run_chunk_source`` whose stage names (``loop.momentum_step``, ``loop.compress``,
...) point to the stages' kernels, made the way ``engine/specialize.py`` makes a copy per family of problems.
A copy's name carries the family and a hash of its stages (``composition_key``), so Numba caches each
composition's loop in its own files.

The kernels on a worker's path (momentum, error feedback, compressor, blind attack) are compiled without
Numba's runtime, like ``worker_step`` (nothing there allocates); the server's (aggregation, omniscient attack)
with it.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import types

import numpy as np
from numba import njit

from signsim.engine import loop, specialize

#: what a stage of each kind gives the loop: loop name -> module attribute (functions), and flags
FUNCTIONS = {
    "momentum": {"momentum_step": "kernel"},
    "compressor": {"compress": "kernel"},
    "error_feedback": {"ef_before": "before", "ef_after": "after", "ef_direction": "direction"},
    "aggregation": {"finish_aggregate": "finish", "robust_aggregate": "robust"},
    "attack": {"attack_row": "row", "attack_rows": "rows"},
}
FLAGS = {"error_feedback": {"STEP_SCALED": "STEP_SCALED"}, "aggregation": {"SUMMED": "SUMMED"},
         "attack": {"OMNISCIENT": "OMNISCIENT"}}
#: functions on a worker's path: compiled without Numba's runtime
WORKER_PATH = {"momentum_step", "compress", "ef_before", "ef_after", "attack_row"}


def _no_attack_row(out, p, gen):
    return


def _no_attack_rows(msg, B, p):
    return


#: the attack of a run without Byzantine workers: none (one composition, whatever --attack says)
NO_ATTACK = types.ModuleType("signsim.engine.compose.no_attack")
NO_ATTACK.NAME, NO_ATTACK.OMNISCIENT, NO_ATTACK.row, NO_ATTACK.rows = "none", False, _no_attack_row, _no_attack_rows


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


def source_hash(module) -> str:
    """A short hash of a plugin's source file ('' for a built-in stage: signsim's cache folder is named by a hash of
    its sources already, ``signsim._kernel_cache_dir``)."""
    if getattr(module, "__name__", "").startswith("signsim."):
        return ""
    with open(module.__file__, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()[:12]


_HELPERS: dict = {}


def _namespace(fn) -> dict:
    """``fn``'s globals with every plain Python function it calls compiled (inlined), and ``np``."""
    ns = dict(fn.__globals__)
    ns.setdefault("np", np)
    for name in fn.__code__.co_names:
        g = ns.get(name)
        if isinstance(g, types.FunctionType):
            ns[name] = _helper(g)
    return ns


def _helper(fn):
    if fn not in _HELPERS:
        _HELPERS[fn] = None  # (no recursion among helpers)
        copy = types.FunctionType(fn.__code__, _namespace(fn), fn.__name__, fn.__defaults__)
        _HELPERS[fn] = njit(inline="always")(copy)
    return _HELPERS[fn]


@functools.cache
def stage_function(module, attr: str, worker_path: bool):
    """The stage module's function ``attr`` compiled (cached on disk under its own name)."""
    fn = getattr(module, attr)
    h = source_hash(module)
    # the copy without Numba's runtime carries its own name: the cache does not tell the two apart
    name = f"{fn.__name__}__{_safe(module.NAME)}" + (f"__{h}" if h else "") + ("__worker" if worker_path else "")
    copy = types.FunctionType(fn.__code__.replace(co_name=name, co_qualname=name), _namespace(fn), name,
                              fn.__defaults__)
    copy.__qualname__ = name
    copy.__doc__ = fn.__doc__
    return njit(cache=True, _nrt=False)(copy) if worker_path else njit(cache=True)(copy)


def compress_once(stage, v, sign_zero=0, gen=None):
    """(C(v), bits) by the compiled kernel of the compressor ``stage`` (a resolved ``signsim.stages.Stage``), called
    from Python (tests, ``signsim check-stage``)."""
    out = np.zeros(v.shape[0], dtype=v.dtype)
    gen = np.random.default_rng(0) if gen is None else gen
    scratch = np.zeros(v.shape[0], dtype=np.int64)
    bits = stage_function(stage.module, "kernel", False)(v, out, stage.param_array(), int(sign_zero), gen, scratch)
    return out, bits


def composition_key(stages: dict) -> str:
    """A short hash naming the composition ``stages`` (kind -> module): the stages' names and plugin sources."""
    text = ";".join(f"{k}={m.NAME}@{source_hash(m)}" for k, m in sorted(stages.items()))
    return hashlib.sha1(text.encode()).hexdigest()[:10]


def namespace(stages: dict) -> dict:
    """The loop's names for the stages ``stages`` (kind -> module)."""
    ns = {}
    for kind, names in FUNCTIONS.items():
        for loop_name, attr in names.items():
            ns[loop_name] = stage_function(stages[kind], attr, loop_name in WORKER_PATH)
    for kind, flags in FLAGS.items():
        for loop_name, attr in flags.items():
            ns[loop_name] = bool(getattr(stages[kind], attr))
    return ns


@functools.cache
def _loops(family: str, key: str, stages: tuple):
    stage_map = dict(stages)
    lns = {**vars(loop), **specialize.dispatchers(family), **namespace(stage_map)}
    lns["worker_step"] = specialize._copy(loop.worker_step, f"worker_step__{family}__{key}", lns, _nrt=False)
    # nogil: the driver keeps handling signals while a chunk runs in its helper thread
    threaded = specialize._copy(loop.run_chunk_source, f"run_chunk__{family}__{key}", lns, parallel=True,
                                nogil=True)
    serial = specialize._copy(loop.run_chunk_source, f"run_chunk_serial__{family}__{key}", lns, nogil=True)
    return threaded, serial


def loops(family: str, stages: dict):
    """(threaded loop, serial loop) for the problems of ``family`` and the stages ``stages`` (kind -> module);
    compiled (or loaded from the cache) on first call."""
    return _loops(family, composition_key(stages), tuple(sorted(stages.items())))


def smoke_test(stage, d: int) -> None:  # noqa: C901 - one branch per kind of stage
    """Compile a plugin's kernels and run them once on a small vector: InputError naming the plugin when a kernel
    does not compile or writes wrong values (a contract broken at run time, never a crash or a silent NaN run).
    Built-in stages are checked by the test suite instead."""
    from signsim.errors import InputError
    from signsim.stages.plugins import _fail, is_plugin

    mod = stage.module
    if not is_plugin(mod):
        return
    where = mod.__file__
    p = stage.param_array()
    gen = np.random.default_rng(0)
    d = max(2, min(int(d), 64))
    v = np.linspace(-1.0, 1.5, d)
    try:
        if stage.kind == "compressor":
            out = np.zeros(d)
            bits = stage_function(mod, "kernel", False)(v, out, p, 0, gen, np.zeros(d, dtype=np.int64))
            if not (isinstance(bits, (int, float)) and math.isfinite(bits) and bits > 0):
                raise _fail(where, f"kernel must return the message's bits, a finite number > 0 (got {bits!r})")
            if not np.all(np.isfinite(out)):
                raise _fail(where, "kernel wrote non-finite values into out for a finite v")
            ref = np.asarray(mod.reference(v.copy(), stage.params, 0, np.random.default_rng(0)))
            if ref.shape != (d,):
                raise _fail(where, f"reference returned shape {ref.shape}, expected ({d},)")
        elif stage.kind == "momentum":
            g, m = v.copy(), np.zeros(d)
            r = stage_function(mod, "kernel", False)(0, g, m, p)
            if np.shape(r) != (d,) or not np.all(np.isfinite(r)):
                raise _fail(where, "kernel must return a finite vector of length d")
        elif stage.kind == "aggregation":
            msg = np.vstack([v, -v, 2 * v])
            agg = msg.sum(axis=0) if mod.SUMMED else np.zeros(d)
            if mod.SUMMED:
                stage_function(mod, "finish", False)(agg, 3, p, 0, gen)
            else:
                stage_function(mod, "robust", False)(msg, agg, p)
            if not np.all(np.isfinite(agg)):
                raise _fail(where, "the aggregate of finite messages is not finite")
        elif stage.kind == "attack":
            out = v.copy()
            stage_function(mod, "row", False)(out, p, gen)
            msg = np.vstack([v, v, -v])
            stage_function(mod, "rows", False)(msg, 1, p)
            if not (np.all(np.isfinite(out)) and np.all(np.isfinite(msg))):
                raise _fail(where, "the attack wrote non-finite values for finite messages")
        elif stage.kind == "error_feedback":
            e, g = np.zeros(d), v.copy()
            u = stage_function(mod, "before", False)(0.1, v.copy(), g, e)
            if np.shape(u) != (d,):
                raise _fail(where, "before must return a vector of length d")
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 - Numba's typing errors and the kernel's own: one line
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise _fail(where, f"its {stage.kind} kernel does not compile or run: {type(e).__name__}: {first}") from None
