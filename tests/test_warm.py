"""The family's one loop compiled in the background after a first run (signsim.engine.warm): with a fresh kernel
cache, a first run compiles its own composition's loop and leaves a detached process compiling the one loop; once
that process ends (its pid file goes: the readiness signal), another composition compiles nothing. Also the off
switch and a stale pid file."""

import os
import subprocess
import sys
import time

import pytest

from signsim.engine import warm

from .conftest import run_subprocess


def test_nothing_starts_when_it_is_off(monkeypatch, tmp_path):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv(warm.ENV, "0")
    assert warm.start("analytic", False, ()) is None
    assert not warm.pid_file("analytic", False).exists()


def test_a_pid_file_of_an_ended_process_is_removed(monkeypatch, tmp_path):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    path = warm.pid_file("data", True)
    path.write_text(ended.stdout)
    assert warm.running("data", True) is None and not path.exists()
    assert warm.wait("data", True) is False  # nothing to wait for


@pytest.mark.slow
def test_a_second_composition_finds_the_one_loop_the_first_run_left_compiling(tmp_path):
    env = {"NUMBA_CACHE_DIR": str(tmp_path), warm.ENV: "1", "SIGNSIM_LOOP": "auto"}
    first = run_subprocess("run", "--problem", "quadratic", "--method", "ssdm", "--iters", "20", env=env, timeout=600)
    assert first.code == 0, first.err
    path = tmp_path / "signsim-warm-analytic-serial.pid"
    end = time.monotonic() + 900
    while path.exists():  # the background compile is at work until its pid file goes
        assert time.monotonic() < end, "the background compile did not end"
        pid = int(path.read_text().split()[0])
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    second = run_subprocess("run", "--problem", "quadratic", "--method", "signum", "--iters", "20", env=env,
                            timeout=600)
    assert second.code == 0, second.err
    assert "compiling" not in second.err and "waiting" not in second.err, second.err
    # the first run compiled its own loop; the one loop and no other is what the second found
    loops = sorted(p.name.split("-")[0] for p in tmp_path.glob("*/loop.run_chunk_serial__analytic__*.nbi"))
    assert len(loops) == 2 and any("__builtin" in n for n in loops), loops
