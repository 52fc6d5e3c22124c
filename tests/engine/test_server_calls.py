"""The server's stage calls of the plan of every built-in stage go by address (``signsim.engine.plan``: ``Stages.fns``,
``SERVER_CALLS``, ``server_signatures``): one compiled loop for every composition, each server kernel compiled on
its own, with the signature the loop passes; the same results as a composition's own loop (where the calls are
the stage's own functions) are checked in ``test_engine_kinds.py``."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from signsim.engine import compose, loop, plan
from signsim.engine.driver import simulate

from ..conftest import make_engine


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_declared_signatures_are_the_arguments_the_loop_passes(dtype):
    """Each call's declared arguments (``call_signatures``) are the Numba types of the engine's arrays and settings
    the loop passes under those names (``loop.run_rounds``: the round's messages ``msg[:S]``, the server's aggregate,
    states and generator, a row of the downlink's state and scratch, a row of ``sp``, int64 scalars; the worker step,
    ``loop.worker_step``: rows of the workers' gradients, states, messages and scratch, a worker's generator)."""
    engine = make_engine(method="signum", workers=6, iters=2, dtype=dtype, byzantine=1, attack="ipm",
                         aggregate="trimmed:0.2", pre_aggregate="nnm:1", server_opt="fedadam",
                         down_compressor="top-k:2", down_feedback="ef")[0]
    data, workers, server, run, gens = engine.bundles()
    k = np.int64(0)
    value = {"msg": workers.msg[:3], "srv": server.srv, "opt": server.opt, "hbar": server.hbar, "gen": server.gen,
             "tie": run.icfg[loop.I_TIE], "sign_zero": run.icfg[loop.I_SIGN_ZERO], "iwork": server.diwork[0],
             "lr": run.fcfg[loop.F_LR], "p": run.sp[0], "direction": server.agg, "agg": server.agg,
             **dict.fromkeys(("v", "out", "g", "e"), server.down[loop.D_OUT]),
             **dict.fromkeys(("k", "M", "B", "S", "H", "n"), k)}
    # a worker's calls (made by address on a plugin, ``plan.worker_kernels``): the rows of the workers' arrays
    worker = {**value, "v": workers.msg[0], "out": workers.msg[0], "g": workers.G[0], "m": workers.mom[0],
              "e": workers.err[0], "h": workers.shift[0], "iwork": workers.iwork[0], "gen": gens[0]}
    assert set(worker) == set(plan.call_arg_types(engine.dtype))
    for (kind, call), sig in zip(plan.BY_ADDRESS, plan.call_signatures(engine.dtype), strict=True):
        args = worker if call.worker else value
        assert tuple(sig.args) == tuple(numba.typeof(args[a]) for a in call.args), (kind.name, call.attr)


def test_two_compositions_share_the_one_loop_and_differ_in_their_server_kernels(monkeypatch):
    """Runs of different aggregations, pre-aggregations and server optimizers take one plan type (so one compiled
    loop) whose values carry each its own kernels; the second run compiles no loop."""
    monkeypatch.setenv(compose.LOOP_ENV, "builtin")
    runs = [dict(method="signsgd", workers=5, iters=3),
            dict(method="signsgd", workers=5, iters=3, byzantine=1, attack="ipm", aggregate="median",
                 pre_aggregate="nnm:1", server_opt="fedadam")]
    engines = []
    for options in runs:
        engine = make_engine(**options)[0]
        simulate(engine)
        engines.append(engine)
    first, second = (e.plan for e in engines)
    assert numba.typeof(first) == numba.typeof(second)
    assert first.stages.builtin and second.stages.builtin
    names = [[getattr(f, "__name__", "") for f in p.stages.fns] for p in (first, second)]
    assert names[0] != names[1]
    calls = [c.attr for _, c in plan.SERVER_CALLS]
    assert "robust__median" in names[1][calls.index("robust")]
    assert "pre__nnm" in names[1][calls.index("pre")]
    assert "robust__median" not in names[0][calls.index("robust")]
    assert engines[0].kernel is engines[1].kernel
    assert sum(sig[0] == numba.typeof(first) for sig in engines[0].kernel.signatures) == 1


def test_a_server_kernel_that_returns_another_type_is_refused(monkeypatch):
    """A kernel whose return type is not its call's (``kinds.Call.result``) would be called through a pointer of the
    wrong type: refused by name when the plan first makes its kernels (at the first call of the loop)."""
    from numba import njit

    from signsim.engine import stage_kernels

    @njit
    def direction(agg, srv):
        return 1.0  # a number where the error feedback's direction is a vector

    real = stage_kernels.stage_function
    monkeypatch.setattr(stage_kernels, "stage_function",
                        lambda module, attr, worker_path, **kw: direction if attr == "direction" else real(
                            module, attr, worker_path, **kw))
    with pytest.raises(TypeError, match="direction returns float64, not array"):
        plan.server_kernels({}, np.float64, only="error_feedback")


def test_a_refused_server_kernel_stops_the_run_with_its_error_not_a_crash(monkeypatch):
    """The loop's argument is unboxed from ``Stages.held``, which compiles the kernels: an error there (a kernel of
    another return type) reaches the caller as that error, through the compiled loop's argument unboxing."""
    monkeypatch.setenv(compose.LOOP_ENV, "builtin")

    def refuse(server, dtype, only=None):
        raise TypeError("stage 'x': finish returns float64, not none")

    monkeypatch.setattr(plan, "server_kernels", refuse)
    engine = make_engine(method="signsgd", workers=3, iters=2)[0]
    with pytest.raises(Exception, match="finish returns float64"):
        simulate(engine)
