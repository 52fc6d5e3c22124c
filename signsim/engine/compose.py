"""Each run's loop and plan: the family's one loop that runs every composition of built-in stages, or the plan of
the one composition it uses (docs/theory.md §2, §8; ``choose`` decides, ``SIGNSIM_LOOP`` overrides).

The loop is one function, ``loop.run_rounds``, compiled serially (``loop.run_chunk``) and with threads
(``loop.run_chunk_threaded``), whose first argument, a ``signsim.engine.plan.Plan``, carries in its Numba type the
family of problems (or one problem kernel module of it) and noise model it reaches, whether it runs with threads, and
the stages it calls: every built-in stage (the family's one loop: a worker's stage chosen by its code at each call, the
server's the composition's own kernels, called by the addresses the plan's value carries, ``plan.Stages``), or one
composition's own stages (``loops``). Numba compiles and caches the loop once per plan type, in the same cache files;
the type names the stages with a hash of their sources (``signsim.engine.stage_kernels``), so that a new or edited stage
compiles only the loops that call it.
"""

from __future__ import annotations

import functools
import os

import numpy as np

from signsim.engine import dispatch, loop, stage_kernels
from signsim.stages import kinds

#: which loop a composition runs in (a plugin's too, unless its kernels do not fit the one loop's calls): "auto"
#: (``choose``), "builtin" (always the family's one loop), "composed" (always a loop of its own), or a comma-separated
#: list of families that take their one loop (the others their composition's own)
LOOP_ENV = "SIGNSIM_LOOP"
LOOP_MODES = ("auto", "builtin", "composed")


def loops(family: str, stages: dict, threaded: bool, builtin: bool = True, noise: str | None = None,
          timed: bool = True, dtype=np.float64, module: str | None = None):
    """(loop, plan) for the problems of ``family`` and the stages ``stages`` (kind -> module), run in parallel or not
    (``threaded``). The loop is ``loop.run_chunk_threaded`` or ``loop.run_chunk`` (``loop.compiled``), compiled (or
    loaded from the cache) for each plan at its first call. With ``builtin``, the composition gets the plan of every
    built-in stage for every noise model (the family's one loop, which calls a plugin's kernels by address);
    otherwise a plan of its own stages, whose workers draw from the noise model ``noise`` only (a name of
    ``dispatch.NOISE``; None: from every model) and call the problem kernel module ``module`` only (a name of
    ``dispatch.module_name``; None: every one of the family's), with the simulated clock only when ``timed`` (a run
    with a system model, docs/theory.md §14: ``plan.Clock``). The plan of every built-in stage carries the
    composition's server kernels for vectors of ``dtype`` (``plan.Stages``)."""
    from signsim.engine.plan import plan_for

    if builtin:
        plan = plan_for(family, parallel=threaded, server=stages, dtype=dtype)
    else:
        plan = plan_for(family, stages, noise, parallel=threaded, timed=timed, module=module)
    return loop.compiled(plan), plan


def check_codes(plan, icfg) -> None:
    """ValueError for a stage code the plan of every built-in stage does not know (a worker's call would run the
    kind's last built-in stage, or none, ``plan._builtin_call``; a plugin's code, past the built-ins', only for the
    kind of the plugin it carries; the server's calls go by address and do not read it), or
    for a noise code other than the one a composition's own plan draws from (it would draw NaN), or a problem code
    served by another problem kernel module than the one it calls (its oracle would write NaN), or for a run with a
    system model on a loop without the simulated clock: checked before the loop, like the problem and noise codes."""
    if (int(icfg[loop.I_TOPOLOGY]) != 0 or int(icfg[loop.I_KEEP]) > 0) and not plan.clock.on:
        raise ValueError("this loop keeps no simulated clock, and the run has a system model")
    noise = plan.problems.noise
    if noise is not None and dispatch.noise_name(int(icfg[loop.I_NOISE])) != noise:
        raise ValueError(f"this loop draws noise {noise}, not code {int(icfg[loop.I_NOISE])}")
    module = plan.problems.module
    if module is not None and dispatch.module_name(int(icfg[loop.I_PROBLEM])) != module:
        raise ValueError(f"this loop calls the problems of {module}, not code {int(icfg[loop.I_PROBLEM])}")
    if not plan.stages.builtin:
        return
    from signsim.stages.plugins import is_plugin

    for kind, count in stage_kernels.counts().items():
        code = int(icfg[loop.ICFG.index(kinds.code_setting(kind))])
        plugin = kind in plan.stages.server and is_plugin(plan.stages.server[kind])  # (its code: count)
        if not 0 <= code < count + plugin:
            raise ValueError(f"unknown {kind} stage code {code}")


def mode(family: str | None = None) -> str:
    """``SIGNSIM_LOOP`` for ``family``: "auto", "builtin" or "composed" (a list of families: "builtin" for those,
    "composed" for the others; anything else: "auto")."""
    value = os.environ.get(LOOP_ENV, "auto").strip().lower() or "auto"
    if value in LOOP_MODES:
        return value
    families = {f.strip() for f in value.split(",")}
    if family is not None and families <= set(dispatch.FAMILIES):
        return "builtin" if family in families else "composed"
    return "auto"


def choose(family: str, stages: dict, threaded: bool, signature: tuple, noise: str | None = None,
           timed: bool = True, dtype=np.float64, module: str | None = None) -> tuple:
    """(the loop a run takes, its plan, whether to compile the family's one loop in the background once it has run), for
    the loop's arguments after the plan of types ``signature``. A composition with a plugin whose kernels do not compile
    for the one loop's calls (``plugin_kernels_fit``): its own. Otherwise (built-in stages, and plugins the one loop
    calls by address), by ``SIGNSIM_LOOP``; under "auto", the composition's own loop when it is in the kernel cache for
    this signature (the one loop chooses each worker's stage by its code at every call; with the worker step inlined
    (``forceinline``, ``loop.worker_step``), the two ran SSDM in about the same time: 0.098 s against 0.105 s on
    Rosenbrock at d = 10, K = 20,000, and 0.88 s both on the d = 10^6 quadratic, medians of three runs of
    ``benchmarks/bench_engine.py`` on 5 December 2026), else the family's one loop when that is cached (nothing
    compiles), else its own when the cache holds no loop of the family yet (a first run compiles the smaller loop: about
    half the CPU time; then the one loop compiles in the background, ``signsim.engine.warm``), else the one loop (a
    second composition: from then on every composition of built-in stages runs without compiling), waiting for a
    background compile of it that is at work rather than compiling it a second time. A composition's own loop draws from
    the run's noise model ``noise`` only and calls its problem kernel module ``module`` only (``loops``), so a
    composition run with another noise model, or on a problem of another module, is another composition here; it keeps
    the simulated clock only when ``timed``. A composition run with a system model after a run without one (or the
    reverse), or on a problem of another module of the family after a run on one (the quadratic after Rosenbrock),
    neither loop cached nor the background compile at work, compiles its own loop again rather than the one loop. A
    composition with a plugin takes the one loop only when that is cached (or compiled in the background meanwhile),
    else its own: its own loop costs a fraction of the one loop's compile."""
    from numba import typeof

    from signsim.engine import ledger, warm
    from signsim.engine.split_compile import cached

    def pick(builtin: bool, clocked: bool = timed):
        return loops(family, stages, threaded, builtin=builtin, noise=noise, timed=clocked, dtype=dtype,
                     module=module)

    def is_cached(kernel, plan) -> bool:
        return cached(kernel, (typeof(plan), *signature))

    def family_has_loops(kernel) -> bool:  # any loop of the family, of any composition (threaded or serial as asked)
        return any(dispatch.family_in(args[0]) == family for args in ledger.signatures_of(kernel) if args)

    plugin = not stage_kernels.builtin_only(stages)
    # (a plugin the one loop would call by address: its kernels compile here, once, before the one loop is considered)
    fits = functools.cache(lambda: plugin_kernels_fit(stages, dtype))
    chosen = mode(family)
    if chosen != "auto":
        return (*pick(chosen == "builtin" and fits()), False)
    own, own_plan = pick(False)
    if is_cached(own, own_plan):  # a composition's own loop runs faster than the one loop's dispatch on small d
        return own, own_plan, False
    if not fits():
        return own, own_plan, False
    one, one_plan = pick(True)
    if is_cached(one, one_plan):
        return one, one_plan, False
    if warm.wait(family, threaded, signature) and is_cached(one, one_plan):
        return one, one_plan, False
    # the same composition run before on a problem of another kernel module of the family (Rosenbrock, now the
    # quadratic), or with the other clock (a system model then, none now, or the reverse): its own loop once more, not
    # the one loop (about a third of its CPU time)
    others = [(m, t) for m in (dispatch.module_names(family) if module is not None else [None])
              for t in (timed, not timed) if (m, t) != (module, timed)]
    if any(is_cached(*loops(family, stages, threaded, builtin=False, noise=noise, timed=t, dtype=dtype, module=m))
           for m, t in others):
        return own, own_plan, False
    # (a plugin: never the whole one loop compiled for it here, where its own loop costs a fraction of it)
    if family_has_loops(own) and not plugin:
        return one, one_plan, False
    return own, own_plan, True


def plugin_kernels_fit(stages: dict, dtype=np.float64) -> bool:
    """Whether the kernels of the plugins of ``stages`` compile for the signatures of the one loop's calls, which it
    makes on a plugin by address (``plan.server_kernels``, ``plan.worker_kernels``): else the composition runs in its
    own loop, which types them as they are (and says in one line what does not compile). True, compiling nothing,
    for a composition of built-in stages."""
    import warnings

    from numba.core.errors import NumbaError

    from signsim.engine.plan import server_kernels, worker_kernels
    from signsim.stages.plugins import is_plugin

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Numba's type-safety notes (as around the loop's calls)
            for kind, module in stages.items():
                if is_plugin(module):
                    server_kernels({kind: module}, dtype, only=kind)
                    worker_kernels({kind: module}, dtype, only=kind)
    except (NumbaError, TypeError):
        return False
    return True


def buffered_plan(family: str, stages: dict, signature: tuple, noise: str | None = None, dtype=np.float64,
                  module: str | None = None):
    """The plan an asynchronous run (``buffered.run_buffered``, one serial loop) takes, for the loop's arguments
    after the plan of types ``signature``: by ``SIGNSIM_LOOP`` as for rounds; under "auto", the composition's own
    plan when its loop is in the kernel cache, else the plan of every built-in stage when that loop is (``signsim
    compile`` puts it there), else its own (a first asynchronous run compiles the smaller loop). A composition with
    a plugin: as one of built-in stages, unless its kernels do not fit the one loop's calls (as ``choose``)."""
    from numba import typeof

    from signsim.engine.buffered import run_buffered
    from signsim.engine.plan import plan_for
    from signsim.engine.split_compile import cached

    own = plan_for(family, stages, noise, parallel=False, module=module)
    chosen = mode(family)
    if chosen == "composed" or chosen == "auto" and cached(run_buffered, (typeof(own), *signature)):
        return own
    one = plan_for(family, parallel=False, server=stages, dtype=dtype)
    if chosen == "auto" and not cached(run_buffered, (typeof(one), *signature)):
        return own
    return one if plugin_kernels_fit(stages, dtype) else own
