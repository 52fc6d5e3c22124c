"""Shared fixtures, the hypothesis profiles, the suite's kernel warm-up and its count of compiled kernels.

Keeping the fast suite fast (the README's test command: <= 6 min on 2 cores from an empty kernel cache). Most of
its time is Numba compiling, not running, so its kernels compile at LLVM's optimization level 1 (``NUMBA_OPT``,
below; in .ci/run, the slow step too, and the oldest admitted Numba's checks at the default, 3). Every composition
of built-in stages on the analytic problems and the GLMs
runs in its family's one loop (``SIGNSIM_LOOP=analytic,glm``, set below: each compiled once per dtype and
threading), so a grid over stages on them costs run time only; on the MLP and your own PyTorch model, whose one loops
cost more to compile than the few compositions the suite runs there (your model's: 75 CPU-s against 18 for the first
composition and about 14 for each further one, 4 December 2026), each composition compiles its own loop, as does a
plugin's. So, in a new test file:
- reuse the problems and dtypes other tests already use (a quadratic, float64) unless the test is about that
  problem or dtype;
- the whole suite runs with one Numba thread per test process (``ONE_THREAD``), so every run takes the serial loop
  and no threaded loop compiles; a test about threads (their count, the threaded loop) is marked ``slow``, where
  Numba has its default thread count;
- end-to-end runs of more than a few seconds, fresh-cache compiles and long hypothesis searches are marked
  ``slow`` too. ``.ci/run`` runs them (``python -m pytest -m slow``), so nothing marked slow goes untested;
- never a fixed sleep: wait for a readiness signal (``wait_until_ready``, a line on stderr).
The summary line "kernels compiled (N cache entries), by the test file that needed them first" shows what a new
file costs.
"""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

# the compositions of built-in stages on the analytic problems and the GLMs run in their families' one loops
# (docs/reference.md, SIGNSIM_LOOP): the suite compiles each once per dtype instead of a loop per composition; the
# MLP's few compositions compile their own loops (measured from an empty cache, 4 December 2026, 18:33-18:43, one
# Numba thread per test process: the README's test command took 4 min 26 s so, 4 min 54 s with the MLP in its one
# loop too (18:22), 5 min 30 s with the analytic problems' only); tests that compare the one loop with a
# composition's own set the variable themselves
os.environ.setdefault("SIGNSIM_LOOP", "analytic,glm")
# the suite's kernels compile at LLVM's optimization level 1 (``NUMBA_OPT``; Numba's default is 3), set before
# signsim is imported: its kernel cache folder's name then carries the level (``signsim._kernel_cache_dir``), so
# these kernels never mix with a user's. Most of the suite's time is compiling, and level 1 cut the README's test
# command from an empty cache from 7 min 9 s (6 December 2026, 23:46) to 6 min 11 s (7 December, 00:26; warm-up
# 174 -> 148 s, tests 254 -> 222 s; 2-core VM), every test passing; at level 0 the kernels ran too slowly to gain
# anything. Runs at levels 1 and 3 gave the same histories bit for bit (signum on rosenbrock, ssdm on logistic); only
# the GLMs' margins kernel (glm._margin, behind their losses, gradients and oracle) lets LLVM reassociate its sums,
# which a level may change in the last bits, and their tests allow for rounding. .ci/run's check of the oldest
# admitted Numba (the draws' bit-identity, the worker path's inlining) runs at the default level, as users do. Not
# when you set NUMBA_OPT (yours is used) or NUMBA_CACHE_DIR (the folder is then
# yours, and level-1 kernels there would be loaded by your later runs). SIGNSIM_SUITE_OPT says the suite set it
# (pytest-xdist's test processes inherit all three): ``SUITE_OPT`` below
if "SIGNSIM_SUITE_OPT" not in os.environ and "NUMBA_OPT" not in os.environ and "NUMBA_CACHE_DIR" not in os.environ:
    os.environ["NUMBA_OPT"] = os.environ["SIGNSIM_SUITE_OPT"] = "1"
# no family's one loop compiles in the background after a run (signsim.engine.warm): tests/engine/test_warm.py
# turns it on
os.environ.setdefault("SIGNSIM_WARM", "0")
# the tests that send SIGINT need its default disposition: a suite started in the background of a script (where
# SIGINT is ignored, and stays ignored in every process it starts) gets Python's handler back, so that its test
# processes and the signsim commands they start act on SIGINT as they would at a terminal
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

from signsim.cli import main
from signsim.engine.build import build
from signsim.engine.driver import simulate
from signsim.interface import config, memory

# the test processes (and the warm-up's, WARM below) compile kernels in-process, as a notebook does: they take the
# garbage-collection thresholds of signsim's own compiling processes (signsim/interface/memory.py), where Numba's
# compiler spent a third as much time in the collector (1.3 s of a first run against 3.9)
memory.collect_less()

#: the optimization level the suite set (above), None when you set NUMBA_OPT or NUMBA_CACHE_DIR
SUITE_OPT = os.environ.get("SIGNSIM_SUITE_OPT")

# Hypothesis profiles: "quick" (default, CI) and "long" (HYPOTHESIS_PROFILE=long python -m pytest ...)
settings.register_profile("quick", max_examples=40, deadline=None,
                          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
settings.register_profile("long", max_examples=1500, deadline=None,
                          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "quick"))


# --- kernels compiled per test file ----------------------------------------------------------------------------
# Every test process and every signsim it starts share one kernel cache (NUMBA_CACHE_DIR, set by
# ``import signsim``), so a kernel compiles once per suite, in the first test that needs it. The summary counts
# the cache entries (.nbc files: one per compiled signature) each test file added, setup and teardown included;
# with pytest-xdist a kernel compiled by the other worker meanwhile may be counted here too. Tests that set
# their own NUMBA_CACHE_DIR (fresh-cache checks) are not counted.
COMPILED: dict[str, int] = {}


def _cache_entries() -> int:
    root = Path(os.environ["NUMBA_CACHE_DIR"])
    return sum(1 for _ in root.glob("*/*.nbc")) if root.is_dir() else 0


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item.stash[_ENTRIES] = _cache_entries()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item):
    yield
    before = item.stash.get(_ENTRIES, None)
    if before is not None:
        item.user_properties.append(("kernels_compiled", _cache_entries() - before))


def pytest_runtest_logreport(report):
    if report.when == "teardown":
        added = dict(report.user_properties).get("kernels_compiled", 0)
        if added > 0:
            name = report.nodeid.split("::")[0]
            COMPILED[name] = COMPILED.get(name, 0) + added


def pytest_terminal_summary(terminalreporter):
    if COMPILED and not hasattr(terminalreporter.config, "workerinput"):
        ranked = sorted(COMPILED.items(), key=lambda kv: -kv[1])
        terminalreporter.write_line(f"kernels compiled ({sum(COMPILED.values())} cache entries), by the test file "
                                    "that needed them first: " + ", ".join(f"{Path(f).name} {n}" for f, n in ranked))


_ENTRIES = pytest.StashKey[int]()

# --- what the fast suite leaves to the slow step ----------------------------------------------------------------
#: files whose every test runs in the slow step (``.ci/run``: ``python -m pytest -m slow``): real signals sent to
#: commands that compile on their own caches, thread-count reproducibility (the threaded loops), float32 (its own
#: loops), ``signsim compile`` itself, the fuzzing of every option of every command and a real Dask scheduler
SLOW_FILES = frozenset({"test_hostile_signals.py", "test_hostile_interrupts.py", "test_dtype.py", "test_compile.py",
                        "test_reproducibility.py", "test_hostile_fuzz.py", "test_dask_timeout.py"})
#: engine-against-replay cases under rounds: the fast suite keeps each setup's case with both local steps and
#: sampling (H3-S3); the cases with only one of them run in the slow step
ROUNDS_FAST = "-H3-S3]"


def pytest_collection_modifyitems(config, items):
    for item in items:
        name = Path(str(item.fspath)).name
        if name in SLOW_FILES or (name == "test_rounds.py" and "numpy_replay_under_rounds[" in item.nodeid
                                  and not item.nodeid.endswith(ROUNDS_FAST)):
            item.add_marker(pytest.mark.slow)


# --- one warm-up for the whole suite under pytest-xdist -----------------------------------------------------------
# With -n N the workers start together on an empty cache and would each compile the kernels of the first tests
# they run, the same ones at the same time. Before the workers start, ``signsim compile``'s warm-up commands
# (every kernel) run instead in N processes that take the next command from one queue (a file, under a lock) as
# each finishes, so that the cores stay busy whatever each command costs. A family's first command (its primer)
# compiles the kernels its other commands share (the problem's oracle, evaluation and the default loop: 17-65 CPU-s),
# so it holds the family's lock exclusively and the family's other commands hold it shared (the GLMs' primer also
# holds the analytic problems' lock shared: their one loops share the stage kernels): a process takes the first
# command whose locks it can have, and waits on them (a primer's end) only when no other command is left. The
# tests then load the kernels. Only for the whole suite (no file, -k or -m given).
WARM = """
import fcntl
import sys
from pathlib import Path
from signsim.cli import main
from signsim.interface import memory

memory.collect_less()

def locks(queue, family, primer, after, wait):
    \"\"\"The command's locks: its family's (exclusive for a primer, shared otherwise) and, shared, those of the
    families it comes after (their primers ended); without ``wait``, None when one is held.\"\"\"
    held = []
    for name, kind in [(family, fcntl.LOCK_EX if primer == "1" else fcntl.LOCK_SH)] + [
            (a, fcntl.LOCK_SH) for a in after.split(",") if a]:
        lock = open(Path(queue).with_name(name), "a")
        try:
            fcntl.flock(lock, kind | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            lock.close()
            for h in held:
                h.close()
            return None
        held.append(lock)
    return held


def take(queue):
    \"\"\"The next command, with its locks held (``locks``).\"\"\"
    with open(queue, "r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        lines = f.read().splitlines()
        if not lines:
            return None, None
        chosen = held = None
        # a family's other commands wait for its primer to start (a primer waiting for another's is still queued)
        queued = {line.split("\\t")[0] for line in lines if line.split("\\t")[1] == "1"}
        for i, line in enumerate(lines):
            family, primer, after, command = line.split("\\t")
            if primer != "1" and family in queued:
                continue
            held = locks(queue, family, primer, after, wait=False)
            if held is not None:
                chosen = i
                break
        if chosen is None:  # every command left waits for a primer: the first one (a primer while any is queued)
            chosen, (family, primer, after, command) = 0, lines[0].split("\\t")
        f.seek(0)
        f.truncate()
        f.write("\\n".join(lines[:chosen] + lines[chosen + 1:]))
    if held is None:
        held = locks(queue, family, primer, after, wait=True)
    return command, held

import os
import time

done = os.fdopen(int(sys.argv[2]), "w", buffering=1)  # a line per command to the session, as each ends
while True:
    line, held = take(sys.argv[1])
    if line is None:
        break
    start = time.monotonic()
    try:
        if line.startswith("@server "):  # every built-in server kernel of a kind (the one loop calls them by address)
            from signsim.engine.plan import compile_server_kernels

            compile_server_kernels("float64", line.split()[1])
        else:
            main(line.split())
    except SystemExit as e:
        if e.code not in (0, 1, None):
            print(f"warm-up: signsim {line} exited {e.code}", file=sys.stderr)
    finally:
        for lock in held:
            lock.close()
        done.write(f"{time.monotonic() - start:.1f}\\t{line}\\n")
"""
#: warm-up commands whose kernels no fast test loads (seen from the cache files' access times after a suite):
#: the two-batch estimator on the MLP and a round of local steps' Monte Carlo on the data problems, 27 CPU-s; the
#: asynchronous loops of the data problems (the fast tests' asynchronous runs are all on the quadratic)
UNUSED = frozenset({"diversity --problem mlp --pairs 8 --estimator two-batch --quiet",
                    "run --problem logistic --workers 4 --clients-per-round 2 --async buffer:2 --iters 2 --quiet",
                    "run --problem mlp --workers 4 --clients-per-round 2 --async buffer:2 --iters 2 --quiet",
                    "check-spb --problem logistic --samples 64 --local-steps 2 --quiet",
                    "check-spb --problem mlp --samples 64 --local-steps 2 --quiet"})


def redundant(args: list[str]) -> bool:
    """A warm-up run of one method alias or one noise model on the quadratic: in the family's one loop (every
    composition of built-in stages, every noise model: ``SIGNSIM_LOOP``) it loads what its family's primer
    compiled, so it would cost the suite a process start (about 3 CPU-s) and compile nothing."""
    from signsim.engine.compose import mode  # (the redundant runs are all of analytic problems)

    if mode("analytic") != "builtin" or args[0] != "run" or "--dim 3 " not in " ".join(args) + " ":
        return False
    return "--noise" in args or ("--method" in args and "--votes" not in args)


def _warm_up_queue() -> list[str]:
    """``signsim compile``'s float64 warm-up commands (float32 loops are for test_dtype.py, in the slow step) as
    queue lines ``family<TAB>primer<TAB>after<TAB>command`` (``after``: the families whose primers must end
    first): each family's primer first (the analytic problems' first, the others the longest first), then the other
    commands with the families interleaved, one of each in turn. Without its threaded runs: the whole suite runs
    with one Numba thread per process (``ONE_THREAD``), where every run takes the serial loop."""
    from itertools import zip_longest

    from signsim.commands.compile import group, threaded, warm_commands

    families: dict[str, list[str]] = {}
    for args in warm_commands():
        _, family, dtype = group(args)
        if redundant(args):
            continue
        if dtype == "float64" and " ".join(args) not in UNUSED and not threaded(args):
            families.setdefault(family, []).append(" ".join(args))
    # the GLMs' one loop calls the stage kernels the analytic problems' one loop compiles (their names carry no
    # family): its primer starts once the analytic one has ended, instead of compiling them a second time beside it
    after = {"glm": "analytic"}
    order = ["analytic", *[f for f in reversed(families) if f != "analytic"]]
    primers = [f"{family}\t1\t{after.get(family, '')}\t{families[family][0]}" for family in order if family in families]
    others = [[f"{family}\t0\t\t{line}" for line in lines[1:]] for family, lines in families.items()]
    # every built-in stage's server kernels (the one loop calls the composition's by address: signsim.engine.plan),
    # a command per kind, as signsim compile does after its runs
    from signsim.engine.plan import SERVER_KINDS

    others.append([f"server\t0\t\t@server {kind}" for kind in SERVER_KINDS])
    rest = [line for turn in zip_longest(*others) for line in turn if line is not None]
    return primers + rest


#: NUMBA_NUM_THREADS of the whole suite's test processes (``pytest_sessionstart``)
ONE_THREAD = "1"


def pytest_sessionstart(session):
    config = session.config
    workers = config.getoption("numprocesses", None) if config.pluginmanager.has_plugin("xdist") else None
    if workers in ("auto", "logical"):
        workers = os.cpu_count() or 1
    whole_suite = (config.args_source == pytest.Config.ArgsSource.TESTPATHS and not config.option.keyword
                   and not config.option.markexpr.replace("not slow", "").strip())
    if hasattr(config, "workerinput") or not isinstance(workers, int) or workers < 2 or not whole_suite:
        return
    import tempfile

    # one Numba thread in each test process and each signsim it starts (the warm-up's included, so set before it):
    # N test processes on N cores use them all without oversubscribing them, and every run takes the serial loop, so
    # the suite compiles no family's threaded loop (results are the same whatever the thread count: the threaded
    # loops are tested against the serial ones, with 2 threads, in the slow step, tests/engine/test_reproducibility.py)
    os.environ["NUMBA_NUM_THREADS"] = ONE_THREAD
    start = time.monotonic()
    commands = _warm_up_queue()
    report = config.pluginmanager.get_plugin("terminalreporter")
    say = report.write_line if report is not None else (lambda line: None)
    groups: dict[str, list[str]] = {}  # family -> its commands not done yet
    for line in commands:
        groups.setdefault(line.split("\t")[0], []).append(line.split("\t")[3])
    say(f"warming the kernel cache: {len(commands)} warm-up commands of {len(groups)} families of problems in "
        f"{workers} processes (a line per family as it is done)")
    with tempfile.TemporaryFile("w+") as errors, tempfile.TemporaryDirectory() as tmp:
        queue = Path(tmp) / "queue"
        queue.write_text("\n".join(commands))
        # the warm-up keeps its cores busy on its own, and its loops compile their callees themselves (so
        # test_split_compile.py checks the helper's signatures against the loops')
        env = {**os.environ, "SIGNSIM_SPLIT_COMPILE": "0"}
        read, write = os.pipe()
        procs = [subprocess.Popen([sys.executable, "-c", WARM, str(queue), str(write)], stdout=subprocess.DEVNULL,
                                  stderr=errors, env=env, pass_fds=(write,)) for _ in range(workers)]
        os.close(write)
        spent: dict[str, float] = {}
        with os.fdopen(read) as finished:  # ends when every warm-up process has closed its end
            for done in finished:
                seconds, line = done.rstrip("\n").split("\t", 1)
                family = next((f for f, left in groups.items() if line in left), None)
                if family is None:
                    continue
                groups[family].remove(line)
                spent[family] = spent.get(family, 0.0) + float(seconds)
                if not groups[family]:
                    say(f"warm-up: the {family} kernels are compiled ({spent[family]:.0f} s of commands, "
                        f"{time.monotonic() - start:.0f} s in)")
        codes = [p.wait() for p in procs]
        errors.seek(0)
        problems = [line for line in errors.read().splitlines() if line.startswith(("warm-up:", "Traceback"))]
    say(f"kernel cache warmed: {len(commands)} warm-up commands in {workers} processes, "
        f"{time.monotonic() - start:.0f} s")
    for line in problems + [f"warm-up process exited {c}" for c in codes if c != 0]:
        say(line)


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


@pytest.fixture
def cli(capsys):
    """Run ``signsim ARGS`` in this process; return exit code, stdout, stderr."""

    def call(*args: str) -> CliResult:
        capsys.readouterr()
        try:
            main([str(a) for a in args])
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return call


#: run_subprocess's guard against a hang (not a time limit): a first threaded compile takes 60-70 CPU-s, which a
#: loaded 2-core machine stretched past 120 s (two thread tests in a rehearsal of .ci/run, 6 December 2026)
RUN_HANG_SECONDS = 600


def run_subprocess(*args: str, env: dict | None = None, timeout: float = RUN_HANG_SECONDS) -> CliResult:
    """Run ``signsim ARGS`` in a fresh interpreter (for thread counts, signals and import checks)."""
    full_env = {**os.environ, **(env or {})}
    p = subprocess.run([sys.executable, "-m", "signsim.cli", *map(str, args)], capture_output=True, text=True,
                       env=full_env, timeout=timeout)
    return CliResult(p.returncode, p.stdout, p.stderr)


def make_engine(**options):
    """Resolve options as the CLI would and build the engine, problem and settings."""
    b = build(config.resolve(options))
    return b.engine, b.problem, b.model, b.params, b.settings, b.cfg


def run_engine(**options):
    engine, *_ = make_engine(**options)
    return simulate(engine)


def binomial_tolerance(p: float, n: int, z: float = 5.0) -> float:
    """z standard errors of a proportion estimated from n independent trials."""
    return z * np.sqrt(max(p * (1 - p), 1e-12) / n)


def wait_until_ready(proc: subprocess.Popen, ready: Path, timeout: float = 600) -> None:
    """Wait until a signsim process started with ``SIGNSIM_READY_FILE=ready`` says its compiled work is under way
    (it creates the file: docs/reference.md), rather than sleeping for a guessed time; fail, with its stderr, if
    it ends first."""
    end = time.monotonic() + timeout
    while not ready.exists():
        if proc.poll() is not None:
            _, err = proc.communicate()
            pytest.fail(f"signsim exited ({proc.returncode}) before its work was under way: {err}")
        if time.monotonic() > end:
            proc.kill()
            pytest.fail(f"signsim did not report its work under way within {timeout:g} s")
        time.sleep(0.02)


# --- signals: "acts within about a second", in the signalled process's own CPU time ------------------------------

#: CPU seconds a signalled signsim process (its threads and its children) may use from the signal to its exit:
#: "acts within about a second" measured in the process's own CPU time, which a machine loaded by other work does
#: not stretch as it stretches wall time (issue 50: no test depends on wall time)
ACT_WITHIN_CPU = 2.0
#: wall seconds after a signal past which a process counts as hung: a guard far above any loaded machine's delay
SIGNAL_HANG_SECONDS = 120.0


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _tree(pid: int) -> list[int]:
    """``pid`` and its living descendants."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                parents.setdefault(int(_stat(int(entry.name))[1]), []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += parents.get(p, [])
    return out


def cpu_by_process(pid: int) -> dict[int, float]:
    """Each process's own CPU seconds so far (utime + stime of /proc/PID/stat: its threads, not its children),
    for ``pid`` and each of its living descendants (a zombie's too: its final count)."""
    out = {}
    for p in _tree(pid):
        with contextlib.suppress(OSError, IndexError):
            out[p] = sum(int(v) for v in _stat(p)[11:13]) / os.sysconf("SC_CLK_TCK")
    return out


def cpu_of(pid: int) -> float:
    """CPU seconds process ``pid`` and its living descendants have used so far (each its own)."""
    return sum(cpu_by_process(pid).values())


def wait_for_cpu(proc: subprocess.Popen, seconds: float, timeout: float = 600) -> None:
    """Wait until ``proc`` has used ``seconds`` more CPU seconds (e.g. to land a signal well inside a compile)
    rather than sleeping for a guessed wall time; fail if it ends first."""
    start, end = cpu_of(proc.pid), time.monotonic() + timeout
    while cpu_of(proc.pid) - start < seconds:
        if proc.poll() is not None or time.monotonic() > end:
            pytest.fail(f"signsim ended or stalled before using {seconds:g} CPU seconds")
        time.sleep(0.02)


def exit_after_signal(proc: subprocess.Popen, timeout: float = SIGNAL_HANG_SECONDS, pump=None) -> tuple[str, float]:
    """Wait for ``proc`` (text pipes, or ``pump()`` reading its terminal) to exit after a signal just sent; return
    (its stderr, the CPU seconds it and its descendants used from now to its exit: each process's own count, polled
    every 20 ms until it ends, less its count now). A process still running ``timeout`` wall seconds later is hung:
    its session is killed and the test fails."""
    import threading

    box: dict[str, str] = {}
    readers = [threading.Thread(target=lambda k=k, f=f: box.__setitem__(k, f.read()), daemon=True)
               for k, f in (("out", proc.stdout), ("err", proc.stderr)) if f is not None]
    for t in readers:
        t.start()
    start = cpu_by_process(proc.pid)
    last = dict(start)
    end = time.monotonic() + timeout
    while True:
        last.update(cpu_by_process(proc.pid))  # (a zombie's final count, before it is reaped just below)
        pid, status, _ = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > end:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, 9)
            proc.kill()
            proc.wait()
            pytest.fail(f"still running {timeout:g} s after the signal")
        if pump is not None:
            pump()
        time.sleep(0.02)
    proc.returncode = os.waitstatus_to_exitcode(status)
    for t in readers:
        t.join(10)  # (a descendant left running may hold the pipes: its output is not waited for)
    return box.get("err", ""), sum(last[p] - start.get(p, 0.0) for p in last)
