"""Issue #18: sweeps that survive their workers, signals, and damaged run files."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from ..conftest import ACT_WITHIN_CPU, exit_after_signal, wait_until_ready
from ..hostile.test_hostile import one_line

QUICK = 'problem = "quadratic"\niters = 200\n[grid]\nlr = [0.1, 0.01, 0.001, 0.0001]\n'
LONG = 'problem = "quadratic"\ndim = 50\niters = 3000000\n[grid]\nlr = [0.1, 0.01, 0.001, 0.0001]\n'


def write(tmp_path, text, name="s.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def wait_for(predicate, timeout):
    end = time.time() + timeout
    while time.time() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def children(pid):
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead too
        return open(f"/proc/{pid}/stat").read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def popen(*args, env=None):
    return subprocess.Popen([sys.executable, "-m", "signsim.cli", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, **(env or {})})


def popen_ready(tmp_path, *args):
    """``popen(ARGS)`` and the file that it creates once a run's compiled work is under way (SIGNSIM_READY_FILE)."""
    ready = tmp_path / "ready"
    return popen(*args, env={"SIGNSIM_READY_FILE": str(ready)}), ready


# --- plan time ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "words"), [
    ("[grid]\nlr = [0.1, -1]\n", ("[grid]", "'lr' -1", "> 0")),
    ('problem = "quadratic"\n[grid]\nbyzantine = [0, 9]\n', ("run 1", "byzantine = 9", "--byzantine")),
    ("seed = -1\n", ("'seed' -1",)),
    ("[grid]\nseed = [1, -2]\n", ("'seed' -2",)),
    ("batch-size = 2\nbatch_size = 3\n", ("'batch-size'", "'batch_size'")),
    ("[grid]\nbatch-size = [2]\nbatch_size = [3]\n", ("'batch_size'", "twice")),
    ("repeats = 100000000\n", ("repeats",)),
    ("repeats = 1000\n[grid]\nlr = [0.1, 0.2, 0.3]\nworkers = [" + ", ".join(map(str, range(1, 36))) + "]\n",
     ("expands to 105000 runs",)),
    ('noise = ""\n', ("'noise'", "empty")),
    ('problem = "logistic"\nsplit = "shared:"\n', ("--split", "shared:")),
    # checked against the problem as the sweep itself checks them (dry runs planned these without a word)
    ('problem = "quadratic"\ndim = 10\n[grid]\ncompressor = ["sign", "top-k:11"]\n', ("run 1", "top-k:11",
                                                                                      "dimension 10")),
    ('problem = "quadratic"\nvotes = "binomial"\n[grid]\nmethod = ["signsgd", "ssdm"]\n', ("run 1", "ssdm")),
])
def test_sweep_files_are_validated_completely_at_plan_time(cli, tmp_path, text, words):
    p = write(tmp_path, text)
    start = time.process_time()
    one_line(cli("sweep", p, "--dry-run", "--out", tmp_path / "o"), str(p) if "split" not in text else "--split",
             *words)
    assert time.process_time() - start < 20  # CPU seconds: planned, not run


def test_jobs_are_capped_at_the_cores_unless_forced(cli, tmp_path):
    p = write(tmp_path, QUICK)
    one_line(cli("sweep", p, "--jobs", "100000", "--out", tmp_path / "o"), "--jobs 100000", "--force")
    one_line(cli("sweep", p, "--executor", "dask", "--scheduler", "tcp://127.0.0.1", "--out", tmp_path / "o"),
             "--scheduler", "PORT")
    one_line(cli("sweep", p, "--executor", "dask", "--scheduler", "127.0.0.1:99999", "--out", tmp_path / "o"),
             "--scheduler")


# --- run files ------------------------------------------------------------------------------------------


def test_run_files_that_are_not_complete_documents_are_rerun_with_a_warning(cli, tmp_path):
    p = write(tmp_path, 'problem = "quadratic"\niters = 20\n[grid]\nlr = [0.1, 0.01, 0.001]\n')
    out = tmp_path / "o"
    assert cli("sweep", p, "--out", out, "--jobs", "1", "--quiet").code == 0
    files = sorted((out / "runs").glob("*.json"))
    files[0].write_text("[1, 2, 3]\n")
    files[1].write_text('{"status": "ok"}\n')
    r = cli("sweep", p, "--out", out, "--jobs", "1", "--json")
    assert r.code == 0, r.err
    assert r.json()["ran"] == 2 and r.json()["skipped"] == 1
    assert r.err.count("warning:") == 2 and "the run is done again" in r.err
    assert all(json.loads(f.read_text())["history"] for f in files)


def test_results_csv_has_every_option_and_every_tracked_value(cli, tmp_path):
    p = write(tmp_path, 'problem = "quadratic"\niters = 20\ntrack-spb = 10\ntrack-diversity = 10\n'
                        '[grid]\nlr = [0.1, 0.01]\n')
    out = tmp_path / "o"
    assert cli("sweep", p, "--out", out, "--jobs", "1", "--quiet").code == 0
    header = (out / "results.csv").read_text().splitlines()[0].split(",")
    for column in ("lr", "workers", "iters", "track_spb", "method", "momentum", "spb.rho_min", "spb.spb_fraction",
                   "diversity.B_S", "loss"):
        assert column in header, column


# --- dead workers ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_dead_pool_worker_fails_its_run_and_the_rest_finish(tmp_path):
    p = write(tmp_path, QUICK)
    r = subprocess.run([sys.executable, "-m", "signsim.cli", "sweep", str(p), "--out", str(tmp_path / "o"),
                        "--jobs", "2", "--json"], capture_output=True, text=True, timeout=300,
                       env={**os.environ, "SIGNSIM_CRASH_RUN": "1"})
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    doc = json.loads(r.stdout)
    assert doc["statuses"] == {"ok": 3, "failed": 1}
    runs = [json.loads(f.read_text()) for f in (tmp_path / "o" / "runs").glob("*.json")]
    (bad,) = [d for d in runs if d["status"] == "failed"]
    assert "SIGKILL" in bad["error"] and bad["sweep"]["index"] == 1
    assert (tmp_path / "o" / "results.csv").exists() and (tmp_path / "o" / "manifest.json").exists()


@pytest.mark.slow  # a real Dask scheduler and workers, one killed (5 s); .ci/run runs it
def test_a_dead_dask_worker_fails_its_run_and_the_rest_finish(tmp_path):
    pytest.importorskip("distributed")
    # the last run kills its worker; with allowed-failures 0 one death fails it. Dask counts every run the dying
    # worker held, and its scheduler may already have queued the run before it there: that one may fail too
    p = write(tmp_path, QUICK)
    r = subprocess.run([sys.executable, "-m", "signsim.cli", "sweep", str(p), "--out", str(tmp_path / "o"),
                        "--executor", "dask", "--scheduler", "local", "--jobs", "1", "--json"],
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "SIGNSIM_CRASH_RUN": "3",
                            "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "0"})
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    doc = json.loads(r.stdout)
    assert doc["statuses"].get("ok", 0) >= 2 and sum(doc["statuses"].values()) == 4, r.stderr
    runs = [json.loads(f.read_text()) for f in (tmp_path / "o" / "runs").glob("*.json")]
    bad = {d["sweep"]["index"]: d for d in runs if d["status"] == "failed"}
    assert 3 in bad and set(bad) <= {2, 3}, r.stderr
    assert all("KilledWorker" in d["error"] for d in bad.values())


def test_pool_workers_exit_when_the_sweep_process_dies(tmp_path):
    p = write(tmp_path, LONG)
    proc, ready = popen_ready(tmp_path, "sweep", p, "--out", tmp_path / "o", "--jobs", "2", "--quiet")
    wait_until_ready(proc, ready)  # a worker runs
    workers = children(proc.pid)
    assert len(workers) >= 2, workers
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    # (a hang guard: the workers look for their parent every 0.5 s)
    assert wait_for(lambda: not any(alive(w) for w in workers), 120), "pool workers outlived the sweep"


# --- signals --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("sig", "code", "twice"), [(signal.SIGINT, 130, True), (signal.SIGTERM, 143, False)])
def test_interrupting_a_sweep_keeps_results_and_tables(tmp_path, sig, code, twice):
    p = write(tmp_path, LONG)
    out = tmp_path / "o"
    proc, ready = popen_ready(tmp_path, "sweep", p, "--out", out, "--jobs", "2", "--quiet")
    wait_until_ready(proc, ready)  # a worker has loaded the compiled kernels and runs
    if sig == signal.SIGINT:
        os.killpg(proc.pid, sig)  # as a terminal does: the whole process group
        if twice:
            time.sleep(0.05)
            os.killpg(proc.pid, sig)
    else:
        os.kill(proc.pid, sig)  # SIGTERM to the sweep process only
    err, took = exit_after_signal(proc)
    assert proc.returncode == code, err
    assert took < 2 * ACT_WITHIN_CPU, took  # the sweep and its two workers' CPU seconds
    assert "Traceback" not in err
    # the pool is shut down before the command exits: no "leaked semaphore objects" from the resource tracker
    assert "resource_tracker" not in err and "leaked" not in err, err
    assert err.strip().splitlines() == ["signsim: interrupted" if code == 130 else "signsim: terminated"], err
    assert (out / "results.csv").exists() and (out / "manifest.json").exists()
    manifest = json.loads((out / "manifest.json").read_text())
    assert {r["status"] for r in manifest["runs"]} <= {"interrupted", "missing", "ok"}


@pytest.mark.slow  # a real Dask scheduler and workers, a real SIGINT (5 s); .ci/run runs it
def test_interrupting_a_dask_sweep_stores_the_runs_in_flight_as_interrupted(tmp_path):
    pytest.importorskip("distributed")
    p = write(tmp_path, LONG)
    out = tmp_path / "o"
    proc, ready = popen_ready(tmp_path, "sweep", p, "--out", out, "--executor", "dask", "--scheduler", "local",
                              "--jobs", "2", "--quiet")
    wait_until_ready(proc, ready)  # a run is in flight on a Dask worker
    os.killpg(proc.pid, signal.SIGINT)
    err, took = exit_after_signal(proc)
    assert proc.returncode == 130, err
    assert took < 2 * ACT_WITHIN_CPU and "Traceback" not in err, (took, err)
    statuses = [r["status"] for r in json.loads((out / "manifest.json").read_text())["runs"]]
    assert "interrupted" in statuses and set(statuses) <= {"interrupted", "missing", "ok"}
    assert (out / "results.csv").exists()


# --- issue 34: a dry run of 100,000 runs is fast ------------------------------------------------------------


def test_a_dry_run_resolves_and_checks_each_grid_point_once(cli, tmp_path, monkeypatch):
    """``repeats = 100000`` took 78 s (each repeat resolved twice, deep-copied and checked, and a table of every
    run laid out): a grid point's repeats differ in their seed only, so each point is resolved and checked once,
    and the table lists the first runs (the title counts them all)."""
    from signsim.engine import build
    from signsim.interface import config
    from signsim.render import tables
    from signsim.sweep import spec as spec_module

    calls = {"resolve": 0, "prepare": 0}
    resolve, prepare = config.resolve, build.prepare

    def counted(name, f):
        def wrapper(*a, **k):
            calls[name] += 1
            return f(*a, **k)
        return wrapper

    monkeypatch.setattr(config, "resolve", counted("resolve", resolve))
    monkeypatch.setattr(build, "prepare", counted("prepare", prepare))
    monkeypatch.setattr(tables, "PLAN_ROWS", 5)
    p = write(tmp_path, 'problem = "quadratic"\niters = 3\nrepeats = 300\n[grid]\nlr = [0.1, 0.2]\n')
    r = cli("sweep", p, "--dry-run", "--out", tmp_path / "o")
    assert r.code == 0, r.err
    assert calls["resolve"] <= 2 * 2 + 2 and calls["prepare"] <= 2, calls  # per grid point: expand, check_runs
    assert "600 runs (600 to run)" in r.err and "the first 5 of 600 runs" in r.err, r.err
    runs = spec_module.expand(spec_module.load(p))
    assert len({t.run_id for t in runs}) == 600 and len({t.config["seed"] for t in runs}) == 300


WORKER_SIGNALS = """
import os, signal, sys, tempfile
from signsim.interface import interrupts
from signsim.sweep.worker import execute

interrupts.worker_init(os.getppid())
marker = tempfile.mkdtemp()
os.kill(os.getpid(), signal.SIGINT)  # while the worker is idle or starting up: recorded, not raised
print("alive", interrupts.received() == signal.SIGINT)
print("next task", execute({"index": 0, "marker_dir": marker, "config": {}}, None))
interrupts._state["received"] = None

def runner(cfg):
    os.kill(os.getpid(), signal.SIGINT)  # inside a run: raised, for the run to keep its partial results
    return "not interrupted"

try:
    execute({"index": 1, "marker_dir": marker, "config": {"problem": "quadratic"}}, runner)
except KeyboardInterrupt:
    print("run interrupted")
"""


def test_a_pool_worker_interrupted_outside_a_run_neither_dies_nor_starts_one():
    """A SIGINT that reaches a sweep's pool worker while it starts up (imports, unpickles its task) or waits for
    a task is recorded; the worker then returns its next task unstarted. Before, it raised wherever it was and the
    worker died printing a traceback ("Process SpawnProcess-1: ... KeyboardInterrupt")."""
    p = subprocess.run([sys.executable, "-c", WORKER_SIGNALS], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert p.stdout.split("\n")[:3] == ["alive True", "next task None", "run interrupted"], p.stdout + p.stderr


class _Pool:
    _processes: dict = {}

    def shutdown(self, wait=True, cancel_futures=False):
        pass


def test_the_drain_waits_only_for_runs_in_progress(tmp_path):
    """After Ctrl-C the sweep collects the partial results of the runs in progress (their marker files exist) and
    does not wait for a task whose run has not begun (its worker still starting up): that one has nothing to
    report and stays missing. Before, the drain waited for it up to DRAIN_SECONDS and called it interrupted."""
    from concurrent.futures import Future

    from signsim.sweep.executors import LocalExecutor

    ex = LocalExecutor(jobs=1)
    ex.pool, ex.marker_dir = _Pool(), str(tmp_path)
    begun, unstarted, reported = Future(), Future(), Future()
    begun.set_running_or_notify_cancel()
    unstarted.set_running_or_notify_cancel()  # taken by a worker still importing: it never completes here
    ex.futures = {begun: 0, unstarted: 1, reported: 2}
    ex.tasks = {i: {"index": i, "config": {}} for i in range(3)}
    ex.reported = {reported}
    (tmp_path / "0").write_text(str(os.getpid()))
    threading.Timer(0.2, begun.set_result, [{"status": "interrupted", "history": [1]}]).start()
    out = dict(ex.drain())
    assert out == {0: {"status": "interrupted", "history": [1]}}
