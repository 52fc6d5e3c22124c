"""Executors: a local process pool (the default: nothing to install or start) or a Dask cluster.

Both run task dicts with the caller's ``runner`` (resolved config -> results document; see ``worker.execute``)
and yield (task index, results document) as runs finish, in any order; the caller
writes each result as it arrives. On Ctrl-C, ``drain`` cancels what has not started, gives the running
runs a moment to hand back their partial results (status ``interrupted``) and stops the workers. Worker
processes load the compiled kernels from Numba's on-disk cache.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from signsim.errors import InputError
from signsim.sweep.worker import execute, failed

DRAIN_SECONDS = 10.0
#: ``error`` of a begun run that did not report within DRAIN_SECONDS of the interrupt (its history is empty)
DRAIN_ERROR = "interrupted before it reported its results"
#: --dask-timeout's default: seconds a Dask sweep waits while its scheduler has no worker
DASK_TIMEOUT = 60.0
#: --jobs's default for --executor dask --scheduler local: LocalCluster workers
LOCAL_CLUSTER_JOBS = 2


class ExecutorStopped(Exception):
    """The executor cannot go on (a Dask scheduler without workers): the runs not finished stay missing."""


def default_jobs() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _results(done) -> Iterator[tuple[int, dict[str, Any]]]:
    for index, future in done:
        try:
            doc = future.result(timeout=0)
        except BaseException:  # noqa: BLE001 - a run stopped before it could report: nothing to keep
            continue
        if isinstance(doc, dict):
            yield index, doc


def _cause(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"its worker process was killed by {name}"
    return f"its worker process exited with code {exitcode}"


class LocalExecutor:
    name = "local"

    def __init__(self, jobs: int | None, force: bool = False):
        cores = default_jobs()
        self.jobs = cores if jobs is None else jobs
        if self.jobs < 1:
            raise InputError(f"--jobs {self.jobs}: must be at least 1")
        if self.jobs > cores and not force:
            raise InputError(f"--jobs {self.jobs}: more than the {cores} cores available; add --force to start "
                             "that many processes anyway")
        self.pool = None
        self.futures: dict[Any, int] = {}
        self.reported: set = set()
        self.tasks: dict[int, dict[str, Any]] = {}
        self.marker_dir: str | None = None

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "jobs": self.jobs}

    def _start(self, n: int) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        from signsim.interface.interrupts import worker_init

        self.pool = ProcessPoolExecutor(max_workers=max(1, min(self.jobs, n)),
                                        mp_context=multiprocessing.get_context("spawn"),
                                        initializer=worker_init, initargs=(os.getpid(),))

    def _begun(self, index: int) -> bool:
        """Whether task ``index``'s run began in a worker and its result has not reached this process (its marker
        file, which the worker writes as the run starts and this process removes once it has the result)."""
        return (Path(self.marker_dir) / str(index)).exists() if self.marker_dir else True

    def _done(self, index: int) -> None:
        if self.marker_dir:
            (Path(self.marker_dir) / str(index)).unlink(missing_ok=True)

    def _in_flight(self) -> dict[int, int]:
        """Task index -> process id of the runs in progress (their marker files)."""
        out = {}
        for f in Path(self.marker_dir).iterdir():
            with contextlib.suppress(ValueError, OSError):
                out[int(f.name)] = int(f.read_text() or 0)
                f.unlink()
        return out

    def run(self, tasks: list[dict[str, Any]], runner) -> Iterator[tuple[int, dict[str, Any]]]:
        """Run every task with ``runner``; when a worker process dies, the run it was running is recorded
        ``failed`` with the cause, and the pool is rebuilt for the rest (a run caught in two breakdowns is failed
        too)."""
        from concurrent.futures import as_completed
        from concurrent.futures.process import BrokenProcessPool

        self.marker_dir = tempfile.mkdtemp(prefix="signsim-sweep-")
        pending = {t["index"]: t for t in tasks}
        self.tasks = dict(pending)
        caught: dict[int, int] = defaultdict(int)
        breaks = 0
        try:
            while pending:
                if breaks > len(tasks) + 2:  # workers die before they start a run: give up on the rest
                    for i in list(pending):
                        yield i, failed(pending.pop(i),
                                        "the run did not finish: worker processes keep dying at start-up")
                    break
                self._start(len(pending))
                self.futures = {self.pool.submit(execute, {**t, "marker_dir": self.marker_dir}, runner): i
                                for i, t in pending.items()}
                broken = False
                for f in as_completed(self.futures):
                    i = self.futures[f]
                    try:
                        doc = f.result()
                    except BrokenProcessPool:
                        broken = True
                        continue
                    self.reported.add(f)
                    self._done(i)
                    if doc is None:  # the worker was interrupted before it started this run
                        continue
                    pending.pop(i, None)
                    yield i, doc
                if not broken:
                    break
                breaks += 1
                procs = dict(getattr(self.pool, "_processes", None) or {})
                self.pool.shutdown(wait=True, cancel_futures=True)  # joins the workers: their exit codes
                self.pool = None
                exits = {pid: p.exitcode for pid, p in procs.items()}
                dead = {pid: code for pid, code in exits.items() if code not in (0, None, -signal.SIGTERM)}
                for i, pid in self._in_flight().items():
                    if i not in pending:
                        continue
                    caught[i] += 1
                    if pid in dead or caught[i] >= 2:
                        cause = _cause(dead.get(pid, exits.get(pid)))
                        pending.pop(i)
                        yield i, failed(self.tasks[i], f"the run did not finish: {cause}")
        finally:
            if self.pool is not None and not pending:
                # every run has reported: the workers hold nothing, and one still starting up (importing, slow on
                # a loaded machine) need not be waited for, so they are stopped rather than joined
                self.close(kill=True)
            if not pending:
                shutil.rmtree(self.marker_dir, ignore_errors=True)

    def drain(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """After Ctrl-C or SIGTERM: cancel queued runs, tell the running ones to stop (SIGINT) and collect the partial
        results of those that began (``_begun``) within DRAIN_SECONDS; one of them that does not report is stored as
        interrupted, and a task whose run had not begun stays missing."""
        import time
        from concurrent.futures import wait

        from signsim.interface import interrupts

        if self.pool is None:
            return
        for f in self.futures:
            f.cancel()
        for p in list(getattr(self.pool, "_processes", {}).values()):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                os.kill(p.pid, signal.SIGINT)
        running = [f for f in self.futures if f not in self.reported and not f.cancelled()]
        deadline = time.monotonic() + DRAIN_SECONDS
        while running and time.monotonic() < deadline:
            done, not_done = wait(running, timeout=interrupts.SIGNAL_POLL)
            yield from _results((self.futures[f], f) for f in done)
            # a task whose run has not begun (its worker still starting up, or about to take it) has no partial
            # results to wait for: it returns nothing when its worker gets to it, and stays missing
            running = [f for f in not_done if self._begun(self.futures[f])]
        for f in running:
            i = self.futures[f]
            yield i, failed(self.tasks[i], DRAIN_ERROR, "interrupted")
        self.close(kill=True)
        if self.marker_dir:
            shutil.rmtree(self.marker_dir, ignore_errors=True)

    def close(self, kill: bool = False) -> None:
        """Shut the pool down (``kill``: its workers killed first, after an interrupt) and wait for it: its
        queues' semaphores are released here, as the command exits at once after an interrupt (``os._exit``,
        which runs no finalizer: multiprocessing's resource tracker then warned of "leaked semaphore objects")."""
        if self.pool is None:
            return
        if kill:
            for p in list(getattr(self.pool, "_processes", {}).values()):
                with contextlib.suppress(OSError, AttributeError):
                    p.kill()
        self.pool.shutdown(wait=True, cancel_futures=True)  # (killed workers: it returns at once)
        self.pool = None
        if kill:
            import gc

            gc.collect()  # the pool's queues, and with them their semaphores' finalizers (which unregister them)


class DaskExecutor:
    """``--scheduler ADDRESS`` connects to a running scheduler; ``--scheduler local`` starts a LocalCluster of
    ``--jobs`` single-threaded worker processes for trying it out."""

    name = "dask"

    def __init__(self, scheduler: str | None, jobs: int | None, force: bool = False,
                 timeout: float = DASK_TIMEOUT):
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise InputError("--executor dask: Dask is not installed; pip install 'signsim[dask]'") from None
        if not scheduler:
            raise InputError("--executor dask needs --scheduler ADDRESS (or --scheduler local)")
        if jobs is not None and jobs < 1:
            raise InputError(f"--jobs {jobs}: must be at least 1")
        if scheduler == "local" and jobs is not None and jobs > default_jobs() and not force:
            raise InputError(f"--jobs {jobs}: more than the {default_jobs()} cores available; add --force to start "
                             "that many processes anyway")
        if scheduler != "local":
            check_address(scheduler)
        if not 0 < timeout < 1e9:
            raise InputError(f"--dask-timeout {timeout:g}: must be a number of seconds > 0")
        self.scheduler, self.jobs, self.timeout = scheduler, jobs or LOCAL_CLUSTER_JOBS, timeout
        self.ran: set[str] = set()  # the addresses of the workers that ran a run
        self.client = self.cluster = None
        self.futures: list = []
        self.tasks: dict[int, dict[str, Any]] = {}
        self.index: dict[Any, int] = {}
        self.reported: set = set()
        self.marker_dir: str | None = None

    def describe(self) -> dict[str, Any]:
        """The executor as the manifest records it: ``workers`` the addresses of the Dask workers that ran a run
        of this invocation (a LocalCluster also its size, ``jobs``)."""
        return {"name": self.name, "scheduler": self.scheduler, **({"jobs": self.jobs} if self.scheduler == "local"
                                                                  else {}), "workers": sorted(self.ran)}

    def _connected(self) -> int:
        """The number of workers the scheduler has now."""
        return len(self.client.ncores())  # asks the scheduler

    def _finished(self, pending: list) -> Iterator[Any]:
        """The futures of ``pending`` as they finish; ExecutorStopped once the scheduler has had no worker for
        ``timeout`` seconds (at the start, or after losing every worker)."""
        import time

        from distributed import wait

        alone_since = None
        poll = min(1.0, self.timeout / 4)
        while pending:
            try:
                done = list(wait(pending, timeout=poll, return_when="FIRST_COMPLETED").done)
            except TimeoutError:
                done = []
            keys = {f.key for f in done}
            pending = [f for f in pending if f.key not in keys]
            yield from done
            if not pending:
                return
            if self._connected():
                alone_since = None
            elif alone_since is None:
                alone_since = time.monotonic()
            elif time.monotonic() - alone_since >= self.timeout:
                raise ExecutorStopped(f"--scheduler {self.scheduler}: no Dask worker for {self.timeout:g} s "
                                      f"(--dask-timeout); stopped with {len(pending)} runs not finished (the "
                                      "finished ones are kept: the same command resumes)")

    def run(self, tasks: list[dict[str, Any]], runner) -> Iterator[tuple[int, dict[str, Any]]]:
        from distributed import Client, LocalCluster

        try:
            if self.scheduler == "local":
                import logging

                self.cluster = LocalCluster(n_workers=self.jobs, threads_per_worker=1, processes=True,
                                            dashboard_address=None, host="127.0.0.1", silence_logs=logging.CRITICAL)
                self.client = Client(self.cluster)
            else:
                self.client = Client(self.scheduler, timeout="20s")
        except (OSError, TimeoutError, ValueError, TypeError) as e:
            raise InputError(f"--scheduler {self.scheduler}: cannot connect ({' '.join(str(e).split())})") from None
        self.tasks = {t["index"]: t for t in tasks}
        if self.scheduler == "local":  # same machine: runs mark themselves in progress (see worker.execute)
            self.marker_dir = tempfile.mkdtemp(prefix="signsim-sweep-")
            tasks = [{**t, "marker_dir": self.marker_dir} for t in tasks]
        self.futures = [self.client.submit(execute, t, runner, pure=False, key=f"signsim-{t['run_id']}-{t['index']}")
                        for t in tasks]
        self.index = {f.key: t["index"] for f, t in zip(self.futures, tasks, strict=True)}
        self.reported = set()
        for f in self._finished(list(self.futures)):
            i = self.index[f.key]
            try:
                doc = f.result()
                with contextlib.suppress(Exception):  # where it ran, for the manifest
                    self.ran.update(self.client.who_has([f]).get(f.key, ()))
            except Exception as e:  # noqa: BLE001 - a dead worker (KilledWorker) or a lost task: recorded
                doc = failed(self.tasks[i], f"the run did not finish: {type(e).__name__}: "
                                            f"{' '.join(str(e).split())[:300]}")
            self.reported.add(f.key)
            yield i, doc
        self.close()

    def drain(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """After Ctrl-C or SIGTERM: the runs the cluster was running are stored as interrupted (a Dask task
        cannot hand back partial results); queued runs are cancelled."""
        if self.client is None:
            return
        running: set = set()
        if self.marker_dir:
            keys = {i: k for k, i in self.index.items()}
            for f in Path(self.marker_dir).iterdir():
                with contextlib.suppress(ValueError, KeyError):
                    running.add(keys[int(f.name)])
            shutil.rmtree(self.marker_dir, ignore_errors=True)
        with contextlib.suppress(Exception):  # the tasks executing right now (not those queued on a worker)
            for stacks in self.client.call_stack().values():
                running.update(stacks)
        with contextlib.suppress(Exception):
            self.client.cancel(self.futures)
        for f in self.futures:
            if f.key in running and f.key not in self.reported:
                i = self.index[f.key]
                yield i, failed(self.tasks[i], "interrupted while running on the Dask cluster", "interrupted")
        if self.cluster is not None:  # our own LocalCluster: its busy workers are stopped now, not in seconds
            for nanny in list(getattr(self.cluster, "workers", {}).values()):
                with contextlib.suppress(Exception):
                    nanny.auto_restart = False
                    os.kill(nanny.process.process.pid, signal.SIGKILL)
        self.close()

    def close(self, kill: bool = False) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None
        if self.marker_dir:
            shutil.rmtree(self.marker_dir, ignore_errors=True)


def check_address(address: str) -> None:
    """InputError unless ``address`` looks like [PROTOCOL://]HOST:PORT."""
    rest = address.split("://", 1)[-1]
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(f"--scheduler {address}: expected HOST:PORT (e.g. tcp://127.0.0.1:8786) or 'local'")


def make(name: str, jobs: int | None, scheduler: str | None, force: bool = False,
         dask_timeout: float | None = None):
    if name == "local":
        if scheduler:
            raise InputError("--scheduler applies to --executor dask only")
        if dask_timeout is not None:
            raise InputError("--dask-timeout applies to --executor dask only")
        return LocalExecutor(jobs, force)
    if name == "dask":
        return DaskExecutor(scheduler, jobs, force, DASK_TIMEOUT if dask_timeout is None else dask_timeout)
    raise InputError(f"--executor {name}: choose from local, dask")
