"""Executors: a local process pool (the default: nothing to install or start) or a Dask cluster.

Both run task dicts and yield (task index, results document) as runs finish, in any order; the caller
writes each result as it arrives. On Ctrl-C, ``drain`` cancels what has not started, gives the running
runs a moment to hand back their partial results (status ``interrupted``) and stops the workers. Worker
processes load the compiled kernels from Numba's on-disk cache.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from signsim.errors import InputError
from signsim.sweep.worker import execute

DRAIN_SECONDS = 10.0


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


class LocalExecutor:
    name = "local"

    def __init__(self, jobs: int | None):
        self.jobs = default_jobs() if jobs is None else jobs
        if self.jobs < 1:
            raise InputError(f"--jobs {self.jobs}: must be at least 1")
        self.pool = None
        self.futures: dict[Any, int] = {}
        self.reported: set = set()

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "jobs": self.jobs}

    def run(self, tasks: list[dict[str, Any]]) -> Iterator[tuple[int, dict[str, Any]]]:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        self.pool = ProcessPoolExecutor(max_workers=self.jobs, mp_context=multiprocessing.get_context("spawn"))
        self.futures = {self.pool.submit(execute, t): t["index"] for t in tasks}
        for f in as_completed(self.futures):
            self.reported.add(f)
            yield self.futures[f], f.result()
        self.close()

    def drain(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """After Ctrl-C: cancel queued runs, collect what the running ones report within DRAIN_SECONDS."""
        from concurrent.futures import wait

        if self.pool is None:
            return
        for f in self.futures:
            f.cancel()
        running = [f for f in self.futures if f not in self.reported and not f.cancelled()]
        done, _ = wait(running, timeout=DRAIN_SECONDS)
        yield from _results((self.futures[f], f) for f in done)
        self.close(kill=True)

    def close(self, kill: bool = False) -> None:
        if self.pool is None:
            return
        if kill:
            for p in list(getattr(self.pool, "_processes", {}).values()):
                p.terminate()
        self.pool.shutdown(wait=not kill, cancel_futures=True)
        self.pool = None


class DaskExecutor:
    """``--scheduler ADDRESS`` connects to a running scheduler; ``--scheduler local`` starts a LocalCluster of
    ``--jobs`` single-threaded worker processes for trying it out."""

    name = "dask"

    def __init__(self, scheduler: str | None, jobs: int | None):
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise InputError("--executor dask: Dask is not installed; pip install 'signsim[dask]'") from None
        if not scheduler:
            raise InputError("--executor dask needs --scheduler ADDRESS (or --scheduler local)")
        if jobs is not None and jobs < 1:
            raise InputError(f"--jobs {jobs}: must be at least 1")
        self.scheduler, self.jobs = scheduler, jobs or 2
        self.client = self.cluster = None
        self.futures: list = []

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "scheduler": self.scheduler,
                "workers": self.jobs if self.scheduler == "local" else None}

    def run(self, tasks: list[dict[str, Any]]) -> Iterator[tuple[int, dict[str, Any]]]:
        from distributed import Client, LocalCluster, as_completed

        try:
            if self.scheduler == "local":
                self.cluster = LocalCluster(n_workers=self.jobs, threads_per_worker=1, processes=True,
                                            dashboard_address=None)
                self.client = Client(self.cluster)
            else:
                self.client = Client(self.scheduler, timeout="20s")
        except (OSError, TimeoutError) as e:
            raise InputError(f"--scheduler {self.scheduler}: cannot connect ({e})") from None
        self.futures = [self.client.submit(execute, t, pure=False, key=f"signsim-{t['run_id']}-{t['index']}")
                        for t in tasks]
        index = {f.key: t["index"] for f, t in zip(self.futures, tasks, strict=True)}
        for f in as_completed(self.futures):
            yield index[f.key], f.result()
        self.close()

    def drain(self) -> Iterator[tuple[int, dict[str, Any]]]:
        if self.client is not None:
            self.client.cancel(self.futures)
        self.close()
        return iter(())

    def close(self, kill: bool = False) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None


def make(name: str, jobs: int | None, scheduler: str | None):
    if name == "local":
        if scheduler:
            raise InputError("--scheduler applies to --executor dask only")
        return LocalExecutor(jobs)
    if name == "dask":
        return DaskExecutor(scheduler, jobs)
    raise InputError(f"--executor {name}: choose from local, dask")
