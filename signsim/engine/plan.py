"""What a run's loop runs, as the Numba type of its first argument (docs/theory.md §2, §8).

A ``Plan`` is a small Python value handed to the loop (``signsim.engine.loop``): ``Plan(problems, stages,
parallel, clock)``, whose four fields carry everything in their Numba types and, but for the kernels the plan of
every built-in stage calls by address, nothing at run time:

* ``Problems(family, noise, module)`` (``engine/dispatch.py``): the problem and noise kernels the loop's calls
  ``problem_oracle(problems, code, ...)``, ``add_noise(problems, code, ...)``, ``problem_evaluate(...)``, ... reach:
  the family's (a run compiles only its family's problem kernels), or one problem kernel module's only (a
  composition's own loop), drawing from one noise model or from every one;
* ``Stages(None, server)``: every built-in stage, and any plugin. Each call of a worker's path in the table of kinds
  (``signsim.stages.kinds``; ``CALLS``: ``compress(stages, code, v, out, p, sign_zero, gen, iwork)``, ...) is then
  a branch over the stage's code (its index in ``registry.BUILTIN``, passed from ``icfg``), inlined into the worker
  step, whose code past the built-ins' calls a plugin's kernel by its address (``WORKER_CALLS``); each call of the
  server's (``SERVER_CALLS``: aggregation, pre-aggregations, attacks' rows, server optimizer, estimator's and error
  feedback's directions, the downlink) calls the composition's kernel by its address. The value carries those
  addresses (``Stages.held``: Numba's first-class functions, of one signature per call for every stage,
  ``call_signatures``, held by reference in compiled memory, ``ServerKernels``, so that a call of the loop passes
  one pointer; the loop hands them to the worker step, ``worker_plan``). So one compiled loop runs every
  composition, a plugin compiles only its own kernels, and compiling the loop compiles
  no server stage: each compiles once, on its own, when a composition first uses it (before, the loop held a branch
  over every built-in server stage, linked into it and optimised again by LLVM: SSDM's first run in the analytic
  problems' one loop took 74 s to compile in one process at LLVM level 1, and 36 s with the composition's server
  kernels; at Numba's default level, after a first run, 107.7 CPU-s against 50.6; 2-core Xeon VM, 7 December
  2026). ``Stages(stages)`` (kind -> module): those stages only, each call the stage's own function, the
  code ignored: the smaller, faster loop of one composition (``signsim.engine.compose`` chooses);
* ``Parallel(on)``: whether the loop runs its workers in parallel (``loop.run_chunk_threaded``, compiled with
  threads) or not (``loop.run_chunk``): one function compiled both ways, told apart in the cache by this type;
* ``Clock(on)``: whether the loop keeps the simulated clock of a system model (docs/theory.md §14), or compiles
  without it.

Each stage call is a function made here at import from the table of kinds (the problem calls are made alike in
``engine/dispatch.py``), with one Numba overload that picks its implementation from the types. Numba compiles and
caches a function once per argument types, so the loop is one function whose cache holds each plan it has run,
under a type that names the family, the noise model and the stages with a hash of their code
(``stage_kernels.source_hash``; for the built-in stages on a worker's path, ``stage_kernels.builtin_key``): an
edited or added stage gives new types and compiles only what calls it. Nothing is copied or written to a file.
The stage functions themselves are compiled and cached on their own (``stage_kernels.stage_function``); the
workers' calls here are inlined into the loop, the server's are calls (``_stage_call``), by address in the plan of
every built-in stage.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import warnings
from collections import namedtuple

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.core.errors import NumbaExperimentalFeatureWarning
from numba.experimental import structref
from numba.extending import (
    NativeValue,
    make_attribute_wrapper,
    models,
    register_model,
    unbox,
)

from signsim.engine import clock
from signsim.engine.dispatch import Problems, ProblemsType, opaque, overloaded
from signsim.stages import kinds


class Stages:
    """The stages a loop runs: None (every built-in stage, chosen by code), or kind -> module (a composition's own, or a
    kernel's: ``signsim.diagnostics.transform_kernels``). Its Numba type (``StagesType``) names them. The plan of every
    built-in stage also carries, at run time, the kernels of one composition it calls by address (``server``: kind ->
    module, built in or a plugin; the kind's first built-in stage where it names none) for the vectors of ``dtype``: the
    server's calls, and a worker's calls on a plugin (``ServerStagesType``, ``BY_ADDRESS``), so that they compile once
    each, on their own, and never again inside the loop."""

    __slots__ = ("stages", "key", "type", "server", "dtype", "_fns", "_held")

    def __init__(self, stages: dict | None = None, server: dict | None = None, dtype=np.float64):
        from signsim.engine import stage_kernels

        self.stages = None if stages is None else dict(stages)
        self.server, self.dtype, self._fns, self._held = dict(server or {}), np.dtype(dtype), None, None
        if stages is None:
            self.key = stage_kernels.builtin_key()
            self.type = ServerStagesType(self.key, types.Tuple(tuple(
                types.FunctionType(sig) for sig in call_signatures(self.dtype))))
        else:
            self.key = tuple((kind, mod.__name__, stage_kernels.source_hash(mod))
                             for kind, mod in sorted(stages.items()))
            for (_, name, h), mod in zip(self.key, (m for _, m in sorted(stages.items())), strict=True):
                _MODULES[name, h] = mod
            self.type = StagesType(self.key)

    @property
    def builtin(self) -> bool:
        return self.stages is None

    @property
    def fns(self) -> tuple:
        """The kernels the plan of every built-in stage calls by address, one per call of ``BY_ADDRESS`` (the
        server's calls, then the workers' calls on a plugin), each compiled (or loaded from the cache) for its
        signature (``call_signatures``)."""
        if self._fns is None:
            self._fns = server_kernels(self.server, self.dtype) + worker_kernels(self.server, self.dtype)
        return self._fns

    @property
    def held(self):
        """``fns`` held in compiled memory (``ServerKernels``): what the loop's argument carries, made once."""
        if self._held is None:
            self._held = _holder(self.type.fns)(self.fns)
        return self._held

    def __repr__(self) -> str:
        return f"Stages({self.key!r})"


class StagesType(types.Type):
    """The Numba type of ``Stages``: its key (a string for every built-in stage, else a tuple of (kind, module
    name, source hash)). Pickled into Numba's cache index with each compiled signature."""

    def __init__(self, key, name: str | None = None):
        self.plan_key = key
        if name is None:
            name = key if isinstance(key, str) else ";".join(f"{k}={m}@{h}" for k, m, h in key)
        super().__init__(name=f"Stages({name})")

    @property
    def builtin(self) -> bool:
        return isinstance(self.plan_key, str)


@structref.register
class ServerKernelsType(types.StructRef):
    """The Numba type of ``ServerKernels``: a reference to the tuple of a composition's server kernels (``fns``)."""


class ServerKernels(structref.StructRefProxy):
    """The kernels the plan of every built-in stage calls by address, held by reference in compiled memory: made once
    per plan (``_hold``), and passed to each call of the loop as one pointer, where unboxing their tuple of
    first-class functions at every call took 0.7 ms (for the 14 server kernels of then: twice ``get_compile_result``
    and an address lookup each)."""


structref.define_constructor(ServerKernels, ServerKernelsType, ["fns"])
structref.define_boxing(ServerKernelsType, ServerKernels)


def _hold(fns):
    return ServerKernels(fns)


@functools.cache
def _holder(fns_type):
    """``_hold`` compiled (or loaded) for the tuple of first-class function types ``fns_type`` only: called with a
    tuple of the kernels' dispatchers, it takes them as first-class functions (unboxed once, here) and returns
    them in a ``ServerKernels``."""
    return njit((fns_type,), cache=True)(_hold)


class ServerStagesType(StagesType):
    """The Numba type of the plan of every built-in stage: its key and the types of the kernels it carries (``fns``, a
    tuple of first-class function types, ``call_signatures``), the same for every composition."""

    def __init__(self, key: str, fns):
        self.fns = fns
        self.holder = ServerKernelsType([("fns", fns)])
        # (every signature in the name: a loop cached for other signatures is never loaded for these)
        digest = hashlib.sha1(str(fns).encode()).hexdigest()[:10]
        super().__init__(key, name=f"{key};{len(fns)} calls by address of {fns.types[0].signature.args[0]}@{digest}")


#: what a run's loop runs (its first argument): the problem and noise kernels it reaches, its stages, whether it
#: runs its workers in parallel and whether it keeps the simulated clock, all carried by their Numba types, so that
#: Numba compiles and caches the loop once per plan
Plan = namedtuple("Plan", "problems stages parallel clock")


def plan_for(family: str, stages: dict | None = None, noise: str | None = None, parallel: bool = False,
             timed: bool = True, server: dict | None = None, dtype=np.float64, module: str | None = None) -> Plan:
    """The plan of a loop for the problems of ``family`` (of its problem kernel module ``module`` only, when given:
    ``dispatch.Problems``) drawing noise ``noise`` (None: every model) that runs ``stages`` (None: every built-in
    stage, by code, the server's those of ``server`` for vectors of ``dtype``: ``Stages``), its workers in parallel
    or not, ``timed`` (with the simulated clock) or not (``Clock``; the plan of every built-in stage always has
    it)."""
    return Plan(Problems(family, noise, module), Stages(stages, server, dtype), Parallel(parallel),
                Clock(timed or stages is None))


def _field(t, name: str, of: type):
    fields = dict(zip(getattr(t, "fields", ()), getattr(t, "types", ()), strict=False))
    found = fields.get(name)
    return found if isinstance(found, of) else None


def problems_of(t):
    """The ``ProblemsType`` of a plan's Numba type ``t`` (None for another type)."""
    return _field(t, "problems", ProblemsType)


def stages_of(t):
    """The ``StagesType`` of a plan's Numba type ``t`` (None for another type)."""
    return _field(t, "stages", StagesType)


opaque(Stages, StagesType, lambda value: value.type)  # (the plan of every built-in stage: ServerStagesType's below)


@register_model(ServerStagesType)
class _ServerStagesModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [("held", fe_type.holder)])


make_attribute_wrapper(ServerStagesType, "held", "held")


@unbox(ServerStagesType)
def _unbox_server_stages(typ, obj, c):
    """The plan of every built-in stage in compiled code: the reference to its server kernels (``Stages.held``)."""
    value = cgutils.create_struct_proxy(typ)(c.context, c.builder)
    failed = cgutils.alloca_once_value(c.builder, cgutils.true_bit)
    held = c.pyapi.object_getattr_string(obj, "held")  # NULL with the exception set when a kernel is refused
    with c.builder.if_then(cgutils.is_not_null(c.builder, held), likely=True):
        native = c.unbox(typ.holder, held)
        c.pyapi.decref(held)
        value.held = native.value
        c.builder.store(native.is_error, failed)
    return NativeValue(value._getvalue(), is_error=c.builder.load(failed))


# Numba marks first-class function types experimental, and says so at each compile of a loop that calls them
warnings.filterwarnings("ignore", "First-class function type feature is experimental",
                        NumbaExperimentalFeatureWarning)

#: the server's calls of the table of kinds (``kinds.Call`` with ``worker`` False), in the order of ``Stages.fns``
SERVER_CALLS = tuple((kind, call) for kind in kinds.TABLE for call in kind.calls if not call.worker)
#: the workers' calls of the table of kinds: the plan of every built-in stage makes them by address on a plugin (on a
#: built-in stage, a branch over the codes), after ``SERVER_CALLS`` in ``Stages.fns``
WORKER_CALLS = tuple((kind, call) for kind in kinds.TABLE for call in kind.calls if call.worker)
#: every call the plan of every built-in stage may make by address, in the order of ``Stages.fns``
BY_ADDRESS = SERVER_CALLS + WORKER_CALLS


def dtype_of(signature: tuple) -> np.dtype:
    """The dtype of the vectors of a loop whose arguments after the plan have the Numba types ``signature`` (the
    server's aggregate, ``loop.Server``)."""
    server = signature[5]
    return np.dtype(str(server.types[server.fields.index("agg")].dtype))


def call_arg_types(dtype) -> dict:
    """The Numba type of each argument of the stages' calls (``kinds.Call.args``), by name, as the loop passes
    them for vectors of ``dtype``: a vector of length d is typed as the aggregate (the downlink's rows, ``loop.D_*``,
    and a worker's rows of its states and messages are of its dtype), the stage's parameters ``p`` as a row of ``sp``
    (tests/engine/test_server_calls.py checks them against the types of an engine's own arrays, in float64 and
    float32)."""
    from numba import typeof

    dt = np.dtype(dtype)
    vector, matrix = types.Array(typeof(dt.type(0)), 1, "C"), types.Array(typeof(dt.type(0)), 2, "C")
    return {"msg": matrix, "srv": vector, "opt": matrix, "hbar": matrix, "gen": typeof(np.random.default_rng(0)),
            "tie": types.int64, "sign_zero": types.int64, "iwork": types.Array(types.int64, 1, "C"),
            "lr": types.float64, "p": types.Array(types.float64, 1, "C"),
            **dict.fromkeys(("agg", "direction", "v", "out", "g", "e", "m", "h"), vector),
            **dict.fromkeys(("k", "M", "B", "S", "H", "n"), types.int64)}


def call_signatures(dtype, calls: tuple = BY_ADDRESS) -> tuple:
    """The signature of each call of ``calls`` for vectors of ``dtype``: its arguments' types (``call_arg_types``)
    and the type of what it returns (``kinds.Call.result``)."""
    arg = call_arg_types(dtype)
    result = {"": types.none, "vector": arg["agg"], "bits": types.float64, "rows": types.int64,
              "flag": types.boolean}
    return tuple(result[call.result](*(arg[a] for a in call.args)) for _, call in calls)


def server_signatures(dtype) -> tuple:
    """The signature of each call of ``SERVER_CALLS`` for vectors of ``dtype`` (``call_signatures``)."""
    return call_signatures(dtype, SERVER_CALLS)


#: the kinds with a call in ``SERVER_CALLS``, in its order
SERVER_KINDS = tuple(dict.fromkeys(kind.name for kind, _ in SERVER_CALLS))


def compile_server_kernels(dtype, kind: str | None = None) -> int:
    """Compile (or load) the kernel of each call of ``SERVER_CALLS`` of every built-in stage (of ``kind`` only, when
    given) for vectors of ``dtype``, and without ``kind`` the kernels that hold the workers' calls by address when
    no plugin takes them (``worker_kernels``), so that the plan of every built-in stage compiles nothing for any
    composition of built-in stages (``signsim.engine.warm``, ``signsim compile``); how many kernels."""
    from signsim.stages import registry

    n = 0 if kind is not None else len(worker_kernels({}, dtype))
    for name in SERVER_KINDS if kind is None else (kind,):
        for module in registry.builtin(kinds.base(name)).values():
            n += len(server_kernels({name: module}, dtype, only=name))
    return n


def server_kernels(server: dict, dtype, only: str | None = None) -> tuple:
    """The kernel of each call of ``SERVER_CALLS`` for the composition ``server`` (kind -> module, built in or a
    plugin; the kind's first built-in stage where it names none), compiled for its signature (``call_signatures``);
    with ``only``, the calls of that kind only. TypeError for a kernel that returns another type, Numba's
    TypingError for one that does not compile for it."""
    return _kernels(server, dtype, SERVER_CALLS, only, plugins_only=False)


def worker_kernels(server: dict, dtype, only: str | None = None) -> tuple:
    """The kernel of each call of ``WORKER_CALLS`` the plan of every built-in stage makes by address: the plugin's of
    its kind in the composition ``server``, else (a call never made: a built-in stage's code takes the branch over
    the built-ins) the kind's first built-in stage's, compiled for the signature, as ``server_kernels``."""
    return _kernels(server, dtype, WORKER_CALLS, only, plugins_only=True)


def _kernels(server: dict, dtype, calls: tuple, only: str | None, plugins_only: bool) -> tuple:
    from signsim.engine import ledger, stage_kernels
    from signsim.stages import registry
    from signsim.stages.plugins import is_plugin

    out = []
    for (kind, call), sig in zip(calls, call_signatures(dtype, calls), strict=True):
        if only is not None and kind.name != only:
            continue
        module = server.get(kind.name)
        if module is None or (plugins_only and not is_plugin(module)):
            module = next(iter(registry.builtin(kinds.base(kind.name)).values()))
        kernel = stage_kernels.stage_function(module, call.attr, call.worker)
        kernel.compile(tuple(sig.args))  # (by its arguments, as an own loop and the split compile ask: one cache entry)
        # (a literal, such as the False a stage without a fresh round returns, is its type's value: the same data)
        got = types.unliteral(kernel.overloads[tuple(sig.args)].signature.return_type)
        if got != sig.return_type:
            raise TypeError(f"stage {module.NAME!r}: {call.attr} returns {got}, not {sig.return_type}")
        out.append((kernel, tuple(sig.args)))
    ledger.record(out)  # (in the cache now: the split compile asks the ledger)
    return tuple(kernel for kernel, _ in out)


class Switch:
    """A yes-or-no of the loop's plan carried by its Numba type (``SwitchType``) and nothing at run time: Numba's
    cache tells the loop's compilations apart by it."""

    __slots__ = ("on",)

    def __init__(self, on: bool):
        self.on = bool(on)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.on})"


class SwitchType(types.Type):
    """The Numba type of a ``Switch``: the switch's class name and its value."""

    def __init__(self, on: bool):
        self.on = on
        super().__init__(name=f"{type(self).__name__.removesuffix('Type')}({on})")


class Parallel(Switch):
    """Whether the loop runs its workers in parallel (``loop.run_chunk_threaded``) or one after the other
    (``loop.run_chunk``): the two are one Python function compiled with and without threads."""


class ParallelType(SwitchType):
    """The Numba type of ``Parallel``."""


class Clock(Switch):
    """Whether the loop keeps the simulated clock of a run with a system model (docs/theory.md §14): its calls
    ``clock_select``, ``clock_advance`` and ``clock_advance_all`` are then those of ``signsim.engine.clock``, and
    otherwise constants the loop never reaches (it calls them only for a run with a system model). The plan of every
    built-in stage always keeps it; a composition's own loop only for a run with a system model, so that a first run
    without one compiles nothing of the clock. ``compose.check_codes`` refuses a run with a system model (or a
    selection of the first uploads) on a loop without it."""


class ClockType(SwitchType):
    """The Numba type of ``Clock``."""


opaque(Parallel, ParallelType, lambda value: ParallelType(value.on))
opaque(Clock, ClockType, lambda value: ClockType(value.on))


def _clock_call(fn, off: str):
    """``clock_<name>(clock_, ...)``: the clock's kernel ``fn(...)`` when the plan keeps the clock, else the
    expression ``off``, of ``fn``'s return type (the loop calls these only for a run with a system model, which
    ``compose.check_codes`` refuses on a loop without the clock: the constant only types the call): made once per
    ``Clock`` type and inlined into the loop, so that a loop without the clock compiles nothing of it."""
    params = ", ".join(inspect.signature(fn.py_func).parameters)

    def make(t):
        ns = {"fn": fn, "np": np}
        exec(f"def impl(clock_, {params}):\n    return {f'fn({params})' if t.on else off}\n", ns)  # noqa: S102
        return ns["impl"]

    return overloaded(f"clock_{fn.__name__}", f"clock_, {params}", __name__,
                      lambda t: t.on if isinstance(t, ClockType) else None, make)


#: the loop's calls on the simulated clock (``signsim.engine.clock``), by the plan's ``clock``; without it, constants
#: of their types: ``select`` keeps all n uploads and cuts none (``np.inf``, the loop's "waits for everyone"), a round
#: takes no time
clock_select = _clock_call(clock.select, "(up.n, np.inf)")
clock_advance = _clock_call(clock.advance, "0.0")
clock_advance_all = _clock_call(clock.advance_all, "0.0")


#: the modules of the plans made in this process, by module name and source hash (a plugin's is not importable by
#: its name, and an edited plugin loaded again has the same name)
_MODULES: dict = {}


def module_named(name: str, h: str):
    """The stage module of a plan's key, as this process has it (a plugin's as loaded, ``NO_ATTACK`` included), else
    as a fresh process imports it (a built-in stage, in a helper process that compiles for a plan it was sent)."""
    if (name, h) in _MODULES:
        return _MODULES[name, h]
    from signsim.engine import stage_kernels

    return stage_kernels.module_named(name)


def _make(text: str, name: str, namespace: dict):
    exec(text, namespace)  # noqa: S102 - text made from the table of kinds
    return namespace[name]


def _builtin_call(kind: kinds.Kind, call: kinds.Call):
    """A worker's ``call`` in the worker step of the plan of every built-in stage (``worker_plan``: its stages are
    the pair ``(Stages, Stages.fns)``): a branch over the stage's code, the built-in stages of ``kind`` in the order
    of their codes, then a plugin's code (the count of the built-ins, ``stage_kernels.codes``) calling the plugin's
    kernel by its address in ``stages[1]``. A code out of range (refused before the loop: ``compose.check_codes``)
    would run the last branch of a call that returns a value (so that every path returns one type), no branch of
    one that does not."""
    from signsim.engine import stage_kernels
    from signsim.stages import registry

    modules = list(registry.builtin(kinds.base(kind.name)).values())
    args = ", ".join(call.args)
    ns = {f"K{i}": stage_kernels.stage_function(mod, call.attr, call.worker) for i, mod in enumerate(modules)}
    slot = [c for _, c in BY_ADDRESS].index(call)
    branches = [(f"code == {len(modules)}", f"stages[1][{slot}]({args})")]
    branches += [(f"code == {i}", f"K{i}({args})") for i in range(len(modules))]
    lines = [f"def every(stages, code, {args}):"]
    for n, (test, target) in enumerate(branches):
        if call.returns:
            last = n == len(branches) - 1
            lines.append(f"    return {target}" if last else f"    if {test}:\n        return {target}")
        else:
            lines.append(f"    {'if' if n == 0 else 'elif'} {test}:\n        {target}")
    return _make("\n".join(lines) + "\n", "every", ns)


def _own_call(kind: kinds.Kind, call: kinds.Call, module):
    """``call`` on the one stage ``module`` of a composition's own plan, the code ignored."""
    from signsim.engine import stage_kernels

    args = ", ".join(call.args)
    body = "return " if call.returns else ""
    ns = {"K": stage_kernels.stage_function(module, call.attr, call.worker)}
    return _make(f"def own(stages, code, {args}):\n    {body}K({args})\n", "own", ns)


def _server_call(call: kinds.Call):
    """``call`` of the server in the plan of every built-in stage: the composition's kernel, by its address in the
    stages' value (``Stages.held``, holding ``Stages.fns``), the code ignored."""
    index = [c for _, c in SERVER_CALLS].index(call)
    args = ", ".join(call.args)
    body = "return " if call.returns else ""
    return _make(f"def server(stages, code, {args}):\n    {body}stages.held.fns[{index}]({args})\n", "server", {})


def _stage(key, kind: str):
    """The module of ``kind`` in a composition's plan key."""
    return next(module_named(m, h) for k, m, h in key if k == kind)


def searches(t) -> bool:
    """Whether a loop of the stages type ``t`` may search an attack's factor (``loop.attack_factor``): the plan of
    every built-in stage, or a composition whose attack sets SEARCH (alie-opt, ipm-opt; docs/theory.md §8.5)."""
    return t.builtin or bool(getattr(_stage(t.plan_key, "attack"), "SEARCH", False))


def _stage_call(kind: kinds.Kind, call: kinds.Call):
    """``call(stages, code, ...)`` of the table of kinds, ``stages`` a plan's stages: for the plan of every built-in
    stage a branch on the code (a worker's call, on the stages ``worker_plan`` gives the worker step) or the
    composition's kernel by its address (the server's, ``_server_call``), else the composition's own stage
    (``dispatch.overloaded``: made once per stages type). A worker's call is inlined into the worker step (whose kernels
    LLVM inlines in turn, ``loop.worker_step``); the server's calls, once a round, are calls of their own compiled
    function: inlined, each branch over every built-in stage was compiled once alone (to type it) and again inside each
    caller (the loop and the attack's search), which cost the analytic problems' one loop 5% more to compile (81.8 and
    79.8 CPU-s against 76.2 and 77.1, in turn at LLVM level 1, 2-core Xeon VM, 7 December 2026) and ran no faster
    (``benchmarks/bench_engine.py``)."""

    def make(t):
        if _worker_view(t):
            return _builtin_call(kind, call)
        if isinstance(t, ServerStagesType):
            if call.worker:  # (the worker step's stages come from worker_plan: a pair)
                raise TypeError(f"{call.loop_name}: a worker's call takes the stages of worker_plan(plan)")
            return _server_call(call)
        return _own_call(kind, call, _stage(t.plan_key, kind.name))

    def key(t):
        return t.plan_key if isinstance(t, StagesType) else ("worker view", t.types[0]) if _worker_view(t) else None

    fn = overloaded(call.loop_name, f"stages, code, {', '.join(call.args)}", __name__, key, make,
                    inline="always" if call.worker else "never")
    fn.__doc__ = (f"The run's {call.attr!r} of its stage (``signsim.stages.kinds``), as the plan's type names it: "
                  f"compiled only inside the loop.")
    return fn


def _worker_view(t) -> bool:
    """Whether ``t`` is the type of the stages of the plan ``worker_plan`` gives the worker step: (the plan of every
    built-in stage, the kernels it calls by address)."""
    return isinstance(t, types.BaseTuple) and len(t.types) == 2 and isinstance(t.types[0], ServerStagesType)


def _worker_plan(t):
    if isinstance(stages_of(t), ServerStagesType):
        def impl(plan):
            return Plan(plan.problems, (plan.stages, plan.stages.held.fns), plan.parallel, plan.clock)
    else:
        def impl(plan):
            return plan
    return impl


#: ``worker_plan(plan)``: the plan the loop hands its worker step. For the plan of every built-in stage, its stages
#: with the kernels it calls by address taken out of the reference the plan carries (``Stages.held``), so that the
#: worker step, compiled without Numba's runtime (which reading that reference needs), calls a plugin's kernel on a
#: worker's path by its address (``_builtin_call``); any other plan as it is. Made in each iteration of the loop
#: over the workers (a tuple of first-class functions cannot pass into the threaded loop's body: Numba's parallel
#: loop takes no such argument)
worker_plan = overloaded("worker_plan", "plan", __name__,
                         lambda t: isinstance(stages_of(t), ServerStagesType) if stages_of(t) is not None else None,
                         _worker_plan)


def worker_plan_type(t):
    """The Numba type of ``worker_plan`` of a plan of type ``t`` (the worker step's first argument)."""
    stages = stages_of(t)
    if not isinstance(stages, ServerStagesType):
        return t
    return types.NamedTuple([t.types[0], types.Tuple((stages, stages.fns)), *t.types[2:]], Plan)


#: the loop's call of each call of the table of kinds, by its name (``kinds.Call.loop_name``)
CALLS: dict = {c.loop_name: _stage_call(k, c) for k in kinds.TABLE for c in k.calls}
globals().update(CALLS)


