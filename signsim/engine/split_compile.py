"""A new run loop compiled on two cores: the kernels the loop calls apart from the worker step compile in a helper
process while this one compiles the worker step.

Numba compiles in one thread: a loop compiles its callees one after the other as it types its body, then itself.
The worker step (the problem's oracle, the noise model, the worker's stages) and the loop's other callees (the
history's ``record`` with the problem's evaluation, the server's stages, the checks)
do not depend on each other, and together they are most of a first run's compile. So when a run's loop is not in
the kernel cache, ``alongside`` starts ``python -m signsim.engine.split_compile``, which compiles those other
callees into the cache (``jobs``: each named by how a fresh process finds its dispatcher, with the signature the
loop calls it with) from the first, while this process compiles the worker step, then the helper's jobs from the
last until the two meet (each job claimed before it starts, so that none compiles twice but at the meeting
point), waits for the helper to end (its exit is the readiness signal), and then compiles the loop, which loads
the helper's kernels from the cache.

Nothing here changes what is compiled, only which process compiles it, so results do not change. The helper ends
when its stdin closes (this process ended or was interrupted), and anything it did not compile this process
compiles itself. It is started only for a callee that is not cached yet, so a new composition of stages on a
family whose kernels are cached starts none. ``SIGNSIM_SPLIT_COMPILE=0`` turns it off.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pickle
import subprocess
import sys
import threading

import numpy as np

#: the environment variable that turns the helper off ("0")
ENV = "SIGNSIM_SPLIT_COMPILE"


def enabled() -> bool:
    """Whether a new loop compiles on two cores: 2 or more cores, and not turned off (``ENV``)."""
    return os.environ.get(ENV) != "0" and (os.cpu_count() or 1) >= 2


def jobs(engine, kernel, run_plan, bundles=None) -> tuple[list, tuple]:
    """(helper jobs, this process's share) for ``engine``'s loop ``kernel`` run with the plan ``run_plan``
    (``signsim.engine.plan``): the jobs are ``(recipe, signature)``
    pairs (``find`` makes a recipe's dispatcher in any process), the share is (worker step dispatcher, signatures).
    The signatures are those ``loop.run_rounds`` calls the kernels with; a test checks them against the
    signatures a compiled loop put in the cache. ``bundles``: ``engine.bundles()``, if already made."""
    from numba import typeof

    from signsim.engine import clock, loop, stage_kernels
    from signsim.engine.plan import SERVER_CALLS, searches, server_signatures, worker_plan_type

    data, workers, server, run, gens = bundles or engine.bundles()
    icfg, fcfg, sp = run.icfg, run.fcfg, run.sp
    stages = engine.settings.stages()
    S = icfg[loop.I_CLIENTS]

    def sig(*args):
        return tuple(typeof(a) for a in args)

    k = np.int64(0)  # the loop's integer scalars are int64
    record = sig(run_plan.problems, k, server.x, workers.err, server.gbuf, server.tally, data, run)
    jobs = [(("module", "signsim.engine.loop", "record"), record),
            (("module", "signsim.engine.dispatch", "check_noise"), sig(icfg[loop.I_NOISE])),
            (("module", "signsim.engine.loop", "check_settings"), sig(icfg[loop.I_SIGN_ZERO], icfg[loop.I_TIE])),
            (("module", "signsim.engine.loop", "step_size"), sig(icfg[loop.I_SCHEDULE], fcfg[loop.F_LR], k)),
            (("module", "signsim.engine.compress", "sparse_broadcast_bits"), sig(server.agg))]
    # the simulated clock (docs/theory.md §14): compiled into a loop whose plan keeps it (``plan.Clock``)
    if run_plan.clock.on:
        who, f = server.part[0], fcfg[loop.F_LATENCY]
        up = clock.Uploads(who, k, k, workers.wbits, f, workers.wbits)
        jobs += [(("module", "signsim.engine.clock", "advance"),
                  sig(k, up, f, who, server.system, f, f, server.tally, f)),
                 (("module", "signsim.engine.clock", "select"), sig(up, server.system, f, f, k, who)),
                 (("module", "signsim.engine.clock", "advance_all"),
                  sig(k, who, k, f, server.system, f, f, server.tally))]
    # the server's calls on its stages (``kinds.Call`` with ``worker`` False), each with the arguments the loop passes
    # under the names the table gives them: the composition's stages' functions (the plan of every built-in stage
    # calls the composition's by address: ``plan.Stages``). A plugin's functions a fresh process cannot make:
    # compiled in this process (a plugin's in the plan of every built-in stage before the loop, ``compose.choose``)
    # (the signatures the plan declares: ``plan.server_signatures``, for the dtype of the server's aggregate)
    for (kind, call), signature in zip(SERVER_CALLS, server_signatures(server.agg.dtype), strict=True):
        if stage_kernels.builtin_only({kind.name: stages[kind.name]}):
            jobs.append((("stage", kind.name, stages[kind.name].__name__, call.attr), tuple(signature.args)))
    # a searching attack's line search (1.4 of a first run's 17 CPU-s), in the loops that may search
    if stage_kernels.builtin_only(stages) and searches(typeof(run_plan.stages)):
        jobs.append((("module", "signsim.engine.loop", "attack_factor"),
                     sig(run_plan.stages, workers.msg[:S], k, server.agg, icfg, sp, server.gen)))
    lr = fcfg[loop.F_LR]
    # (the worker step takes the plan the loop hands it: ``plan.worker_plan``)
    share = (loop.worker_step, [(worker_plan_type(typeof(run_plan)),
                                 *sig(k, k, k, lr, server.x, server.hbar, workers, gens[0], data, run))])
    return jobs, share


def find(recipe):
    """The dispatcher a recipe names, made (or taken) the way the loop's namespace makes it."""
    kind = recipe[0]
    if kind == "module":
        return getattr(importlib.import_module(recipe[1]), recipe[2])
    if kind == "stage":
        from signsim.engine import stage_kernels

        return stage_kernels.stage_function(stage_kernels.module_named(recipe[2]), recipe[3], False)
    raise ValueError(f"unknown recipe {recipe!r}")


def cached(dispatcher, signature) -> bool:
    """Whether the kernel cache holds ``dispatcher`` compiled for ``signature``, as signsim's ledger records it
    (``signsim.engine.ledger``)."""
    from signsim.engine import ledger

    return ledger.holds(dispatcher, signature)


class _Helper:
    """The helper process compiling ``todo`` (``(recipe, signature)`` pairs) in order, from the first. It writes each
    job's index to its stdout as it starts it; this process may take jobs from the end of the list (``steal``),
    telling the helper by a line on its stdin, so that the two meet wherever their shares end."""

    def __init__(self, todo):
        self.todo = todo
        self.started = -1  # the last index the helper said it started
        self.proc = subprocess.Popen([sys.executable, "-m", "signsim.engine.split_compile"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        try:
            self.proc.stdin.write(pickle.dumps(todo))
            self.proc.stdin.flush()
        except OSError:
            pass
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            with contextlib.suppress(ValueError):
                self.started = max(self.started, int(line))

    def steal(self) -> None:
        """Compile the jobs the helper has not started, from the last, each claimed first (never its first job:
        the helper's own from its start); stop where the helper's have reached."""
        for i in range(len(self.todo) - 1, 0, -1):
            if i <= self.started:
                return
            try:
                self.proc.stdin.write(f"{i}\n".encode())
                self.proc.stdin.flush()
            except OSError:
                return
            recipe, signature = self.todo[i]
            with contextlib.suppress(Exception):  # the loop compiles whatever is missing, and reports it
                find(recipe).compile(signature)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.stdin.close()  # the helper's signal to stop, if it still runs
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@contextlib.contextmanager
def alongside(jobs):
    """While the block runs, a helper process compiles the ``jobs`` that are not cached (none: no helper); at the
    block's end, this process compiles those the helper has not started, from the last, and waits for the helper
    to finish its own."""
    todo = [(r, s) for r, s in jobs if not cached(find(r), s)]
    if not todo or not enabled():
        yield
        return
    helper = _Helper(todo)
    try:
        yield
        helper.steal()
        helper.proc.wait()  # its exit is the readiness signal: its last job is in the cache
    finally:
        helper.close()


def compile_loop(engine, kernel, run_plan) -> list:
    """Compile ``engine``'s loop ``kernel`` for the plan ``run_plan`` (not yet compiled in this process) on two
    cores when it is not in the cache: the helper's jobs in a helper process, the worker step here. The loop itself
    then compiles (or loads) at its first call. Returns, when the loop was not in the cache, its callees that the
    plan names as ``(dispatcher, signature)`` pairs (the jobs and the worker step), for the ledger once the loop has
    compiled them; else []."""
    from numba import typeof

    bundles = engine.bundles()
    signature = tuple(typeof(a) for a in (run_plan, np.int64(0), np.int64(0), np.int64(0), *bundles))
    if signature in kernel.signatures or cached(kernel, signature):
        return []
    helper_jobs, (step, signatures) = jobs(engine, kernel, run_plan, bundles)
    if enabled():
        with alongside(helper_jobs):
            for signature in signatures:
                step.compile(signature)
    return [(find(recipe), signature) for recipe, signature in helper_jobs] + [(step, s) for s in signatures]


def _helper() -> None:
    """The helper process: read the jobs from stdin, compile each into the cache in order, first writing its index
    to stdout; skip those claimed by a line on stdin (the parent compiles them); exit when stdin closes."""
    from signsim.engine import ledger

    jobs = pickle.load(sys.stdin.buffer)
    claimed: set[int] = set()

    def watch():
        for line in sys.stdin.buffer:  # ends at EOF: the parent closed the pipe or ended
            with contextlib.suppress(ValueError):
                claimed.add(int(line))
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()
    for i, (recipe, signature) in enumerate(jobs):
        if i in claimed:
            break  # the parent took the rest, from the last
        print(i, flush=True)
        with contextlib.suppress(Exception):  # the parent compiles whatever is missing
            dispatcher = find(recipe)
            dispatcher.compile(signature)
            ledger.note(dispatcher)
    # its kernels are in the cache: leave at once, not through the interpreter's shutdown, which aborts (SIGABRT,
    # "could not acquire lock for <stdin>") while ``watch`` is blocked reading stdin, open until the parent ends
    os._exit(0)


if __name__ == "__main__":
    import signsim  # noqa: F401 - sets NUMBA_CACHE_DIR (inherited anyway) before Numba loads
    from signsim.interface import memory

    memory.collect_less()  # (it compiles: the command's garbage-collection thresholds)

    _helper()
