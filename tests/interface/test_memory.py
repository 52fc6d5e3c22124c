"""The signsim command's memory settings (``signsim.interface.memory``), each in a process of its own: what the
command sets, what a program importing signsim keeps, and that freed memory is then reused (page faults counted)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

import pytest

from signsim.interface import memory

#: a 200 MB array filled, freed and filled again: the second fill's minor page faults (0 when the memory is reused)
REFILL = """
import resource, numpy as np
from signsim.interface import memory
{setup}
a = np.empty(25_000_000); a.fill(1.0); del a
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
a = np.empty(25_000_000); a.fill(2.0)
print(memory.keep_freed_memory(), resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _python(code: str, env: dict | None = None) -> str:
    """``code``'s output in a fresh interpreter, without glibc's malloc settings of the environment."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env={k: v for k, v in {**base, **(env or {})}.items() if v is not None})
    return r.stdout.strip()


def test_the_command_turns_off_numpys_huge_page_advice_unless_the_environment_sets_it():
    """Set before NumPy is imported (NumPy reads it then), in the command's process only."""
    as_command = ("import sys; sys.argv = ['/usr/bin/signsim']; import signsim.cli, os; "
                  "print(os.environ.get('{}'), 'numpy' in sys.modules)")
    imported = "import signsim.cli, os; print(os.environ.get('{}'))"
    from signsim.interface.memory import HUGEPAGE_ENV

    # (and NumPy not imported yet: the commands import it)
    assert _python(as_command.format(HUGEPAGE_ENV), {HUGEPAGE_ENV: None}) == "0 False"
    assert _python(as_command.format(HUGEPAGE_ENV), {HUGEPAGE_ENV: "1"}) == "1 False"  # the user's choice stands
    assert _python(imported.format(HUGEPAGE_ENV), {HUGEPAGE_ENV: None}) == "None"  # a program importing signsim


@pytest.mark.skipif(not memory._glibc(), reason="glibc's mallopt")
def test_freed_memory_is_reused_in_the_command_only():
    """Oracle: the kernel's count of minor page faults. Refilling a freed 200 MB array faults in its pages anew by
    default (glibc unmaps it), almost none once ``keep_freed_memory`` applies; outside the command it changes
    nothing."""
    pages, small = 25_000_000 * 8 // 4096, {"NUMPY_MADVISE_HUGEPAGE": "0"}  # (pages of 4 KiB: 48,828 faults)
    kept, faults = _python(REFILL.format(setup="memory.command_process(); memory.keep_freed_memory()"), small).split()
    assert kept == "True" and int(faults) < pages // 100, faults
    kept, faults = _python(REFILL.format(setup=""), small).split()
    assert kept == "False" and int(faults) > pages // 2, faults


#: a command (or a program) whose exit prints the collector's thresholds and whether objects were frozen
AT_EXIT = ("import atexit, gc, sys; sys.argv = ['{argv0}', 'list']; "
           "atexit.register(lambda: print(gc.get_threshold(), gc.get_freeze_count() > 0, file=sys.stderr)); "
           "from signsim.cli import main; main()")


def test_the_command_collects_garbage_less_often_and_freezes_what_is_alive_when_its_work_is_done():
    """The command's process raises the collector's thresholds (``GC_THRESHOLDS``) and, its output written, freezes
    what is alive (``memory.leaving``); a program calling ``cli.main`` keeps its collector as it was."""
    pythons = _python("import gc; print(gc.get_threshold())")  # (this process's are the suite's: conftest.py)

    def at_exit(argv0: str) -> str:
        r = subprocess.run([sys.executable, "-c", AT_EXIT.format(argv0=argv0)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert "ssdm" in r.stdout  # the command ran
        return r.stderr.strip().splitlines()[-1]

    assert at_exit("/usr/bin/signsim") == f"{memory.GC_THRESHOLDS} True"
    assert at_exit("/home/me/analysis.py") == f"{pythons} False"
    assert memory.GC_THRESHOLDS[0] > ast.literal_eval(pythons)[0]


@pytest.fixture
def pythons_thresholds():
    """This process at Python's own thresholds for the test (the suite's are signsim's: conftest.py)."""
    import gc

    suite = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield (700, 10, 10)
    gc.set_threshold(*suite)


def test_signsims_work_in_a_program_collects_less_and_gives_the_programs_thresholds_back(pythons_thresholds):
    """``collecting_less`` (around every ``api.execute``): signsim's thresholds while a call lasts, elementwise at
    least the program's; the program's back when the last call in progress ends, even from other threads; a change
    made during the call is kept."""
    import gc
    import threading

    with memory.collecting_less():
        assert gc.get_threshold() == memory.GC_THRESHOLDS
        with memory.collecting_less():  # nested (a diagnostic's runs): one call
            pass
        assert gc.get_threshold() == memory.GC_THRESHOLDS
    assert gc.get_threshold() == pythons_thresholds

    # two threads: the first to end leaves the second's thresholds in place
    entered, release_first, release_second = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def call(name, release):
        with memory.collecting_less():
            entered.set()
            release.wait()
        seen[name] = gc.get_threshold()

    first = threading.Thread(target=call, args=("first", release_first))
    first.start()
    entered.wait()
    entered.clear()
    second = threading.Thread(target=call, args=("second", release_second))
    second.start()
    entered.wait()
    release_first.set()
    first.join()
    assert seen["first"] == memory.GC_THRESHOLDS
    release_second.set()
    second.join()
    assert seen["second"] == pythons_thresholds == gc.get_threshold()

    gc.set_threshold(10**6, 5, 5)  # a program's higher threshold stays, per generation
    with memory.collecting_less():
        assert gc.get_threshold() == (10**6, *memory.GC_THRESHOLDS[1:])
    assert gc.get_threshold() == (10**6, 5, 5)
    with memory.collecting_less():
        gc.set_threshold(1000, 10, 10)  # changed during the call: the program's (or a model file's) change stays
    assert gc.get_threshold() == (1000, 10, 10)


def test_a_run_from_python_collects_less_while_it_lasts(pythons_thresholds):
    import gc

    import signsim

    during = []
    signsim.run(problem="quadratic", dim=3, workers=2, iters=3, progress=lambda k, K: during.append(gc.get_threshold()))
    assert during and set(during) == {memory.GC_THRESHOLDS}
    assert gc.get_threshold() == pythons_thresholds


def test_the_docs_state_the_thresholds_the_code_sets():
    """docs/api.md and docs/reference.md give ``GC_THRESHOLDS`` in words; they must say what the code sets."""
    from pathlib import Path

    docs = Path(__file__).resolve().parents[2] / "docs"
    a, b, c = (f"{t:,}" for t in memory.GC_THRESHOLDS)
    assert f"at least {a}, {b} and {c}" in " ".join((docs / "api.md").read_text(encoding="utf-8").split())
    assert f"thresholds {a}, {b}, {c} instead of" in (docs / "reference.md").read_text(encoding="utf-8")
