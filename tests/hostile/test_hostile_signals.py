"""Issue #18: Ctrl-C and SIGTERM act within about a second everywhere, keep partial results, exit 130 / 143.
SIGINT is delivered to the whole process group, as a terminal does; SIGTERM to the process only. "Within about a
second" is counted in the signalled process's own CPU seconds (conftest.ACT_WITHIN_CPU), which a loaded machine
does not stretch; wall time only guards against a hang."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from ..conftest import ACT_WITHIN_CPU as ACT_WITHIN
from ..conftest import exit_after_signal, wait_for_cpu, wait_until_ready


@pytest.fixture(scope="module", autouse=True)
def compiled_kernels():
    """Compile (or load) every kernel the timed commands below use, in fresh processes as the timed ones are,
    so that those only load them from the cache."""
    for args in (["run", "--problem", "logistic", "--iters", "3", "--quiet"],
                 ["run", "--problem", "quadratic", "--iters", "3", "--quiet"],
                 ["check-spb", "--problem", "quadratic", "--dim", "50", "--estimator", "monte-carlo", "--samples",
                  "50", "--quiet"],
                 ["diversity", "--problem", "quadratic", "--dim", "50", "--estimator", "two-batch", "--pairs", "50",
                  "--quiet"],
                 ["check-spb", "--problem", "quadratic", "--at", "run:3", "--quiet"]):
        subprocess.run([sys.executable, "-m", "signsim.cli", *args], capture_output=True, timeout=600)


def interrupt(args, sig=signal.SIGINT, after_import=None, twice=False, env=None):
    """Start ``signsim ARGS`` in its own process group and deliver ``sig`` once its compiled work is under way
    (it creates SIGNSIM_READY_FILE), or, to land during start-up, as soon as the module ``after_import`` is
    imported (Python's ``-X importtime`` line for it on stderr); returns (exit code, stderr, seconds from the
    signal to the exit, in CPU seconds of the process and its children)."""
    with tempfile.TemporaryDirectory() as folder:
        ready = Path(folder) / "ready"
        python = [sys.executable, *(["-X", "importtime"] if after_import else [])]
        p = subprocess.Popen([*python, "-m", "signsim.cli", *map(str, args)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True,
                             env={**os.environ, **(env or {}), "SIGNSIM_READY_FILE": str(ready)})
        early = ""
        if after_import is None:
            wait_until_ready(p, ready)
        else:
            for line in p.stderr:  # "import time: self | cumulative | name", once the module is imported
                early += line
                if line.startswith("import time:") and line.rsplit("|", 1)[-1].strip() == after_import:
                    break
            assert not ready.exists() and p.poll() is None, (early, p.communicate())
        if sig == signal.SIGINT:
            os.killpg(p.pid, sig)
            if twice:
                time.sleep(0.05)
                os.killpg(p.pid, sig)
        else:
            os.kill(p.pid, sig)
        err, took = exit_after_signal(p)
        return p.returncode, early + err, took


def test_a_job_started_with_sigint_ignored_keeps_ignoring_it(tmp_path):
    """A job a script or a non-interactive shell starts with ``&`` inherits SIGINT ignored (POSIX), so that a Ctrl-C
    at the terminal stops the script's foreground only: signsim keeps it ignored (the kernel's signal mask says so
    once its work is under way, and a SIGINT to its process group changes nothing) and SIGTERM still stops it."""
    ready, out = tmp_path / "ready", tmp_path / "r.json"
    p = subprocess.Popen([sys.executable, "-m", "signsim.cli", "run", "--problem", "quadratic", "--iters",
                          "100000000", "--out", str(out), "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True, env={**os.environ, "SIGNSIM_READY_FILE": str(ready)},
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    wait_until_ready(p, ready)
    ignored = int(next(line for line in Path(f"/proc/{p.pid}/status").read_text().splitlines()
                       if line.startswith("SigIgn:")).split()[1], 16)
    assert ignored & (1 << (signal.SIGINT - 1)), hex(ignored)
    os.killpg(p.pid, signal.SIGINT)
    os.kill(p.pid, signal.SIGTERM)
    err, _ = exit_after_signal(p)
    assert p.returncode == 143 and err.strip().splitlines() == ["signsim: terminated"], (p.returncode, err)
    assert json.loads(out.read_text())["status"] == "interrupted"


def assert_clean(err):
    assert "Traceback" not in err and "SystemError" not in err, err


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_run_stops_and_keeps_its_history(tmp_path, sig, code):
    out = tmp_path / "r.json"
    rc, err, took = interrupt(["run", "--problem", "quadratic", "--iters", "100000000", "--out", out, "--quiet"], sig)
    assert rc == code and took < ACT_WITHIN, (rc, took, err)
    assert_clean(err)
    doc = json.loads(out.read_text())
    assert doc["status"] == "interrupted" and doc["history"]
    assert_stopped_where_its_history_ends(doc)


def assert_stopped_where_its_history_ends(doc):
    """The last row is where the run stopped, and final says the same (it was the last row recorded before)."""
    last, final = doc["history"][-1], doc["final"]
    assert last["iter"] == final["iters_done"] == final["iter"], (last, final)
    assert final["grad_calls"] == last["grad_calls"] == final["iters_done"] * doc["config"]["workers"]
    assert (final["bits_up"], final["bits_down"]) == (last["bits_up"], last["bits_down"]), (last, final)


# repeated: the signal lands where it happens to (mostly while a chunk runs, which is then abandoned to its thread;
# sometimes between chunks or while the next chunk's thread starts); on every path the history must end where the
# run stopped (issue #34: it ended at the last periodic row when the abandoned chunk ended during the write-up, or
# when the signal landed inside the chunk thread's start; tests/hostile/test_hostile_interrupts.py forces both)
@pytest.mark.parametrize("repeat", range(4))
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_the_last_history_row_is_where_an_interrupted_run_stopped(tmp_path, sig, code, repeat):
    out = tmp_path / "r.json"
    rc, err, _ = interrupt(["run", "--problem", "quadratic", "--iters", "100000000", "--out", out, "--quiet"], sig)
    assert rc == code, (rc, err)
    assert_stopped_where_its_history_ends(json.loads(out.read_text()))


def test_one_huge_iteration_does_not_block_ctrl_c(tmp_path):
    out = tmp_path / "r.json"
    rc, err, took = interrupt(["run", "--problem", "logistic", "--batch-size", "100000000", "--workers", "2",
                               "--iters", "5", "--out", out, "--quiet"])
    assert rc == 130 and took < ACT_WITHIN, (rc, took, err)
    assert_clean(err)
    doc = json.loads(out.read_text())
    assert doc["status"] == "interrupted"
    assert_stopped_where_its_history_ends(doc)  # the chunk abandoned: the row where it began


@pytest.mark.parametrize("args", [
    ["check-spb", "--problem", "quadratic", "--dim", "50", "--estimator", "monte-carlo", "--samples", "1000000000"],
    ["diversity", "--problem", "quadratic", "--dim", "50", "--estimator", "two-batch", "--pairs", "1000000000"],
    ["check-spb", "--problem", "quadratic", "--at", "run:1000000000000"],
], ids=["monte-carlo", "two-batch", "at-run-K"])
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_long_diagnostics_stop_within_a_second(args, sig, code):
    rc, err, took = interrupt([*args, "--quiet"], sig)
    assert rc == code and took < ACT_WITHIN, (rc, took, err)
    assert_clean(err)


def test_a_comparison_stops_entirely(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text('problem = "quadratic"\niters = 100000000\n[[compare]]\nlabel = "a"\nmethod = "signsgd"\n'
                      '[[compare]]\nlabel = "b"\nmethod = "sgd"\nlr = 0.001\n')
    out = tmp_path / "c.json"
    rc, err, took = interrupt(["run", "--config", config, "--out", out, "--quiet"])
    assert rc == 130 and took < ACT_WITHIN, (rc, took, err)
    doc = json.loads(out.read_text())
    assert [d["label"] for d in doc["runs"]] == ["a"] and doc["status"] == "interrupted"


def test_a_second_ctrl_c_still_writes_the_results(tmp_path):
    out = tmp_path / "r.json"
    rc, err, _ = interrupt(["run", "--problem", "quadratic", "--iters", "100000000", "--out", out, "--quiet"],
                           twice=True)
    assert rc == 130
    assert_clean(err)
    assert json.loads(out.read_text())["status"] == "interrupted"


# the signal lands once the command line's own module imports typer (its handler installed just before), then
# deeper in the start-up: the Python API, then Numba (imported by the run command)
@pytest.mark.parametrize("after_import", ["typer", "signsim.api", "numba"])
def test_ctrl_c_during_start_up_imports(after_import):
    rc, err, took = interrupt(["run", "--problem", "quadratic", "--iters", "100000000", "--quiet"],
                              after_import=after_import)
    assert rc == 130 and took < ACT_WITHIN, (rc, took, err)
    assert_clean(err)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_a_plugin_imports_is_an_interrupt_not_a_bad_plugin(tmp_path, sig, code):
    """The plugin's own import says it is under way (it writes the ready file), then takes its time: the signal
    ends the command as an interrupt, not as "cannot be imported"."""
    plugin = tmp_path / "slow_import.py"
    plugin.write_text("import os\nimport time\n\nopen(os.environ['SIGNSIM_READY_FILE'], 'w').close()\n"
                      "for _ in range(3000):\n    time.sleep(0.01)\n")
    rc, err, took = interrupt(["run", "--plugin", plugin, "--iters", "3", "--quiet"], sig=sig)
    assert rc == code, err
    assert "cannot be imported" not in err and took < ACT_WITHIN, (err, took)
    assert_clean(err)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_the_loop_compiles_acts_at_once(tmp_path, sig, code):
    """An empty kernel cache: the signal lands while the run's loop compiles (its compile notice is the signal of
    readiness). The chunk is abandoned at once; the interrupted run's end no longer calls a kernel the abandoned
    compile holds Numba's compiler lock for (an exit waited for the whole compile: 60 s or more for MARINA)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "SIGNSIM_WARM": "0"}
    p = subprocess.Popen([sys.executable, "-m", "signsim.cli", "run", "--method", "marina", "--workers", "8",
                          "--iters", "1000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True, env=env)
    seen = ""
    for line in p.stderr:
        seen += line
        if line.startswith("signsim: compiling"):
            break
    assert p.poll() is None, seen + p.communicate()[1]
    wait_for_cpu(p, 3.0)  # into the compile (tens of CPU seconds from an empty cache), whatever the machine's load
    if sig == signal.SIGINT:
        os.killpg(p.pid, sig)
    else:
        os.kill(p.pid, sig)
    err, took = exit_after_signal(p)
    assert p.returncode == code, seen + err
    assert took < ACT_WITHIN, (took, seen + err)
    assert_clean(seen + err)

