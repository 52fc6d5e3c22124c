"""Each run's loop: the family's one loop that runs every composition of built-in stages, or the loop of the one
composition it uses (docs/theory.md §2, §8; ``choose`` decides, ``SIGNSIM_LOOP`` overrides).

A stage's kernels are plain Python functions in its module (``signsim.stages.base``). ``stage_function``
compiles one with Numba under a name of its own (carrying a hash of the stage's source, ``source_hash``, so an
edited stage is never run stale from Numba's cache, which does not notice edits to callees), after compiling the
helper functions it calls from its module's namespace (inlined). Every run that uses a stage shares that one
compiled kernel.

The loop is one function, ``loop.run_chunk`` (and ``loop.run_chunk_threaded``), whose first argument, a
``signsim.engine.plan.Plan``, carries in its Numba type the family of problems and noise model it reaches and the
stages it calls: every built-in stage, chosen by its code at each call (the family's one loop), or one
composition's own stages (``loops``). Numba compiles and caches the loop once per plan type, in the same cache
files; the type names the stages with a hash of their sources (``builtin_key``, ``source_hash``), so that a new or
edited stage compiles only the loops that call it.

The kernels on a worker's path (momentum, error feedback, compressor, blind attack) are compiled without
Numba's runtime, like ``worker_step`` (nothing there allocates); the server's (aggregation, omniscient attack)
with it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import re
import types

import numpy as np
from numba import njit

from signsim.engine import loop, specialize
from signsim.stages import kinds

#: what a stage of each kind gives the loop (``signsim.stages.kinds``): loop name -> module attribute, and flags
FUNCTIONS = {k.name: {c.loop_name: c.attr for c in k.calls} for k in kinds.TABLE}
FLAGS = {k.name: dict(k.flags) for k in kinds.TABLE if k.flags}
#: functions on a worker's path: compiled without Numba's runtime
WORKER_PATH = {c.loop_name for k in kinds.TABLE for c in k.calls if c.worker}


def _no_attack_row(out, p, gen):
    return


def _no_attack_rows(msg, B, p):
    return


#: the attack of a run without Byzantine workers: none (one composition, whatever --attack says)
NO_ATTACK = types.ModuleType("signsim.engine.compose.no_attack")
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


@functools.cache
def builtin_key() -> str:
    """The key of the plan of every built-in stage (``signsim.engine.plan``): ``BUILTIN_KEY`` and a hash of every
    built-in stage's source (``source_hash``) in the order that gives each its code, so that adding, editing or
    removing a built-in stage compiles the one loop anew and no composition's own loop."""
    from signsim.stages import registry

    h = hashlib.sha1()
    for kind in kinds.PRIMARY:
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
def stage_function(module, attr: str, worker_path: bool, inline: bool = False, checked: bool = False):
    """The stage module's function ``attr`` compiled (cached on disk under its own name); with ``inline``, a
    function inlined into its caller instead (nothing of its own to compile or cache); with ``checked``, a copy
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
    copy = types.FunctionType(fn.__code__.replace(co_name=name, co_qualname=name), _namespace(fn), name,
                              fn.__defaults__)
    copy.__qualname__ = name
    copy.__doc__ = fn.__doc__
    if checked:
        return njit(boundscheck=True, nogil=True)(copy)
    if inline:
        return njit(inline="always", _nrt=not worker_path)(copy)
    from signsim.stages.plugins import bounds_checked

    bounds = bounds_checked(module)  # a plugin's indices checked (unless TRUSTED): IndexError, not corrupt memory
    # a worker's kernel is inlined by LLVM into the steps that call it (``forceinline``: see ``_loops``)
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
    """Whether every stage of ``stages`` (kind -> module) is built in: then the family's one loop can run it
    (``choose``)."""
    from signsim.stages.plugins import is_plugin

    return not any(is_plugin(m) for m in stages.values())


def codes(stages: dict) -> dict[str, int]:
    """kind -> the code of its stage in the plan of every built-in stage (``signsim.engine.plan``: its index
    among the kind's built-in stages; 0 for a plugin, whose loop ignores codes, and for the absent attack of a run
    without Byzantine workers)."""
    from signsim.stages import registry

    out = {}
    for kind, mod in stages.items():
        name = mod.__name__.rpartition(".")[2]
        builtin = registry.BUILTIN[kinds.base(kind)]
        out[kind] = builtin.index(name) if name in builtin and mod.__name__.startswith("signsim.stages.") else 0
    return out


#: which loop a composition of built-in stages runs in: "auto" (``choose``), "builtin" (always the family's one
#: loop), "composed" (always a loop of its own), or a comma-separated list of families that take their one loop
#: (the others their composition's own)
LOOP_ENV = "SIGNSIM_LOOP"
LOOP_MODES = ("auto", "builtin", "composed")


def loops(family: str, stages: dict, builtin: bool = True, noise: str | None = None):
    """(threaded loop, serial loop, plan) for the problems of ``family`` and the stages ``stages`` (kind -> module).
    The loops are ``loop.run_chunk_threaded`` and ``loop.run_chunk``, compiled (or loaded from the cache) for each
    plan at its first call. With ``builtin``, a composition of built-in stages gets the plan of every built-in stage
    for every noise model (the family's one loop); otherwise, and for a composition with a plugin, a plan of its
    own stages, whose workers draw from the noise model ``noise`` only (a name of ``specialize.NOISE``; None: from
    every model)."""
    from signsim.engine.plan import plan_for

    if builtin and builtin_only(stages):
        return loop.run_chunk_threaded, loop.run_chunk, plan_for(family)
    return loop.run_chunk_threaded, loop.run_chunk, plan_for(family, stages, noise)


def counts() -> dict[str, int]:
    """kind -> how many built-in stages it has (the codes of the plan of every built-in stage: 0 .. n - 1)."""
    from signsim.stages import registry

    return {k.name: len(registry.BUILTIN[kinds.base(k.name)]) for k in kinds.TABLE}


def check_codes(plan, icfg) -> None:
    """ValueError for a stage code the plan of every built-in stage does not know (its calls would fall through to
    the last stage of the kind), or for a noise code other than the one a composition's own plan draws from (it
    would draw NaN): checked before the loop, like the problem and noise codes."""
    noise = plan.problems.noise
    if noise is not None and specialize.noise_name(int(icfg[loop.I_NOISE])) != noise:
        raise ValueError(f"this loop draws noise {noise}, not code {int(icfg[loop.I_NOISE])}")
    if not plan.stages.builtin:
        return
    for kind, count in counts().items():
        code = int(icfg[loop.ICFG.index(kinds.code_setting(kind))])
        if not 0 <= code < count:
            raise ValueError(f"unknown {kind} stage code {code}")


def mode(family: str | None = None) -> str:
    """``SIGNSIM_LOOP`` for ``family``: "auto", "builtin" or "composed" (a list of families: "builtin" for those,
    "composed" for the others; anything else: "auto")."""
    value = os.environ.get(LOOP_ENV, "auto").strip().lower() or "auto"
    if value in LOOP_MODES:
        return value
    families = {f.strip() for f in value.split(",")}
    if family is not None and families <= set(specialize.FAMILIES):
        return "builtin" if family in families else "composed"
    return "auto"


def choose(family: str, stages: dict, threaded: bool, signature: tuple, noise: str | None = None) -> tuple:
    """(the loop a run takes, its plan, whether to compile the family's one loop in the background once it has run),
    for the loop's arguments after the plan of types ``signature``. A composition with a plugin: its own. Otherwise,
    by ``SIGNSIM_LOOP``; under "auto", the composition's own loop when it is in the kernel cache for this signature
    (the one loop chooses each stage by its code at every call; with the worker step inlined (``forceinline``,
    ``_loops``), the two ran SSDM in about the same time: 0.098 s against 0.105 s on Rosenbrock at d = 10,
    K = 20,000, and 0.88 s both on the d = 10^6 quadratic, medians of three runs of ``benchmarks/bench_engine.py`` on
    5 December 2026), else the family's one loop when that is cached (nothing compiles), else its own when the cache
    holds no loop of the family yet (a first run compiles the smaller loop: about half the CPU time; then the one
    loop compiles in the background, ``signsim.engine.warm``), else the one loop (a second composition: from then on
    every composition of built-in stages runs without compiling), waiting for a background compile of it that is at
    work rather than compiling it a second time. A composition's own loop draws from the run's noise model ``noise``
    only (``loops``), so a composition run with another noise model is another composition here."""
    from numba import typeof

    from signsim.engine import plan as plan_module
    from signsim.engine import warm
    from signsim.engine.split_compile import cached, cached_signatures

    which = 0 if threaded else 1

    def pick(builtin: bool):
        pair_plan = loops(family, stages, builtin=builtin, noise=noise)
        return pair_plan[which], pair_plan[2]

    def is_cached(kernel, plan) -> bool:
        return cached(kernel, (typeof(plan), *signature))

    def family_has_loops(kernel) -> bool:  # any loop of the family, of any composition (threaded or serial as asked)
        return any(getattr(plan_module.problems_of(sig[0]), "family", None) == family
                   for sig in cached_signatures(kernel) if sig)

    if not builtin_only(stages):
        return (*pick(False), False)
    chosen = mode(family)
    if chosen != "auto":
        return (*pick(chosen == "builtin"), False)
    own, own_plan = pick(False)
    if is_cached(own, own_plan):  # a composition's own loop runs faster than the one loop's dispatch on small d
        return own, own_plan, False
    one, one_plan = pick(True)
    if is_cached(one, one_plan):
        return one, one_plan, False
    if warm.wait(family, threaded, signature) and is_cached(one, one_plan):
        return one, one_plan, False
    if family_has_loops(own):
        return one, one_plan, False
    return own, own_plan, True
