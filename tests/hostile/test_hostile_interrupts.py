"""Issue #25, findings 1 and 2: Ctrl-C and SIGTERM end the whole diversity experiment (replication,
heuristics with ``measure``), not one inner run, keeping what was measured completely (status interrupted,
exit 130 / 143); a signal acts at once while a diagnostic's compiled chunk runs or compiles.

Timing tests wait for a readiness signal (the progress bar's first counted iteration on a pseudo-terminal,
an event set inside the work), never a fixed sleep."""

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import threading
import time

import pytest

from signsim.interface import interrupts

from ..conftest import ACT_WITHIN_CPU as ACT_WITHIN
from ..conftest import exit_after_signal

# --- finding 2: a long or compiling chunk does not hold the signal back --------------------------------------


def test_a_signal_acts_while_a_chunk_still_runs():
    """The step blocks (as a first call that compiles its kernel for tens of seconds does) until released;
    the interrupt must arrive while it is still blocked."""
    started, release, finished = threading.Event(), threading.Event(), threading.Event()

    def step(lo, hi):
        started.set()
        release.wait(30)
        finished.set()

    def ctrl_c():
        started.wait(30)
        os.kill(os.getpid(), signal.SIGINT)

    previous = interrupts.install()
    try:
        threading.Thread(target=ctrl_c, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            interrupts.chunked(10, step)
        assert not finished.is_set()  # raised while the chunk still ran (the old code waited for it)
    finally:
        release.set()
        interrupts.restore(previous)
        interrupts.release()


def test_a_chunk_outside_the_main_thread_runs_in_place():
    calls = []
    t = threading.Thread(target=lambda: interrupts.chunked(5, lambda lo, hi: calls.append((lo, hi))))
    t.start()
    t.join()
    assert calls and calls[0][0] == 0 and calls[-1][1] == 5


def test_an_error_in_a_chunk_reaches_the_caller():
    def step(lo, hi):
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        interrupts.chunked(3, step)


# --- finding 1: the experiments stop entirely and keep what they measured ---------------------------------


def _fake_runs(monkeypatch, interrupted_at: int):
    """``commands.run.run`` replaced by runs that reach the target at iteration 10 (the ``interrupted_at``-th
    call is interrupted instead, as a run is by Ctrl-C); returns the list of calls."""
    from signsim.commands import run as run_module

    calls = []

    def fake(cfg, progress=None, on_start=None):
        calls.append(cfg)
        status = "interrupted" if len(calls) == interrupted_at else "ok"
        return {"status": status, "history": [{"iter": 0, "loss": 1.0}, {"iter": 10, "loss": 0.0}]}

    monkeypatch.setattr(run_module, "run", fake)
    return calls


def test_an_interrupted_run_stops_iterations_to_target(monkeypatch):
    from signsim.commands.run import TargetRunsInterrupted, iterations_to_target
    from signsim.interface.experiment_config import TargetRuns

    calls = _fake_runs(monkeypatch, interrupted_at=4)
    e = TargetRuns(batch_sizes=[1, 2, 4], seeds=2, max_iters=100)
    with pytest.raises(TargetRunsInterrupted) as stop:
        iterations_to_target({"problem": "logistic"}, e)
    assert len(calls) == 4  # nothing ran after the interrupted run
    assert stop.value.hits == {1: [10, 10]}  # B = 2 was interrupted: left out, not counted as "not reached"


def test_the_replication_experiment_keeps_the_batch_sizes_measured(monkeypatch):
    from signsim.commands import diversity as diversity_module
    from signsim.commands.replication import replication
    from signsim.interface.experiment_config import ReplicationExperiment

    _fake_runs(monkeypatch, interrupted_at=3)
    monkeypatch.setattr(diversity_module, "diversity", lambda *a, **k: pytest.fail("B_S measured after Ctrl-C"))
    e = ReplicationExperiment(batch_sizes=[1, 2, 4], seeds=2, max_iters=100, replicate=[1, 2])
    doc = replication({"problem": "logistic"}, e)
    assert doc["status"] == "interrupted"
    assert [(r["replicate"], r["B"], r["runs_reaching_target"]) for r in doc["rows"]] == [(1, 1, 2)]


def test_the_heuristics_measurement_keeps_the_batch_sizes_measured(monkeypatch):
    from signsim.commands.heuristics import _measure
    from signsim.interface.experiment_config import HeuristicsExperiment

    calls = _fake_runs(monkeypatch, interrupted_at=5)
    e = HeuristicsExperiment(batch_sizes=[1, 2], seeds=2, max_iters=100, measure="langevin:1")
    measured = []
    with pytest.raises(KeyboardInterrupt):
        _measure({"problem": "logistic"}, e, None, measured)
    assert len(calls) == 5
    assert [(r["transform"], r["B"]) for r in measured] == [("none", 1), ("none", 2)]


# --- end to end: real signals, readiness read from the progress bar ------------------------------------------

EXPERIMENTS = {
    "replication": 'kind = "replication"\nreplicate = [1, 2]\n',
    "heuristics": 'kind = "heuristics"\ntransforms = ["dropout:0.5"]\nmeasure = "langevin:1"\n',
}


def _until_running(args, pattern: bytes, timeout: float = 300):
    """Start ``signsim ARGS`` in its own session with stderr on a pseudo-terminal (so that the progress bar is
    drawn) and return (process, terminal, output so far) once ``pattern`` appears in it."""
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "signsim.cli", *map(str, args)], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=slave, start_new_session=True)
    os.close(slave)
    seen = b""
    end = time.monotonic() + timeout
    while not re.search(pattern, seen):
        assert p.poll() is None and time.monotonic() < end, seen[-2000:]
        if select.select([master], [], [], 0.5)[0]:
            seen += os.read(master, 65536)
    return p, master, seen


def _drain_until_exit(p, master) -> tuple[bytes, float]:
    """The terminal's output until ``p`` exits, and the CPU seconds it used after the signal."""
    out = bytearray()

    def pump() -> None:
        while select.select([master], [], [], 0)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the terminal closed with the process
                return
            if not chunk:
                return
            out.extend(chunk)

    _, took = exit_after_signal(p, pump=pump)
    pump()
    os.close(master)
    return bytes(out), took


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "sig", "code"), [("replication", signal.SIGINT, 130),
                                                   ("heuristics", signal.SIGTERM, 143)])
def test_an_experiment_stops_entirely_on_the_first_signal(tmp_path, kind, sig, code):
    config = tmp_path / "e.toml"
    config.write_text('problem = "logistic"\n[experiment]\n' + EXPERIMENTS[kind]
                      + "batch_sizes = [1, 2]\nmax_iters = 100000000\ntarget_loss = 0.0001\nseeds = 2\n"
                      + "eval_every = 1000\n")
    out = tmp_path / "e.json"
    p, master, _ = _until_running(["diversity", "--config", config, "--out", out], rb"\d+/100000000")
    if sig == signal.SIGINT:
        os.killpg(p.pid, sig)  # as a terminal does
    else:
        os.kill(p.pid, sig)
    raw, took = _drain_until_exit(p, master)
    err = raw.decode(errors="replace")
    assert p.returncode == code and took < ACT_WITHIN, (p.returncode, took, err[-2000:])
    assert "Traceback" not in err
    doc = json.loads(out.read_text())
    assert doc["status"] == "interrupted"
    rows = doc["rows"] if kind == "replication" else doc["measured"]
    assert rows == []  # the first run was interrupted: no batch size was measured completely


# --- issue #34: the last history row of an interrupted run is where it stopped, on every path ------------------


def test_a_signal_inside_the_chunk_threads_start_cancels_or_abandons_the_chunk(monkeypatch):
    """The signal raises inside ``Thread.start`` (its wait for the new thread), the thread already running: the
    chunk must then either never run or be reported abandoned (the old code did neither, and the chunk went on
    writing into a run whose history had been closed)."""
    release, ran, abandoned = threading.Event(), threading.Event(), threading.Event()
    original = threading.Thread.start

    def start_then_signal(self):
        original(self)
        raise KeyboardInterrupt

    def work():
        release.wait(30)
        ran.set()

    monkeypatch.setattr(threading.Thread, "start", start_then_signal)
    with pytest.raises(KeyboardInterrupt):
        interrupts.interruptible(work, abandoned.set)
    monkeypatch.undo()
    release.set()
    for t in threading.enumerate():
        if t.name == "signsim-chunk":
            t.join(30)
    assert abandoned.is_set() or not ran.is_set()


def _interrupted_at_third_chunk(monkeypatch, abandon: bool):
    """``driver.interruptible`` replaced: the first two chunks run; the third is interrupted, either abandoned to
    its thread (which ends it while the results are being made: the worst case) or before it starts."""
    from signsim.engine import driver

    calls, late = [], []

    def fake(work, on_abandon=None):
        calls.append(work)
        if len(calls) < 3:
            return work()
        if abandon:
            on_abandon()
            late.append(work)
        raise KeyboardInterrupt

    original = driver._stopped_at_chunk_start

    def then_the_chunk_ends(engine):
        history = original(engine)
        late.pop()()  # the abandoned chunk ends in its thread, writing into the engine
        return history

    monkeypatch.setattr(driver, "interruptible", fake)
    monkeypatch.setattr(driver, "_stopped_at_chunk_start", then_the_chunk_ends)


@pytest.mark.parametrize("abandon", [True, False], ids=["abandoned-chunk", "between-chunks"])
def test_an_interrupted_run_ends_its_history_where_it_stopped(monkeypatch, abandon):
    from signsim.engine import loop
    from signsim.engine.driver import simulate

    from ..conftest import make_engine

    engine, *_ = make_engine(problem="quadratic", iters=100_000, eval_every=1000, seed=3)
    _interrupted_at_third_chunk(monkeypatch, abandon)
    out = simulate(engine)
    assert out.status == "interrupted" and out.iters_done > 0
    last = out.history[-1]
    assert last[loop.H_ITER] == out.iters_done, (last[loop.H_ITER], out.iters_done)
    assert (last[loop.H_BITS_UP], last[loop.H_BITS_DOWN]) == (out.tally[loop.T_UP], out.tally[loop.T_DOWN])
    if abandon:
        assert engine.k > out.iters_done  # the chunk did run on after the signal


def test_a_run_interrupted_while_its_first_chunk_loads_the_loop_says_it_has_no_row(monkeypatch):
    """The first chunk (loading or compiling the loop) abandoned: no history row exists yet, and the output says
    why (a sweep's worker still loading its loop on a loaded machine, CI 6 December 2026), not an unexplained
    empty history."""
    from signsim.engine import driver

    from ..conftest import make_engine

    def abandoned_at_once(work, on_abandon=None):
        on_abandon()
        raise KeyboardInterrupt

    engine, *_ = make_engine(problem="quadratic", iters=1000, seed=3)
    monkeypatch.setattr(driver, "interruptible", abandoned_at_once)
    out = driver.simulate(engine)
    assert (out.status, len(out.history), out.iters_done, out.error) == ("interrupted", 0, 0, driver.NO_ROW_YET)
