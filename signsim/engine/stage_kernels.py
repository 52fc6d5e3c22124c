"""A stage's kernels, compiled (docs/theory.md §2, §8): each function a stage module gives the loop, compiled by
Numba under a name of its own, and the names and hashes that tie what is compiled to the stages' sources.

A stage's kernels are plain Python functions in its module (``signsim.stages.base``). ``stage_function``
compiles one with Numba under a name of its own (carrying a hash of the stage's source, ``source_hash``, so an
edited stage is never run stale from Numba's cache, which does not notice edits to callees), after compiling the
helper functions it calls from its module's namespace (inlined). Every run that uses a stage shares that one
compiled kernel. The loop reaches them through its plan (``signsim.engine.plan``), whose type names the stages by
the same hashes (``builtin_key`` for the built-in stages of the kinds on a worker's path). The kernels on a worker's
path (momentum, error feedback, compressor, blind attack, estimator) are compiled without Numba's runtime, like the
worker step that calls them (nothing there allocates); the server's (aggregation, omniscient attack, ...) with it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import re
import types
from pathlib import Path  # noqa: F401

import numpy as np
from numba import njit

from signsim.stages import kinds


def _no_attack_row(out, p, gen):
    return


def _no_attack_rows(msg, B, p):
    return


#: the attack of a run without Byzantine workers: none (one composition, whatever --attack says)
NO_ATTACK = types.ModuleType("signsim.engine.stage_kernels.no_attack")
NO_ATTACK.NAME, NO_ATTACK.OMNISCIENT, NO_ATTACK.row, NO_ATTACK.rows = "none", False, _no_attack_row, _no_attack_rows


def module_named(name: str):
    """The stage module of this name (``NO_ATTACK``'s included), as a fresh process finds it."""
    return NO_ATTACK if name == NO_ATTACK.__name__ else importlib.import_module(name)


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


#: the key of the loop that runs every composition of built-in stages, before its hash (``builtin_key``)
BUILTIN_KEY = "builtin"
#: the stage modules' packages (a kind's folder): a module there is one stage, whose source names its kernels
STAGE_PACKAGES = tuple(f"signsim.stages.{k.folder}." for k in kinds.PRIMARY)


def _stage_dependencies(module) -> list:
    """The built-in stage modules whose functions ``module`` takes (a name bound to another stage's function or
    module, as ``clag`` takes EF21's), each once, ``module`` first, transitively."""
    import sys

    found, todo = [], [module]
    while todo:
        mod = todo.pop()
        if mod in found:
            continue
        found.append(mod)
        for value in vars(mod).values():
            name = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
            if isinstance(name, str) and name.startswith(STAGE_PACKAGES) and name != mod.__name__:
                other = sys.modules.get(name)
                if other is not None and getattr(other, "__file__", None):
                    todo.append(other)
    return found


def _code_bytes(code) -> bytes:
    """A code object as bytes that depend only on what it does (its bytecode, names and constants, nested code
    objects included), the same in every process (sets of constants sorted: their order follows string hashing)."""
    out = [code.co_code, repr(code.co_names).encode(), repr(code.co_varnames).encode()]
    for c in code.co_consts:
        out.append(_code_bytes(c) if isinstance(c, types.CodeType) else _value_bytes(c))
    return b"\x00".join(out)


def _value_bytes(value) -> bytes:
    """A constant as bytes that are the same in every process (no object's address, no set's hash order)."""
    import dataclasses

    if value is None or isinstance(value, int | float | complex | str | bytes | bool):
        return repr(value).encode()
    if isinstance(value, tuple | list):
        return b"(" + b",".join(_value_bytes(v) for v in value) + b")"
    if isinstance(value, frozenset | set):
        return b"{" + b",".join(sorted(_value_bytes(v) for v in value)) + b"}"
    if isinstance(value, np.ndarray):  # a global array: Numba compiles it in as a constant
        return f"{value.dtype}{value.shape}".encode() + value.tobytes()
    if isinstance(value, types.FunctionType):
        return _code_bytes(value.__code__)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return type(value).__name__.encode() + _value_bytes(tuple(getattr(value, f.name)
                                                                  for f in dataclasses.fields(value)))
    return type(value).__name__.encode()  # (an object of another kind: its type)


def _fingerprint(module) -> bytes:
    """What a stage module compiles from, as loaded in this process (not as its file reads now: a file edited after
    its import must not name the code compiled from the old one): each function's code and defaults, each constant,
    the modules it names."""
    parts = []
    for name, value in sorted(vars(module).items()):
        if name.startswith("__"):
            continue
        if isinstance(value, types.FunctionType):
            parts.append(name.encode() + _code_bytes(value.__code__) + _value_bytes(value.__defaults__))
        elif isinstance(value, types.ModuleType):
            parts.append(f"{name}->{value.__name__}".encode())
        elif isinstance(value, int | float | complex | str | bytes | bool | tuple | frozenset | np.ndarray) \
                or value is None:
            parts.append(name.encode() + b"=" + _value_bytes(value))
    return b"\x01".join(parts)


@functools.cache
def source_hash(module) -> str:
    """A short hash of a stage module's code as loaded (``_fingerprint``) and of the built-in stage modules it takes
    functions from (``_stage_dependencies``). Every kernel compiled from a stage, and every loop that calls one,
    carries it in its name, so an edited stage (built-in or plugin) is compiled anew while the kernels of the other
    stages stay in Numba's cache, which checks only the file that defines a function, not its callees (the cache
    folder's name, ``signsim._kernel_cache_dir``, covers the rest of the sources but not the stage modules). The
    empty string for a module without a file (the absent attack, ``NO_ATTACK``)."""
    if not getattr(module, "__file__", None):
        return ""
    h = hashlib.sha1()
    for mod in _stage_dependencies(module):
        h.update(mod.__name__.encode() + b"\x02" + _fingerprint(mod))
    return h.hexdigest()[:12]


def inlined_kinds() -> set[str]:
    """The kinds whose built-in stages the one loop compiles a branch over (``plan._builtin_call``): the base kind
    (``kinds.base``: the stages of a downlink slot are its base kind's) of every kind with a call on a worker's path."""
    return {kinds.base(kind.name) for kind in kinds.TABLE if any(call.worker for call in kind.calls)}


@functools.cache
def builtin_key() -> str:
    """The key of the plan of every built-in stage (``signsim.engine.plan``): ``BUILTIN_KEY`` and a hash of the
    source (``source_hash``) of every built-in stage of a kind with calls on a worker's path (momentum, compressor,
    error feedback, attack, estimator: the calls of the table of kinds that run on a worker's path, made in the
    plan's worker step, ``plan.WORKER_CALLS``), in the order that gives each its code. Those calls
    are a branch over the kind's built-in stages compiled into the one loop, so adding, editing or removing such a
    stage compiles the one loop anew (and no composition's own loop); a stage of a kind the server alone calls
    (aggregation, pre-aggregation, server optimizer) is called by address and compiles only its own kernels."""
    from signsim.stages import registry

    h = hashlib.sha1()
    for kind in kinds.PRIMARY:
        if kind.name in inlined_kinds():
            for mod in registry.builtin(kind.name).values():
                h.update(f"{kind.name}={mod.__name__}@{source_hash(mod)};".encode())
    return f"{BUILTIN_KEY}_{h.hexdigest()[:10]}"


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
def stage_function(module, attr: str, worker_path: bool, checked: bool = False):
    """The stage module's function ``attr`` compiled (cached on disk under its own name); with ``checked``, a copy
    that checks every index (an access outside an array raises IndexError instead of corrupting memory) and
    releases the GIL (so that a signal still ends a kernel that never returns), for the smoke test and
    ``check-stage`` of a plugin."""
    fn = getattr(module, attr, None)
    if fn is None:  # a function the module may leave out (kinds.Call.optional)
        from signsim.stages import defaults

        fn = getattr(defaults, attr)
    h = source_hash(module)  # (a new or edited stage: new names, compiled anew)
    # the copy without Numba's runtime carries its own name: the cache does not tell the two apart
    name = f"{fn.__name__}__{_safe(module.NAME)}" + (f"__{h}" if h else "") + ("__worker" if worker_path else "")
    copy = types.FunctionType(fn.__code__, _namespace(fn), name, fn.__defaults__)
    copy.__qualname__ = name  # (what Numba names the kernel and its cache files by)
    copy.__doc__ = fn.__doc__
    if checked:
        return njit(boundscheck=True, nogil=True)(copy)
    from signsim.stages.plugins import bounds_checked

    bounds = bounds_checked(module)  # a plugin's indices checked (unless TRUSTED): IndexError, not corrupt memory
    # a worker's kernel is inlined by LLVM into the steps that call it (``forceinline``: see ``loop.worker_step``)
    if worker_path:
        return njit(cache=True, _nrt=False, forceinline=True, boundscheck=bounds)(copy)
    return njit(cache=True, boundscheck=bounds)(copy)


def compress_once(stage, v, sign_zero=0, gen=None):
    """(C(v), bits) by the compiled kernel of the compressor ``stage`` (a resolved ``signsim.stages.Stage``), called
    from Python (tests, ``signsim check-stage``)."""
    out = np.zeros(v.shape[0], dtype=v.dtype)
    gen = np.random.default_rng(0) if gen is None else gen
    scratch = np.zeros(v.shape[0], dtype=np.int64)
    from signsim.stages.plugins import is_plugin

    kernel = stage_function(stage.module, "kernel", False, checked=is_plugin(stage.module))
    bits = kernel(v, out, stage.param_array(), int(sign_zero), gen, scratch)
    return out, bits


def builtin_only(stages: dict) -> bool:
    """Whether every stage of ``stages`` (kind -> module) is built in (a fresh process can import each by its name)."""
    from signsim.stages.plugins import is_plugin

    return not any(is_plugin(m) for m in stages.values())


def codes(stages: dict) -> dict[str, int]:
    """kind -> the code of its stage in the plan of every built-in stage (``signsim.engine.plan``): its index
    among the kind's built-in stages; for a plugin, the count of them (the plan calls a plugin's kernels by address:
    a composition's own loop ignores codes); 0 for the absent attack of a run without Byzantine workers."""
    from signsim.stages import registry
    from signsim.stages.plugins import is_plugin

    out = {}
    for kind, mod in stages.items():
        name = mod.__name__.rpartition(".")[2]
        builtin = registry.BUILTIN[kinds.base(kind)]
        if is_plugin(mod):
            out[kind] = len(builtin)
        else:
            out[kind] = builtin.index(name) if name in builtin and mod.__name__.startswith("signsim.stages.") else 0
    return out


def counts() -> dict[str, int]:
    """kind -> how many built-in stages it has (the codes of the plan of every built-in stage: 0 .. n - 1)."""
    from signsim.stages import registry

    return {k.name: len(registry.BUILTIN[kinds.base(k.name)]) for k in kinds.TABLE}
