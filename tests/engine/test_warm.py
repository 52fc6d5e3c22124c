"""The family's one loop compiled in the background after a first run (signsim.engine.warm): with a fresh kernel
cache, a first run compiles its own composition's loop and leaves a detached process compiling the one loop; once
that process ends (the lock it holds is released: the readiness signal), another composition compiles nothing. Also
the off switch, a lock file nobody holds, and a run that cannot start one."""

import os
import time

import pytest

from signsim.engine import warm

from ..conftest import run_subprocess

SIGNATURE = ("float64", "a loop's argument types")


def _signsgd_stages() -> dict:
    """kind -> module of a composition of built-in stages (signSGD with majority vote and an invert attack)."""
    from signsim.engine import compose
    from signsim.stages import registry

    return {k.name: registry.parse(k.name, {"server_optimizer": "sgd", "down_compressor": "identity",
                                            "compressor": "sign", "aggregation": "majority",
                                            "attack": "invert", "momentum": "none"}.get(k.name, "none")).module
            for k in compose.kinds.TABLE}


def test_nothing_starts_or_waits_when_it_is_off(monkeypatch, tmp_path):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv(warm.ENV, "0")
    assert warm.start("analytic", False, SIGNATURE) is None
    assert not list(tmp_path.iterdir())
    assert warm.wait("analytic", False, SIGNATURE) is False


def test_a_lock_file_nobody_holds_is_no_work(monkeypatch, tmp_path):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv(warm.ENV, "1")
    path = warm.lock_file("glm", True, SIGNATURE)
    path.write_text(f"{os.getpid()}\n")  # a live process id, but no lock: a file left behind
    assert not warm.running("glm", True, SIGNATURE)
    assert warm.wait("glm", True, SIGNATURE) is False


def test_a_fifo_in_place_of_the_lock_file_is_no_work_and_blocks_nothing(monkeypatch, tmp_path):
    """A FIFO where the lock file should be: a read-only open of it waited for a writer, forever. Now neither the
    check nor a start opens anything but a regular file (each in a thread here, so that the old wait would fail the
    test instead of hanging it)."""
    import threading

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv(warm.ENV, "1")
    path = warm.lock_file("glm", True, SIGNATURE)
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    out = {}
    checks = [threading.Thread(target=lambda: out.update(running=warm.running("glm", True, SIGNATURE)), daemon=True),
              threading.Thread(target=lambda: out.update(started=warm.start("glm", True, SIGNATURE)), daemon=True)]
    for t in checks:
        t.start()
        t.join(10)
    assert out == {"running": False, "started": None}, out
    assert not any(t.is_alive() for t in checks)


def test_a_cache_it_cannot_write_starts_nothing_and_fails_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "a-file"))
    (tmp_path / "a-file").write_text("")  # the cache is a file: no lock file can be made in it
    monkeypatch.setenv(warm.ENV, "1")
    assert warm.start("analytic", False, SIGNATURE) is None


@pytest.mark.slow
def test_a_second_composition_finds_the_one_loop_the_first_run_left_compiling(tmp_path):
    env = {"NUMBA_CACHE_DIR": str(tmp_path), warm.ENV: "1", "SIGNSIM_LOOP": "auto"}
    first = run_subprocess("run", "--problem", "quadratic", "--method", "ssdm", "--iters", "20", env=env)
    assert first.code == 0, first.err
    locks = list(tmp_path.glob("signsim-warm-analytic-serial-*.lock"))
    assert len(locks) == 1, locks
    end = time.monotonic() + 900
    while warm._held(locks[0]):  # at work until its lock is released
        assert time.monotonic() < end, "the background compile did not end"
        time.sleep(0.2)
    second = run_subprocess("run", "--problem", "quadratic", "--method", "signum", "--iters", "20", env=env)
    assert second.code == 0, second.err
    assert "compiling" not in second.err and "waiting" not in second.err, second.err
    # the first run compiled its own plan's loop; the one loop (every built-in stage's plan) and no other is what
    # the second found
    import pickle

    from signsim.engine.plan import stages_of

    (index,) = tmp_path.glob("*/loop.run_rounds-*.nbi")
    with open(index, "rb") as f:
        pickle.load(f)
        plans = [stages_of(key[0][0]) for key in pickle.loads(f.read())[1]]
    assert sorted(p.builtin for p in plans) == [False, True], plans


@pytest.mark.parametrize("own_cached, one_cached, expect", [(True, True, "own"), (True, False, "own"),
                                                            (False, True, "one")])
def test_a_composition_whose_own_loop_is_cached_takes_it_before_the_one_loop(monkeypatch, own_cached, one_cached,
                                                                             expect):
    """Under SIGNSIM_LOOP=auto the composition's own loop, when cached, runs it (faster per worker step on small d
    than the one loop's dispatch by stage code, benchmarks/bench_engine.py); the one loop when only it is cached;
    nothing compiles in the background either way."""
    from signsim.engine import compose, split_compile

    monkeypatch.setenv("SIGNSIM_LOOP", "auto")
    stages = _signsgd_stages()
    from numba import typeof

    own, own_plan = compose.loops("analytic", stages, False, builtin=False, noise="gaussian")
    one, one_plan = compose.loops("analytic", stages, False)
    cached = {typeof(own_plan): own_cached, typeof(one_plan): one_cached}
    monkeypatch.setattr(split_compile, "cached", lambda kernel, sig: cached[sig[0]] and kernel is {
        typeof(own_plan): own, typeof(one_plan): one}[sig[0]])
    kernel, plan, warm_after = compose.choose("analytic", stages, False, (), "gaussian")
    assert (kernel, typeof(plan)) == {"own": (own, typeof(own_plan)), "one": (one, typeof(one_plan))}[expect]
    assert not warm_after


@pytest.mark.parametrize("other_cached, expect", [(True, "own"), (False, "one")])
def test_a_composition_run_with_the_other_clock_compiles_its_own_loop_not_the_one_loop(monkeypatch, other_cached,
                                                                                      expect):
    """Under SIGNSIM_LOOP=auto, a composition run with a system model whose own loop without the clock is cached (it
    ran before without one), neither its own loop with the clock nor the one loop cached and no background compile
    at work: its own loop with the clock (compose.choose; plan.Clock), not the one loop a second composition gets."""
    from numba import typeof

    from signsim.engine import compose, ledger, split_compile, warm

    monkeypatch.setenv("SIGNSIM_LOOP", "auto")
    stages = _signsgd_stages()
    (own, untimed), (_, timed) = (compose.loops("analytic", stages, False, builtin=False, noise="gaussian", timed=t)
                                  for t in (False, True))
    one, one_plan = compose.loops("analytic", stages, False)
    monkeypatch.setattr(split_compile, "cached", lambda kernel, sig: other_cached and sig[0] == typeof(untimed))
    monkeypatch.setattr(warm, "wait", lambda *args: False)
    monkeypatch.setattr(ledger, "signatures_of", lambda kernel: [(str(typeof(untimed)),)])  # the family has a loop
    kernel, plan, warm_after = compose.choose("analytic", stages, False, (), "gaussian", timed=True)
    assert (kernel, typeof(plan)) == {"own": (own, typeof(timed)), "one": (one, typeof(one_plan))}[expect]
    assert not warm_after


@pytest.mark.parametrize("other_cached, expect", [(True, "own"), (False, "one")])
def test_a_composition_run_on_another_problem_of_the_family_compiles_its_own_loop_not_the_one_loop(
        monkeypatch, other_cached, expect):
    """Under SIGNSIM_LOOP=auto, a composition run on the quadratic whose own loop for Rosenbrock is cached (it ran
    there before; its own loop calls its problem's kernels only, ``dispatch.Problems``), neither its own loop for
    the quadratic nor the one loop cached and no background compile at work: its own loop for the quadratic, not the
    one loop a second composition gets (compose.choose)."""
    from numba import typeof

    from signsim.engine import compose, ledger, split_compile, warm

    monkeypatch.setenv("SIGNSIM_LOOP", "auto")
    stages = _signsgd_stages()
    (own, rosenbrock), (_, quadratic) = (compose.loops("analytic", stages, False, builtin=False, noise="gaussian",
                                                       timed=False, module=m) for m in ("rosenbrock", "quadratic"))
    one, one_plan = compose.loops("analytic", stages, False)
    monkeypatch.setattr(split_compile, "cached", lambda kernel, sig: other_cached and sig[0] == typeof(rosenbrock))
    monkeypatch.setattr(warm, "wait", lambda *args: False)
    monkeypatch.setattr(ledger, "signatures_of", lambda kernel: [(str(typeof(rosenbrock)),)])  # the family has a loop
    kernel, plan, warm_after = compose.choose("analytic", stages, False, (), "gaussian", timed=False,
                                              module="quadratic")
    assert (kernel, typeof(plan)) == {"own": (own, typeof(quadratic)), "one": (one, typeof(one_plan))}[expect]
    assert plan.problems.module == ("quadratic" if expect == "own" else None)
    assert not warm_after


def _server_kernels_process(env=None):
    import subprocess
    import sys

    return subprocess.Popen([sys.executable, "-m", "signsim.engine.warm", warm.SERVER, "float64"],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, **(env or {})})


def _server_kernels_in_ledger() -> int:
    from signsim.engine import ledger, stage_kernels
    from signsim.engine.plan import SERVER_CALLS, WORKER_CALLS, call_signatures, server_signatures
    from signsim.stages import kinds, registry

    def first(kind):
        return next(iter(registry.builtin(kinds.base(kind.name)).values()))

    # every built-in stage's server kernels, and the kernels that hold the workers' calls by address (the first
    # built-in stage of each kind's: ``plan.worker_kernels``)
    return (sum(ledger.holds(stage_kernels.stage_function(module, call.attr, False), tuple(sig.args))
                for (kind, call), sig in zip(SERVER_CALLS, server_signatures("float64"), strict=True)
                for module in registry.builtin(kinds.base(kind.name)).values())
            + sum(ledger.holds(stage_kernels.stage_function(first(kind), call.attr, True), tuple(sig.args))
                  for (kind, call), sig in zip(WORKER_CALLS, call_signatures("float64", WORKER_CALLS), strict=True)))


def test_the_process_beside_the_background_compile_compiles_every_server_kernel():
    """``python -m signsim.engine.warm --server-kernels float64`` (the second process of the background compile)
    compiles (here: loads, after the suite's warm-up) every built-in stage's server kernel and ends by itself while
    its stdin stays open; the ledger then holds each."""
    proc = _server_kernels_process()
    assert proc.wait(timeout=600) == 0, proc.stderr.read().decode()
    proc.stdin.close()
    from signsim.engine.plan import compile_server_kernels

    assert _server_kernels_in_ledger() == compile_server_kernels("float64") > 50


@pytest.mark.slow
def test_the_process_beside_the_background_compile_ends_when_its_stdin_closes(tmp_path):
    """The server kernels' process of a background compile that ended (its stdin closed: the background process
    died, however) stops at once instead of compiling on without the lock (a fresh kernel cache: it would compile
    for about half a minute)."""
    proc = _server_kernels_process({"NUMBA_CACHE_DIR": str(tmp_path)})
    proc.stdin.close()
    assert proc.wait(timeout=600) == 0  # (a guard against a hang, not a time limit)
    assert not list(tmp_path.glob("*/*.nbc"))[50:], "it compiled on"
