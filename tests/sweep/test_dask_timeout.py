"""Issue 25 item 4: a Dask sweep whose scheduler has no worker, or loses every one, stops after --dask-timeout
with one line naming the scheduler, keeps what finished, and the manifest names the workers that ran."""

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading

import pytest

from ..cli.test_cli_help import _flat, _help
from ..hostile.test_hostile_sweeps import wait_for, write

pytest.importorskip("distributed")



class Started:
    """A subprocess whose stderr lines are read in a thread, to wait for a readiness line."""

    def __init__(self, args):
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(line) for line in self.proc.stderr], daemon=True).start()

    def wait_for_line(self, pattern: str, timeout: float = 120) -> re.Match:
        import time

        end = time.time() + timeout
        while time.time() < end:
            try:
                line = self.lines.get(timeout=max(0.01, end - time.time()))
            except queue.Empty:
                break
            if m := re.search(pattern, line):
                return m
        raise AssertionError(f"no line matching {pattern!r} within {timeout} s")

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)


@pytest.fixture
def scheduler():
    s = Started([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                 "--no-dashboard"])
    try:
        yield s.wait_for_line(r"Scheduler at:\s+(tcp://\S+)").group(1)
    finally:
        s.stop()


def sweep(path, out, address, *extra, timeout=300):
    return subprocess.run([sys.executable, "-m", "signsim.cli", "sweep", str(path), "--out", str(out),
                           "--executor", "dask", "--scheduler", address, "--dask-timeout", "2", *extra],
                          capture_output=True, text=True, timeout=timeout)


def test_a_scheduler_without_workers_stops_with_one_line(tmp_path, scheduler):
    p = write(tmp_path, 'problem = "quadratic"\niters = 20\n[grid]\nlr = [0.1, 0.01]\n')
    r = sweep(p, tmp_path / "o", scheduler, "--quiet")
    assert r.returncode == 1, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and scheduler in lines[0] and "no Dask worker for 2 s" in lines[0], r.stderr
    manifest = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert [run["status"] for run in manifest["runs"]] == ["missing", "missing"]
    assert manifest["executor"]["workers"] == []
    assert (tmp_path / "o" / "results.csv").exists()


def test_losing_every_worker_stops_and_keeps_what_finished(tmp_path, scheduler):
    # one quick run, then one that would take hours: the worker is killed once the quick one is stored
    p = write(tmp_path, 'problem = "quadratic"\ndim = 50\n[grid]\niters = [20, 300000000]\n')
    worker = Started([sys.executable, "-m", "distributed.cli.dask_worker", scheduler, "--nthreads", "1",
                      "--no-nanny", "--host", "127.0.0.1", "--no-dashboard"])
    try:
        address = worker.wait_for_line(r"Start worker at:\s+(tcp://\S+)").group(1)
        out = tmp_path / "o"
        proc = subprocess.Popen([sys.executable, "-m", "signsim.cli", "sweep", str(p), "--out", str(out),
                                 "--executor", "dask", "--scheduler", scheduler, "--dask-timeout", "2", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert wait_for(lambda: len(list((out / "runs").glob("*.json"))) == 1 if (out / "runs").is_dir()
                        else False, 300)
        worker.stop()
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        worker.stop()
    assert proc.returncode == 1, stderr
    assert len(stderr.strip().splitlines()) == 1 and scheduler in stderr, stderr
    assert json.loads(stdout)["statuses"] == {"ok": 1, "missing": 1}
    manifest = json.loads((out / "manifest.json").read_text())
    assert [run["status"] for run in manifest["runs"]] == ["ok", "missing"]
    assert manifest["executor"]["workers"] == [address]


def test_the_timeout_applies_to_dask_only_and_must_be_positive(cli, tmp_path):
    from signsim.sweep.executors import DASK_TIMEOUT

    p = write(tmp_path, "iters = 2\n")
    r = cli("sweep", p, "--dask-timeout", "5")
    assert r.code == 2 and "--dask-timeout applies to --executor dask only" in r.err
    r = cli("sweep", p, "--executor", "dask", "--scheduler", "tcp://127.0.0.1:1", "--dask-timeout", "0")
    assert r.code == 2 and "--dask-timeout 0" in r.err
    assert f"keeping the finished runs (default: {DASK_TIMEOUT:g})" in _flat(_help("sweep", "--help"))
