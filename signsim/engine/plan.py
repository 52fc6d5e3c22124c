"""What a run's loop runs, as the Numba type of its first argument (docs/theory.md §2, §8).

A ``Plan`` is a small Python value handed to the loop (``signsim.engine.loop``): ``Plan(problems, stages,
parallel, clock)``, whose four fields carry everything in their Numba types and nothing at run time:

* ``Problems(family, noise)`` (``engine/dispatch.py``): the problem and noise kernels the loop's calls
  ``problem_oracle(problems, code, ...)``, ``add_noise(problems, code, ...)``, ``problem_evaluate(...)``, ... reach:
  the family's (a run compiles only its family's problem kernels), drawing from one noise model or from every one;
* ``Stages(None)``: every built-in stage. Each call of the table of kinds (``signsim.stages.kinds``; ``CALLS``:
  ``compress(stages, code, v, out, p, sign_zero, gen, iwork)``, ...) is then a branch over the stage's code (its
  index in ``registry.BUILTIN``, passed from ``icfg``), so one compiled loop runs every composition of built-in
  stages. ``Stages(stages)`` (kind -> module): those stages only, each call the stage's own function, the code
  ignored: the smaller, faster loop of one composition (a plugin's always);
* ``Parallel(on)``: whether the loop runs its workers in parallel (``loop.run_chunk_threaded``, compiled with
  threads) or not (``loop.run_chunk``): one function compiled both ways, told apart in the cache by this type;
* ``Clock(on)``: whether the loop keeps the simulated clock of a system model (docs/theory.md §14), or compiles
  without it.

Each stage call is a function made here at import from the table of kinds (the problem calls are made alike in
``engine/dispatch.py``), with one Numba overload that picks its implementation from the types. Numba compiles and
caches a function once per argument types, so the loop is one function whose cache holds each plan it has run,
under a type that names the family, the noise model and the stages with a hash of their code
(``stage_kernels.source_hash``; for every built-in stage, ``stage_kernels.builtin_key``): an edited or added stage
gives new types and compiles only what calls it. Nothing is copied or written to a file. The stage functions
themselves are compiled and cached on their own (``stage_kernels.stage_function``); the workers' calls here are
inlined into the loop, the server's are calls (``_stage_call``).
"""

from __future__ import annotations

import inspect
from collections import namedtuple

import numpy as np
from numba import types

from signsim.engine import clock
from signsim.engine.dispatch import Problems, ProblemsType, opaque, overloaded
from signsim.stages import kinds


class Stages:
    """The stages a loop runs: None (every built-in stage, chosen by code), kind -> module (a composition's own),
    or {} (none: a kernel that calls no stage). Its Numba type (``StagesType``) names them; nothing of it is read at
    run time."""

    __slots__ = ("stages", "key")

    def __init__(self, stages: dict | None = None):
        from signsim.engine import stage_kernels

        self.stages = None if stages is None else dict(stages)
        if stages is None:
            self.key = stage_kernels.builtin_key()
        else:
            self.key = tuple((kind, mod.__name__, stage_kernels.source_hash(mod))
                             for kind, mod in sorted(stages.items()))
            for (_, name, h), mod in zip(self.key, (m for _, m in sorted(stages.items())), strict=True):
                _MODULES[name, h] = mod

    @property
    def builtin(self) -> bool:
        return self.stages is None

    def __repr__(self) -> str:
        return f"Stages({self.key!r})"


class StagesType(types.Type):
    """The Numba type of ``Stages``: its key (a string for every built-in stage, else a tuple of (kind, module
    name, source hash)). Pickled into Numba's cache index with each compiled signature."""

    def __init__(self, key):
        self.plan_key = key
        name = key if isinstance(key, str) else ";".join(f"{k}={m}@{h}" for k, m, h in key)
        super().__init__(name=f"Stages({name})")

    @property
    def builtin(self) -> bool:
        return isinstance(self.plan_key, str)


#: what a run's loop runs (its first argument): the problem and noise kernels it reaches, its stages, whether it
#: runs its workers in parallel and whether it keeps the simulated clock, all carried by their Numba types, so that
#: Numba compiles and caches the loop once per plan
Plan = namedtuple("Plan", "problems stages parallel clock")


def plan_for(family: str, stages: dict | None = None, noise: str | None = None, parallel: bool = False,
             timed: bool = True) -> Plan:
    """The plan of a loop for the problems of ``family`` drawing noise ``noise`` (None: every model) that runs
    ``stages`` (None: every built-in stage, by code), its workers in parallel or not, ``timed`` (with the simulated
    clock) or not (``Clock``; the plan of every built-in stage always has it)."""
    return Plan(Problems(family, noise), Stages(stages), Parallel(parallel), Clock(timed or stages is None))


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


opaque(Stages, StagesType, lambda value: StagesType(value.key))


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
    """``call`` on every built-in stage of ``kind``: a branch over the stage's code. The last stage is also the
    answer to a code out of range (checked before the loop: ``compose.check_codes``), so that every path returns
    the same type."""
    from signsim.engine import stage_kernels
    from signsim.stages import registry

    modules = list(registry.builtin(kinds.base(kind.name)).values())
    args = ", ".join(call.args)
    ns = {f"K{i}": stage_kernels.stage_function(mod, call.attr, call.worker) for i, mod in enumerate(modules)}
    lines = [f"def every(plan, code, {args}):"]
    for i in range(len(modules)):
        target = f"K{i}({args})"
        if call.returns:
            last = i == len(modules) - 1
            lines.append(f"    return {target}" if last else f"    if code == {i}:\n        return {target}")
        else:
            lines.append(f"    {'if' if i == 0 else 'elif'} code == {i}:\n        {target}")
    return _make("\n".join(lines) + "\n", "every", ns)


def _own_call(kind: kinds.Kind, call: kinds.Call, module):
    """``call`` on the one stage ``module``, the code ignored."""
    from signsim.engine import stage_kernels

    args = ", ".join(call.args)
    body = "return " if call.returns else ""
    ns = {"K": stage_kernels.stage_function(module, call.attr, call.worker)}
    return _make(f"def own(plan, code, {args}):\n    {body}K({args})\n", "own", ns)


def _stage(key, kind: str):
    """The module of ``kind`` in a composition's plan key."""
    return next(module_named(m, h) for k, m, h in key if k == kind)


def searches(t) -> bool:
    """Whether a loop of the stages type ``t`` may search an attack's factor (``loop.attack_factor``): the plan of
    every built-in stage, or a composition whose attack sets SEARCH (alie-opt, ipm-opt; docs/theory.md §8.5)."""
    return t.builtin or bool(getattr(_stage(t.plan_key, "attack"), "SEARCH", False))


def _stage_call(kind: kinds.Kind, call: kinds.Call):
    """``call(plan, code, ...)`` of the table of kinds: for the plan of every built-in stage a branch on the code,
    else the composition's own stage (``dispatch.overloaded``: made once per stages type). A worker's call is inlined
    into the worker step (whose kernels LLVM inlines in turn, ``loop.worker_step``); the server's calls, once a round,
    are calls of their own compiled function: inlined, each branch over every built-in stage was compiled once alone
    (to type it) and again inside each caller (the loop and the attack's search), which cost the analytic problems'
    one loop 5% more to compile (81.8 and 79.8 CPU-s against 76.2 and 77.1, in turn at LLVM level 1, 2-core Xeon VM,
    7 December 2026) and ran no faster (``benchmarks/bench_engine.py``)."""

    def make(t):
        return _builtin_call(kind, call) if t.builtin else _own_call(kind, call, _stage(t.plan_key, kind.name))

    fn = overloaded(call.loop_name, f"plan, code, {', '.join(call.args)}", __name__,
                    lambda t: t.plan_key if isinstance(t, StagesType) else None, make,
                    inline="always" if call.worker else "never")
    fn.__doc__ = (f"The run's {call.attr!r} of its stage (``signsim.stages.kinds``), as the plan's type names it: "
                  f"compiled only inside the loop.")
    return fn


#: the loop's call of each call of the table of kinds, by its name (``kinds.Call.loop_name``)
CALLS: dict = {c.loop_name: _stage_call(k, c) for k in kinds.TABLE for c in k.calls}
globals().update(CALLS)


