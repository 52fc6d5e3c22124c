"""``signsim compile``: compile every kernel ahead of time (for a Docker image or a CI cache step), and
``signsim compile --clear``: empty signsim's part of the Numba cache.

Numba writes its cache under ``NUMBA_CACHE_DIR``, in one folder per source folder named
``<folder>_<sha1 of its absolute path>``; ``import signsim`` sets ``NUMBA_CACHE_DIR`` (unless the user did) to
a folder named by a hash of the kernel sources, so edited or upgraded kernels are never loaded stale
(``signsim/__init__.py``). This module finds those places without importing Numba, so the CLI can tell
before a run whether it will compile first.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import signsim

PACKAGE = Path(signsim.__file__).resolve().parent
SUFFIXES = (".nbi", ".nbc")
#: the run loop (``loop.run_rounds``, compiled as ``loop.run_chunk`` and ``loop.run_chunk_threaded``) as the ledger
#: of the kernel cache names it (``signsim.engine.ledger``: module, function, source file): it lists every plan the
#: loop was compiled for (``signsim.engine.plan``: the family of problems or one problem kernel module of it, the
#: noise model, the stages, threaded or not)
LOOP = ("signsim.engine.loop", "run_rounds", PACKAGE / "engine" / "loop.py")
#: an asynchronous run's loop (``signsim.engine.buffered``)
BUFFERED = ("signsim.engine.buffered", "run_buffered", PACKAGE / "engine" / "buffered.py")

#: how a notice names a family that the README calls otherwise
SHOWN = {"external": "PyTorch model's"}


def notice(command: str, family: str | None, dtype: str, kernel: str = "", composition: str = "") -> str:
    """The line a command prints before its first kernel compiles: what compiles (``family``: the problem's
    family, None when not known; ``kernel``: the name of the kernel that compiles first, which tells a run loop
    of one composition of stages, ``run_rounds__FAMILY__own``, from the family's one loop of every built-in
    composition, ``run_rounds__FAMILY__every``, as ``label`` names a compile; ``composition``: the run's stages,
    named) and the ``signsim compile`` command that does it ahead of time (only one that selects something)."""
    kind = ""
    if kernel.count("__") >= 2 and kernel.rsplit("__", 1)[1] in ("every", "own"):  # compiled for a run's plan
        family = family or kernel.split("__")[1]
        kind = kernel.rsplit("__", 1)[1]
    of = f"{SHOWN.get(family, family)} " if family else ""
    shown = dtype if family != "external" else f"{dtype}, the engine's; the model computes in its own dtype"
    if kind == "every":
        what = (f"the {of}loop that runs every composition of built-in stages ({shown}) for {command}: once after "
                f"an install or an upgrade; then no composition of built-in stages compiles")
    elif kind == "own":
        named = f" ({composition})" if composition else ""
        what = f"the {of}loop of this composition of stages{named} ({shown}) for {command}: once per composition"
    else:
        what = f"the {of}kernels ({shown}) for {command}: once after an install or an upgrade"
    if signsim.UNCACHED is not None:  # the cache's disk is full: this process's kernels are not kept
        return (f"signsim: compiling {what}, seconds to minutes on 2 cores; not kept: {_full_folder()} "
                "(NUMBA_CACHE_DIR names another)")
    how = ahead("run" if kind else command, family, dtype)  # a diagnostic --at run:K compiles run's loop
    return f"signsim: compiling {what}, seconds to minutes on 2 cores; '{how}' does it ahead of time"


def ahead(command: str, family: str | None, dtype: str) -> str:
    """The ``signsim compile`` command that compiles ``command``'s kernels for ``family`` and ``dtype``: the
    narrowest of those that select at least one warm-up command (``bound`` warms only the analytic family's)."""
    selected = "run" if command == "sweep" else command  # a sweep's runs compile run's kernels
    dt = dtype if dtype in DTYPES else None
    for fam, d in dict.fromkeys(((family, dt), (family, None), (None, dt), (None, None))):
        if select([selected], [fam] if fam else None, d):
            return f"signsim compile --command {selected}" + (f" --family {fam}" if fam else "") + \
                (f" --dtype {d}" if d and d != "float64" else "")
    return "signsim compile"


def label(data: dict) -> str:
    """The name of what a Numba compile event compiles: the function's, and for one compiled for a run's plan
    (``signsim.engine.plan``), ``__FAMILY__every`` (the plan of every built-in stage) or ``__FAMILY__own``."""
    name = getattr(getattr(data.get("dispatcher"), "py_func", None), "__name__", "")
    args = data.get("args") or ()
    if args:
        from signsim.engine.plan import problems_of, stages_of

        problems, stages = problems_of(args[0]), stages_of(args[0])
        if problems is not None and stages is not None:
            return f"{name}__{problems.family}__{'every' if stages.builtin else 'own'}"
    return name


def _ours(event) -> bool:
    """Whether a Numba compile event is for one of signsim's kernels (not, e.g., a typed List's methods, which
    Numba compiles in every process, nor ``signsim.engine.ready``'s empty kernel, which only sets Numba up in a
    helper thread: it would take the compile notice from the run's own kernels)."""
    fn = getattr((event.data or {}).get("dispatcher"), "py_func", None)
    module = getattr(fn, "__module__", None) or ""
    return (module == "signsim" or module.startswith("signsim.")) and module != "signsim.engine.ready"


@contextlib.contextmanager
def watch(first: Callable[[str], None], busy: Callable[[bool], None] = lambda compiling: None) -> Iterator[None]:
    """While the block runs: ``first(name)`` just before the first of signsim's kernels compiles (``name`` as
    ``label`` gives it, e.g. ``worker_step__mlp__own``: a family's copy ends in ``__FAMILY``), and ``busy(True)``
    / ``busy(False)`` around each outermost compile. Numba broadcasts its ``numba:compile`` event only on a cache
    miss (a kernel loaded from the cache is no event), so this says exactly when a compile happens, whatever
    the command and whichever kernels it needs. Imports Numba."""
    from numba.core import event

    lock = threading.Lock()
    state = {"depth": 0, "seen": False}

    class Listener(event.Listener):
        def on_start(self, ev):
            if not _ours(ev):
                return
            with lock:
                state["depth"] += 1
                outermost, fresh = state["depth"] == 1, not state["seen"]
                state["seen"] = True
            with contextlib.suppress(Exception):  # a display problem must not break a compile
                if fresh:
                    first(label(ev.data))
                if outermost:
                    busy(True)

        def on_end(self, ev):
            if not _ours(ev):
                return
            with lock:
                state["depth"] -= 1
                outermost = state["depth"] == 0
            if outermost:
                with contextlib.suppress(Exception):
                    busy(False)

    listener = Listener()
    event.register("numba:compile", listener)
    try:
        yield
    finally:
        event.unregister("numba:compile", listener)
        if state["depth"] > 0:  # interrupted inside a compile
            with contextlib.suppress(Exception):
                busy(False)


def source_dirs() -> list[Path]:
    return sorted({p.parent for p in PACKAGE.rglob("*.py")})


def _full_folder() -> str:
    """The words for ``signsim.UNCACHED``: the kernel cache folder and its disk's free space."""
    folder, free = signsim.UNCACHED
    return f"the kernel cache folder {folder} has {free / 2**20:.0f} MB free"


def check_kept() -> None:
    """Compiling ahead of time is refused when nothing compiled would be kept (``signsim.UNCACHED``: the kernels go
    to a temporary folder removed at exit)."""
    from signsim.errors import InputError

    if signsim.UNCACHED is not None:
        raise InputError(f"{_full_folder()}: nothing compiled would be kept (free space there, or set "
                         "NUMBA_CACHE_DIR to a folder with room)")


def _cache_root() -> str | None:
    """NUMBA_CACHE_DIR, or the kernel cache folder it replaced when that folder's disk was full (``UNCACHED``)."""
    return signsim.UNCACHED[0] if signsim.UNCACHED is not None else os.environ.get("NUMBA_CACHE_DIR")


def cache_dirs(user: str | None = None) -> list[Path]:
    """Where Numba keeps (or would keep) the cache of each signsim source folder (under ``user``, by default
    NUMBA_CACHE_DIR)."""
    user = user or os.environ.get("NUMBA_CACHE_DIR")
    if user:
        return [Path(user) / f"{d.name}_{hashlib.sha1(str(d).encode()).hexdigest()}" for d in source_dirs()]
    return [d / "__pycache__" for d in source_dirs()]


def loop_is_cached(family: str = "*", dtype: str | None = None, kernel: tuple = LOOP) -> bool:
    """Whether a run loop for ``family`` (any family by default) is in the kernel cache; with ``dtype``
    (``--dtype``: float64 or float32), one compiled for state of that type; ``kernel``: the loop (``BUFFERED``: an
    asynchronous run's). Read from the cache's ledger (``signsim.engine.ledger``), which lists each compiled plan's
    argument types by name (Numba is imported to read a family's name only when ``family`` is asked)."""
    from signsim.engine import ledger

    return any(_compiled_for(args, family, dtype) for args in ledger.signatures(*kernel))


def sweep_notices(path, out, plugin: str | None = None) -> list[str]:
    """The compile notices of a sweep run by local processes (which load the kernels this process's cache
    holds): one per family of problems and dtype among its unfinished runs whose run loop is not cached yet;
    ``plugin``: the sweep's ``--plugin`` (its stages are known to the runs)."""
    from signsim import problems
    from signsim.commands.sweep import plan
    from signsim.engine.dispatch import family_of
    from signsim.sweep.store import Store

    _, tasks = plan(path, plugin)
    store = Store(out)
    needed = set()
    for t in tasks:
        if t["error"] or store.finished(t["run_id"]):
            continue
        c = t["config"]
        with contextlib.suppress(Exception):  # a bad run is reported by the sweep itself
            needed.add((family_of(problems.get(c.get("problem") or "rosenbrock").code), c.get("dtype") or "float64"))
    return [notice("sweep", family, dtype) for family, dtype in sorted(needed) if not loop_is_cached(family, dtype)]


#: where x is among the run loop's arguments (``loop.run_rounds``: its plan, k0, k1, K, then the bundles): the first
#: field of its ``Server`` bundle, whose type is named "Server(array(float64, 1d, C), ..."
SERVER_ARGUMENT = 6


def _compiled_for(args: list[str], family: str, dtype: str | None) -> bool:
    """Whether the loop's argument types ``args`` (their names, as the ledger keeps them) are those of a plan of
    ``family`` ("*": any) whose x is an array of ``dtype`` (None: any)."""
    import re

    if family != "*":
        from signsim.engine.dispatch import family_in

        if not args or family_in(args[0]) != family:
            return False
    x = re.match(r"\w+\(array\((\w+),", args[SERVER_ARGUMENT]) if len(args) > SERVER_ARGUMENT else None
    return dtype is None or (x is not None and x.group(1) == dtype)


def clear() -> int:
    """Remove every cached kernel of signsim (also those of earlier sources: the sibling folders of signsim's
    own cache folder); return the number of files removed."""
    removed = 0
    user = _cache_root()  # (a full disk's folder, not the temporary one this process compiles into)
    dirs = list(cache_dirs(user))
    if user and Path(user).parent.name == "numba" and Path(user).parent.parent.name == "signsim":
        for other in Path(user).parent.glob("*"):
            if other.is_dir() and other != Path(user):
                dirs += [d for d in other.iterdir() if d.is_dir()]
    for d in dirs:
        if not d.is_dir():
            continue
        for f in d.iterdir():
            if f.suffix in SUFFIXES:
                f.unlink(missing_ok=True)
                removed += 1
    # the ledger of what the caches hold (``signsim.engine.ledger``) goes with them
    from signsim.engine.ledger import FOLDER

    for d in {Path(p).parent for p in dirs}:
        for f in (d / FOLDER).glob("*/*") if (d / FOLDER).is_dir() else ():
            if f.is_file() and not f.is_symlink():
                f.unlink(missing_ok=True)
    return removed


#: the model file whose run compiles the loop of your own PyTorch models (the family ``external``)
COMPILE_MODEL = Path(__file__).resolve().parent.parent / "torch" / "compile_model.py"

#: runs whose step is large enough for the threaded loop (driver.PARALLEL_WORK numbers), one per family
THREADED = (("--problem", "quadratic", "--dim", "2000", "--workers", "32"),
            ("--problem", "logistic", "--workers", "32", "--batch-size", "64"),
            ("--problem", "mlp", "--workers", "32", "--batch-size", "8"))


def threaded(args: list[str]) -> bool:
    """Whether a warm-up command line is one of the threaded loops' runs."""
    return args[0] == "run" and any(tuple(args[1:1 + len(t)]) == t for t in THREADED)


#: command lines that together load every kernel signsim has: one run per problem and per noise model (the run
#: loop, every problem's and noise model's kernels), every method alias, and the diagnostics' estimators
def warm_commands() -> list[list[str]]:
    from signsim import methods, noise, problems

    fast = ["--iters", "2", "--quiet"]
    cmds = [["run", "--problem", p, *fast] for p in problems.registry() if p != "model"]
    if importlib.util.find_spec("torch") is not None:  # your own model's loop: a small model file's run
        cmds.append(["run", "--problem", "model", "--model", str(COMPILE_MODEL), *fast])
    for model in noise.registry().values():
        spec = model.example_spec
        cmds.append(["run", "--problem", "quadratic", "--dim", "3", "--noise", spec, *fast])
    cmds += [["run", "--method", m, "--dim", "3", *fast] for m in methods.registry()]
    # each family's threaded loop (a step of at least driver.PARALLEL_WORK numbers) and its float32 copies
    cmds += [["run", *args, *fast] for args in THREADED]
    cmds += [["run", "--problem", p, "--dtype", "float32", *fast] for p in ("rosenbrock", "logistic", "mlp")]
    # the binomial engine (--votes binomial: analytic problems only)
    cmds.append(["run", "--problem", "quadratic", "--dim", "3", "--method", "signsgd", "--votes", "binomial", *fast])
    # each family's asynchronous loop (--async: serial; the one that runs every composition of built-in stages, as
    # ``compile_all`` sets SIGNSIM_LOOP)
    cmds += [["run", "--problem", p, "--workers", "4", "--clients-per-round", "2", "--async", "buffer:2", *fast]
             for p in ("quadratic", "logistic", "mlp")]
    for p in ("logistic", "mlp", "quadratic", "rosenbrock"):  # each default estimator, and the sampling ones
        cmds.append(["check-spb", "--problem", p, "--samples", "64", "--quiet"])
        cmds.append(["check-spb", "--problem", p, "--samples", "64", "--estimator", "monte-carlo", "--quiet"])
        if p != "quadratic":  # a round of local steps: its Monte Carlo kernel (the quadratic's is a closed form)
            cmds.append(["check-spb", "--problem", p, "--samples", "64", "--local-steps", "2", "--quiet"])
        cmds.append(["diversity", "--problem", p, "--pairs", "8", "--quiet"])
        cmds.append(["diversity", "--problem", p, "--pairs", "8", "--estimator", "two-batch", "--quiet"])
    cmds.append(["bound", "--problem", "rosenbrock", "--quiet"])  # the majority-vote table's exact law
    # the vote of S sampled workers that differ (docs/theory.md §12.1)
    cmds.append(["check-spb", "--problem", "vote-trap", "--workers", "6", "--clients-per-round", "3", "--quiet"])
    return cmds


#: the commands ``signsim compile --command`` selects by (``--at run:K`` of the diagnostics takes run's loop)
COMMANDS = ("run", "check-spb", "diversity", "bound")
DTYPES = ("float64", "float32")


def group(args: list[str]) -> tuple[str, str, str]:
    """(command, family of problems, dtype) of a warm-up command line."""
    from signsim import problems
    from signsim.engine.dispatch import family_of

    problem = args[args.index("--problem") + 1] if "--problem" in args else "rosenbrock"
    dtype = args[args.index("--dtype") + 1] if "--dtype" in args else "float64"
    return args[0], family_of(problems.get(problem).code), dtype


def select(commands: list[str] | None = None, families: list[str] | None = None,
           dtype: str | None = None) -> list[list[str]]:
    """The warm-up commands of the given commands, families of problems and dtype (each: all when None)."""
    from signsim.engine.dispatch import FAMILIES
    from signsim.errors import InputError

    for flag, given, known in (("--command", commands, COMMANDS), ("--family", families, tuple(FAMILIES)),
                               ("--dtype", [dtype] if dtype else None, DTYPES)):
        for value in given or ():
            if value not in known:
                raise InputError(f"{flag} {value}: choose from {', '.join(known)}")
    return [c for c in warm_commands() if (lambda g: (not commands or g[0] in commands)
                                           and (not families or g[1] in families) and (not dtype or g[2] == dtype))
            (group(c))]


#: CPU seconds each group of warm-up commands took, (command, family, dtype) -> seconds: the commands of
#: ``warm_commands`` run through ``main`` in its order, in one process from an empty kernel cache, as ``compile_all``
#: runs them (``SIGNSIM_LOOP=builtin``), with the helper process and the background compile off
#: (``SIGNSIM_SPLIT_COMPILE=0``, ``SIGNSIM_WARM=0``), each command's process time added to its group (2-core AMD
#: EPYC VM, 7 December 2026, 17:30-17:37: 443 CPU-s and 7 min 24 s of wall time for the whole list, the server
#: kernels and asynchronous loops included); the estimate that ``signsim compile`` prints first. The first group of a
#: family also compiles the kernels its later groups share. Each family's asynchronous loop is ``ASYNC_SECONDS``
#: more, and the server kernels of each dtype ``SERVER_SECONDS``.
SECONDS: dict[tuple[str, str, str], float] = {
    ("run", "analytic", "float64"): 66, ("run", "glm", "float64"): 52, ("run", "mlp", "float64"): 54,
    ("run", "analytic", "float32"): 31, ("run", "glm", "float32"): 22, ("run", "mlp", "float32"): 44,
    ("check-spb", "analytic", "float64"): 18, ("check-spb", "glm", "float64"): 12,
    ("check-spb", "mlp", "float64"): 18,
    ("diversity", "analytic", "float64"): 12, ("diversity", "glm", "float64"): 6,
    ("diversity", "mlp", "float64"): 7,
    ("bound", "analytic", "float64"): 3,
    ("run", "external", "float64"): 15,
}


#: CPU seconds of each family's asynchronous loop (its warm-up command, ``--async``), compiled after the family's
#: other runs, measured with ``SECONDS``
ASYNC_SECONDS: dict[tuple[str, str, str], float] = {
    ("run", "analytic", "float64"): 8, ("run", "glm", "float64"): 7, ("run", "mlp", "float64"): 12,
}


#: CPU seconds of every built-in stage's server kernels for each dtype, which ``compile_all`` compiles after the
#: runs (the one loop calls them by address: ``signsim.engine.plan``), measured with ``SECONDS``
SERVER_SECONDS: dict[str, float] = {"float64": 30, "float32": 26}


def estimate(cmds: list[list[str]]) -> float:
    """Seconds the warm-up commands ``cmds`` take (``SECONDS``, ``ASYNC_SECONDS``), leaving out the run groups
    whose loop is in the kernel cache already (and their asynchronous loop when that is), and the server kernels of
    each dtype of a run group left in (``SERVER_SECONDS``)."""
    total, dtypes = 0.0, set()
    for g in {group(c) for c in cmds}:
        if g[0] == "run" and g in ASYNC_SECONDS and not loop_is_cached(g[1], g[2], BUFFERED):
            total += ASYNC_SECONDS[g]
        if g[0] == "run" and loop_is_cached(g[1], g[2]):
            continue
        if g[0] == "run":
            dtypes.add(g[2])
        total += SECONDS.get(g, 0.0)
    return total + sum(SERVER_SECONDS.get(dtype, 0.0) for dtype in dtypes)


def compile_all(main: Callable[[list[str]], None], report: Callable[[str], None] = lambda s: None,
                cmds: list[list[str]] | None = None) -> int:
    """Run the warm-up commands ``cmds`` (every one by default) in this process through the CLI's ``main``
    (handed down by the CLI: commands do not import it); return how many ran."""
    cmds = warm_commands() if cmds is None else cmds
    # the family's one loop, which runs every composition of built-in stages (``signsim.engine.compose``)
    previous = os.environ.get("SIGNSIM_LOOP")
    os.environ["SIGNSIM_LOOP"] = "builtin"
    try:
        _run_all(main, report, cmds)
        # every built-in stage's server kernels, which the one loop calls by address (``signsim.engine.plan``): so
        # that no later composition of built-in stages compiles anything
        from signsim.engine.plan import compile_server_kernels

        for dtype in dict.fromkeys(group(args)[2] for args in cmds if args[0] == "run"):
            report(f"the server's stage kernels ({dtype})")
            compile_server_kernels(dtype)
    finally:
        if previous is None:
            os.environ.pop("SIGNSIM_LOOP", None)
        else:
            os.environ["SIGNSIM_LOOP"] = previous
    return len(cmds)


def _run_all(main, report, cmds) -> None:
    for i, args in enumerate(cmds, 1):
        report(f"[{i}/{len(cmds)}] signsim {' '.join(args)}")
        try:
            main(args)
        except SystemExit as e:
            if e.code in (130, 143):  # Ctrl-C or SIGTERM stopped the command: stop compiling too (exit 130 / 143)
                raise KeyboardInterrupt from None
            if e.code not in (0, 1, None):
                raise RuntimeError(f"signsim {' '.join(args)} exited {e.code}") from None
