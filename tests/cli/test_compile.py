"""``signsim compile --clear``, the first-run notice and the warm-up list (the compile itself is exercised by
benchmarks/bench_startup.py: it takes a minute or more on 2 cores)."""

import hashlib
import re

import pytest

from signsim import methods, noise, problems
from signsim.commands import compile as compiling


def _index(family: str, *dtypes):
    """The ledger of the kernel cache (``signsim.engine.ledger``) told that the run loop holds a plan of ``family``
    for each dtype of x (the loop's arguments: the plan, k0, k1, K, then the bundles; the Server bundle holds x
    first, gbuf is float64 always), as ``ledger.note`` records a dispatcher's signatures."""
    from collections import namedtuple
    from types import SimpleNamespace

    from numba import typeof
    from numba.core import types

    from signsim.engine import ledger, loop
    from signsim.engine.plan import plan_for

    def server(dt):
        return types.NamedTuple((types.Array(getattr(types, dt), 1, "C"), types.Array(types.float64, 1, "C")),
                                namedtuple("Server", "x gbuf"))

    i64 = types.int64
    sigs = [(typeof(plan_for(family)), i64, i64, i64, i64, i64, server(dt)) for dt in dtypes]
    ledger.note(SimpleNamespace(py_func=loop.run_chunk.py_func, signatures=sigs))


def _cache_in(tmp_path, monkeypatch):
    """The kernel cache folder and its ledger in ``tmp_path`` (Numba read the suite's own when it was imported)."""
    from signsim.engine import ledger

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(ledger, "root", lambda: tmp_path / ledger.FOLDER)


def test_clear_removes_only_cached_kernels(cli, tmp_path, monkeypatch):
    _cache_in(tmp_path, monkeypatch)
    engine = compiling.PACKAGE / "engine"
    where = tmp_path / f"engine_{hashlib.sha1(str(engine).encode()).hexdigest()}"
    where.mkdir()
    _index("mlp", "float64")
    (where / "loop.run_rounds-1.py311.nbi").write_bytes(b"i")
    (where / "loop.run_rounds-1.py311.1.nbc").write_bytes(b"x")
    (where / "keep.txt").write_text("not a kernel")
    assert compiling.loop_is_cached() and compiling.loop_is_cached("mlp")
    assert not compiling.loop_is_cached("analytic")
    r = cli("compile", "--clear")
    assert r.code == 0 and "removed 2" in r.err
    assert [p.name for p in where.iterdir()] == ["keep.txt"]
    assert not compiling.loop_is_cached()


def test_the_compile_notice_reaches_stderr_when_kernels_are_missing(cli, monkeypatch):
    """The CLI's side of the notice: as if a kernel compiled (``watch`` reports a cache miss at once)."""
    import contextlib

    @contextlib.contextmanager
    def missing(first, busy=lambda compiling: None):
        yield
        first("")  # as if the last kernel had compiled: a run's config is known by then

    monkeypatch.setattr(compiling, "watch", missing)
    r = cli("run", "--iters", "3", "--json")
    assert r.code == 0 and "compiling the analytic kernels (float64) for run" in r.err and "signsim compile" in r.err
    r = cli("run", "--problem", "logistic", "--dtype", "float32", "--iters", "3", "--json")
    assert "compiling the glm kernels (float32) for run" in r.err and "--family glm --dtype float32" in r.err
    for command in ("check-spb", "diversity", "bound"):  # the family of the point the diagnostic computes at
        err = cli(command, "--json").err
        assert re.search(rf"the (analytic|glm|mlp) kernels \(float64\) for {command}", err), (command, err)
    r = cli("diversity", "--problem", "logistic", "--split", "label-skew:0.3", "--json")  # issue 34: it named a hash
    assert "the glm kernels (float64) for diversity" in r.err and "--command diversity --family glm'" in r.err
    # bound warms only the analytic family's kernels: the suggestion for another family must still select some
    assert "'signsim compile --command bound' does" in cli("bound", "--problem", "logistic", "--json").err
    assert "compiling" not in cli("run", "--iters", "3", "--quiet").err


def test_the_compile_notice_says_what_compiles_and_its_command_selects_something():
    """Issue 34 item 5: a composition's own loop is not 'once after an install', and the command works."""
    every = compiling.notice("run", "analytic", "float64", "run_rounds__analytic__every")
    assert "the analytic loop that runs every composition of built-in stages" in every
    assert "once after an install" in every
    own = compiling.notice("run", "glm", "float64", "worker_step__glm__own", "signum: sign, majority")
    assert "the glm loop of this composition of stages (signum: sign, majority)" in own
    assert "once per composition" in own and "once after an install" not in own
    at = compiling.notice("diversity", "mlp", "float64", "run_rounds__mlp__own")
    assert "--command run --family mlp'" in at  # diversity --at run:K compiles run's loop
    model = compiling.notice("run", "external", "float64", "run_rounds__external__own", "ssdm")
    assert model.startswith("signsim: compiling the PyTorch model's loop of this composition of stages (ssdm) "
                            "(float64, the engine's; the model computes in its own dtype)"), model
    from signsim.engine.dispatch import FAMILIES

    for command in (*compiling.COMMANDS, "sweep"):
        for family in (*FAMILIES, None):
            for dtype in compiling.DTYPES:
                words = compiling.ahead(command, family, dtype).split()
                flags = dict(zip(words[2::2], words[3::2], strict=True))
                picked = compiling.select([flags["--command"]], [flags["--family"]] if "--family" in flags else None,
                                          flags.get("--dtype"))
                assert picked, (command, family, dtype, words)


def test_warm_up_covers_every_problem_noise_model_and_method():
    cmds = [" ".join(c) for c in compiling.warm_commands()]
    for name in problems.registry():
        assert any(f"--problem {name} " in c and c.startswith("run") for c in cmds), name
    for name in noise.registry():
        assert any(f"--noise {name}" in c for c in cmds), name
    for name in methods.registry():
        assert any(f"--method {name} " in c for c in cmds), name
    assert any(c.startswith("check-spb") for c in cmds) and any(c.startswith("diversity") for c in cmds)
    from signsim.engine import dispatch

    # your own PyTorch model's family (external) warms its float64 loop where torch is installed, not float32
    families = {dispatch.family_of(problems.get(p).code) for p in problems.registry()} - {"external"}
    float32 = {dispatch.family_of(problems.get(c.split()[2]).code) for c in cmds if "--dtype float32" in c}
    assert float32 == families


def test_warm_up_reaches_every_family_threaded_loop():
    """The warm-up runs that should take the threaded loop do: one per family of problems."""
    from signsim.engine import dispatch, loop
    from signsim.engine.build import build
    from signsim.interface import config
    from signsim.interface import options as table

    name_of = {o.flag: o.name for o in table.of_command("run").values()}  # (--async is asynchronous)
    threaded = set()
    for args in compiling.warm_commands():
        if args[0] != "run" or "--workers" not in args:
            continue
        options = {name_of[args[i]]: args[i + 1] for i in range(1, len(args) - 1, 2)
                   if args[i].startswith("--") and args[i] not in ("--quiet",)}
        options = {k: (int(v) if v.isdigit() else v) for k, v in options.items()}
        engine = build(config.resolve(options)).engine
        if engine.icfg[loop.I_PARALLEL]:
            threaded.add(dispatch.family_of(engine.problem.code))
    # (a model's stages run serially beside torch's threads: the external family has no threaded loop)
    assert threaded == set(dispatch.FAMILIES) - {"external"}


def test_compile_runs_every_warm_up_command(cli):
    r = cli("compile")
    assert r.code == 0, r.err
    assert f"compiled: {len(compiling.warm_commands())} warm-up commands ran" in r.err


def test_the_compile_notice_tells_float32_loops_apart(tmp_path, monkeypatch):
    """A float32 run compiles its own copy of the loop: the notice looks for that copy in the cache's ledger."""
    _cache_in(tmp_path, monkeypatch)
    engine = compiling.PACKAGE / "engine"
    where = tmp_path / f"engine_{hashlib.sha1(str(engine).encode()).hexdigest()}"
    where.mkdir()

    _index("glm", "float64")
    assert compiling.loop_is_cached("glm") and compiling.loop_is_cached("glm", "float64")
    assert not compiling.loop_is_cached("glm", "float32") and not compiling.loop_is_cached("mlp")
    _index("glm", "float64", "float32")
    assert compiling.loop_is_cached("glm", "float32")
    for entry in (tmp_path / "ledger" / "signsim.engine.loop.run_rounds").iterdir():
        entry.write_text("damaged")  # an entry that cannot be read says nothing
    assert not compiling.loop_is_cached("glm")


def test_an_interrupted_warm_up_command_stops_the_compile(monkeypatch):
    """Ctrl-C or SIGTERM during one warm-up command (it exits 130 or 143) stops `signsim compile` as an
    interrupt, not as a failed command with a traceback (found by the fuzz tests on a loaded machine)."""

    monkeypatch.setattr(compiling, "warm_commands", lambda: [["run", "--iters", "2"]] * 3)
    ran = []
    for code in (130, 143):
        def stopped(args, code=code):
            ran.append(args)
            raise SystemExit(code)

        with pytest.raises(KeyboardInterrupt):
            compiling.compile_all(stopped)
    assert len(ran) == 2  # nothing after the interrupted command
