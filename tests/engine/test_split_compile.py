"""A new loop compiles on two cores (``signsim.engine.split_compile``): the helper process compiles the loop's
callees with the signatures the loop calls them with, so the loop loads them instead of compiling them again, and
the results do not change."""

import json
import os
import re
import subprocess
import sys

import numba
import numpy as np
import pytest

from signsim.engine import split_compile
from signsim.engine.build import build
from signsim.engine.driver import simulate
from signsim.interface import config

from .test_engine_kinds import COMPOSITIONS, RUN


def _in_numbas_index(dispatcher, signature) -> bool:
    """Whether Numba's own cache index lists ``dispatcher`` compiled for ``signature`` (read through Numba's
    internals, here in a test only: the oracle of the ledger signsim keeps, ``signsim.engine.ledger``)."""
    cache = dispatcher._cache
    return cache._index_key(signature, dispatcher.targetctx.codegen()) in cache._cache_file._load_index()


def _engine(monkeypatch, **options):
    monkeypatch.setenv(split_compile.ENV, "0")  # whatever is compiled here, the loop compiles it itself
    engine = build(config.resolve({"method": "ssdm", "workers": 32, "iters": 20, **options})).engine
    simulate(engine)
    return engine


@pytest.mark.parametrize("options", [
    {},
    # (the whole suite runs with one Numba thread, where every run is serial: this case runs in the slow step)
    pytest.param({"method": "signsgd", "dim": 2000, "workers": 64}, marks=pytest.mark.slow),
    # (the composition test_engine_kinds.py runs in its own loop, a searching attack's: one compile for both)
    {"problem": RUN["problem"], **COMPOSITIONS[1], "loop": "composed"}],
    ids=["serial", "threaded", "own-loop"])
def test_the_helpers_signatures_are_those_the_loop_compiled(monkeypatch, options):
    """Every job's signature is one Numba's cache index lists for that kernel after a loop compiled it (the suite's
    warm-up compiles the loops without the helper: a signature that differs from the loop's would be missing). The
    jobs of the server's stages come from the table of kinds: one per call the server makes."""
    from signsim.engine import compose, loop
    from signsim.stages import kinds

    options = dict(options)
    monkeypatch.setenv(compose.LOOP_ENV, options.pop("loop", "builtin"))
    engine = _engine(monkeypatch, **options)
    kernel = engine.kernel
    assert (kernel is loop.run_chunk_threaded) == bool(engine.icfg[loop.I_PARALLEL]) == engine.plan.parallel.on
    if "workers" in options:
        assert engine.icfg[loop.I_PARALLEL] == (numba.get_num_threads() > 1)
    jobs, (step, signatures) = split_compile.jobs(engine, kernel, engine.plan)
    names = [recipe[-1] for recipe, _ in jobs]
    # each call the server makes, on the composition's stage of its kind (the plan of every built-in stage too: it
    # calls the composition's by address, ``plan.Stages``)
    server = [c.attr for k in kinds.TABLE for c in k.calls if not c.worker]
    assert sorted(n for n in names if n in {c.attr for k in kinds.TABLE for c in k.calls}) == sorted(server)
    assert "attack_factor" in names
    # the simulated clock's kernels: only for a loop that keeps the clock (the one loop; an own loop of a run with a
    # system model), never for a composition's own loop run without one (``plan.Clock``)
    clock = {"select", "advance", "advance_all"}
    assert engine.plan.clock.on == engine.plan.stages.builtin
    assert (clock & set(names)) == (clock if engine.plan.clock.on else set())
    missing = [recipe for recipe, sig in jobs if not _in_numbas_index(split_compile.find(recipe), sig)]
    assert missing == []
    # the worker step and record: the cache holds no other float64 signature (a wrong one compiled by the split
    # path would sit next to the loop's own); the worker step's, none other for this plan (it keeps one for each
    # plan it ran, under the plan's type)
    recipe = ("module", "signsim.engine.loop", "record")
    record = dict(jobs)[recipe]
    from signsim.engine.plan import worker_plan_type

    plan = numba.typeof(engine.plan)
    for dispatcher, sigs, first in ((step, signatures, worker_plan_type(plan)),
                                    (split_compile.find(recipe), [record], plan.types[0])):
        index = dispatcher._cache._cache_file._load_index()
        assert {key[0] for key in index if "float32" not in str(key[0]) and key[0][0] == first} == set(sigs)


def test_cached_says_no_for_a_signature_never_compiled():
    from numba import float32, int64

    from signsim.engine import loop

    assert split_compile.cached(loop.step_size, (int64, float32, int64)) is False
    assert split_compile.cached(loop.step_size, (int64, float32)) is False


LISTEN = """
import json, sys
import signsim
from numba.core import event
names = []
class Listener(event.Listener):
    def on_start(self, ev):
        pass
    def on_end(self, ev):
        names.append(ev.data["dispatcher"].py_func.__name__)
event.register("numba:compile", Listener())
from signsim.cli import main
try:
    main(sys.argv[2:])
finally:
    with open(sys.argv[1], "w") as f:
        json.dump(names, f)
"""


@pytest.mark.slow
def test_from_an_empty_cache_the_loop_loads_the_helpers_kernels_and_results_match(tmp_path):
    """From an empty cache, with the helper: this process compiles the worker step, then the helper's jobs from the
    last until it meets the helper, never the helper's first (``record``), and the loop; the results are those of a
    compile in one process. As a user's first run: its composition's own loop (``SIGNSIM_LOOP=auto``), without the
    simulated clock (no system model)."""
    from signsim.engine import compose

    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", split_compile.ENV)}
    env[compose.LOOP_ENV] = "auto"
    runs = {}
    for split in ("0", "1"):
        out, names = tmp_path / f"run{split}.json", tmp_path / f"names{split}.json"
        args = [sys.executable, "-c", LISTEN, str(names), "run", "--method", "ssdm", "--workers", "32", "--quiet",
                "--out", str(out)]
        done = subprocess.run(args, env={**env, "XDG_CACHE_HOME": str(tmp_path / split), split_compile.ENV: split},
                              capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr
        runs[split] = json.loads(out.read_text()), json.loads(names.read_text())
    (alone, compiled_alone), (split, compiled_here) = runs["0"], runs["1"]
    # a stage's kernels carry a hash of its source (``stage_kernels.source_hash``): compared by the stage's name
    compiled_alone, compiled_here = ([re.sub(r"__[0-9a-f]{12}(?=__worker$|$)", "", n) for n in names]
                                     for names in (compiled_alone, compiled_here))
    assert split["history"] == alone["history"]
    assert np.array_equal(split["x_final"], alone["x_final"])
    assert "record" in compiled_alone  # the one process compiled everything
    helpers = {"record", "step_size", "check_settings",
               "check_noise", "sparse_broadcast_bits", "finish__mean", "direction__none"}
    assert helpers <= set(compiled_alone)
    assert "record" not in compiled_here and not helpers <= set(compiled_here), compiled_here
    # a run without a system model compiles its composition's own loop without the simulated clock (``plan.Clock``)
    assert not {"select", "advance", "advance_all"} & set(compiled_alone + compiled_here)
    assert "worker_step" in compiled_here and "run_rounds" in compiled_here
    for split in ("0", "1"):  # the ledger lists the loop and its callees, whichever process compiled them
        (folder,) = (tmp_path / split).glob("signsim/numba/*/ledger")
        listed = {p.name for p in folder.iterdir() if any(p.iterdir())}
        names = ("run_rounds", "record", "worker_step", "step_size")
        assert {f"signsim.engine.loop.{name}" for name in names} <= listed


def test_later_chunks_call_the_loops_compiled_entry_with_the_same_results(monkeypatch):
    """After the first chunk (through Numba's dispatcher) the driver calls the compiled loop's entry point for the
    run's argument types; a run whose every chunk goes through the dispatcher gives the same history bit for bit.
    A hook every 3 iterations cuts the run into chunks."""
    monkeypatch.setenv(split_compile.ENV, "0")
    outs = []
    for through_dispatcher in (False, True):
        engine = build(config.resolve({"method": "ssdm", "workers": 8, "iters": 20, "eval_every": 1})).engine
        if through_dispatcher:
            engine.entry = False  # (False: no entry to call, as for types the loop was not compiled for)
        calls: list[int] = []
        out = simulate(engine, hooks=[(3, lambda k, x, calls=calls: calls.append(k))])
        assert calls == [0, 3, 6, 9, 12, 15, 18]  # (k = K is not a multiple of 3)
        if through_dispatcher:
            assert engine.entry is False
        else:
            assert engine.entry is engine.kernel.overloads[engine.signature].entry_point
        outs.append(out)
    np.testing.assert_array_equal(outs[0].history, outs[1].history)
    np.testing.assert_array_equal(outs[0].x, outs[1].x)


def test_the_helper_ends_cleanly_when_its_jobs_are_done_and_its_stdin_is_still_open():
    """The helper's exit is the parent's readiness signal; with the parent's end of its stdin still open it exits 0,
    where leaving through the interpreter's shutdown aborted it (SIGABRT) while its watching thread read stdin."""
    import pickle
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "signsim.engine.split_compile"], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    proc.stdin.write(pickle.dumps([]))
    proc.stdin.flush()
    assert proc.wait(timeout=120) == 0, proc.stderr.read().decode()  # (a guard against a hang, not a time limit)
    proc.stdin.close()
