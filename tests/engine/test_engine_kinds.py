"""The one compiled engine (issue 31): the table of kinds drives every place that names a kind, the generated
dispatch module is fresh, the family's one loop and a composition's own loop give bit-identical runs, and a run of
many clients costs nothing per client that does not take part."""

import hashlib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import signsim
from signsim.engine import compose, loop, stage_kernels
from signsim.render import stage_tables as tables
from signsim.seeding import CHILDREN, SERVER, WORKERS, WorkerStreams, generator, run_streams
from signsim.stages import kinds, plugins, registry
from signsim.stages.base import KINDS, OPTION


def _tool(name: str):
    """A maintainer's tool of tools/ (outside the package), loaded as a module."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[2] / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


generate = _tool("generate_stages")


def test_the_generated_catalog_dispatch_module_and_stage_tables_are_fresh():
    """signsim/stages/catalog.py and docs/reference.md's stage tables are what
    ``python tools/generate_stages.py`` writes from the stage modules in their folders and the table of kinds (a
    new built-in stage or kind: run the generator)."""
    assert generate.REFERENCE.exists()  # a source checkout: the docs are checked too
    assert set(generate.outputs()) == {generate.CATALOG, generate.REFERENCE}
    assert generate.main(["--check"]) == 0, "run: python tools/generate_stages.py"


def test_the_catalog_lists_every_stage_module_of_each_folder_and_keeps_the_codes():
    """Each kind's built-in stages are the modules of its folder that declare NAME (a helper module is not one), in
    the committed order: a new module goes to the end of its kind, a removed one leaves the others' codes alone."""
    from signsim.stages import catalog

    for kind in kinds.PRIMARY:
        found = generate.discover(kind)
        assert set(found) == set(registry.BUILTIN[kind.name]), kind.name
        for module, name, form, flags in catalog.STAGES[kind.name]:
            mod = found[module]
            assert (mod.NAME, registry.form(mod), flags) == (name, form, generate.flags(kind, mod))
    assert "adaptive" not in registry.BUILTIN["server_optimizer"]  # a helper of the adaptive optimizers
    assert generate.ordered(["b", "a", "c"], {"a", "c", "b"}) == ["b", "a", "c"]
    assert generate.ordered(["b", "a", "c"], {"a", "c", "b", "aa", "z"}) == ["b", "a", "c", "aa", "z"]
    assert generate.ordered(["b", "a", "c"], {"c", "b"}) == ["b", "c"]
    assert generate.ordered([], {"c", "b"}) == ["b", "c"]


def test_the_generator_reads_the_committed_order_and_names_a_module_that_breaks_the_contract(tmp_path, monkeypatch):
    import types

    path = tmp_path / "catalog.py"
    path.write_text('STAGES: dict = {\n    "momentum": (\n        ("lion", "lion", "lion", ()),\n'
                    '        ("none", "none", "none", ("X",)),\n    ),\n}\n')
    assert generate._committed_order(path) == {"momentum": ["lion", "none"]}
    assert generate._committed_order(tmp_path / "absent.py") == {}
    broken = types.ModuleType("signsim.stages.compressors.half")
    broken.NAME, broken.__file__ = "half", "half.py"
    real = generate.importlib.import_module  # the folder's sign.py read as a module that declares only NAME
    monkeypatch.setattr(generate, "importlib", types.SimpleNamespace(
        import_module=lambda name: broken if name.endswith(".sign") else real(name)))
    with pytest.raises(generate.StageError, match="half.py: declares NAME, so it is a compressor stage, but not"):
        generate.discover(kinds.BY_NAME["compressor"])


def test_every_place_that_names_a_kind_reads_the_table():
    # the kinds with modules of their own; a slot (the downlink's compressor and error feedback) takes another's
    assert KINDS == tuple(k.name for k in kinds.PRIMARY) and set(kinds.NAMES) - set(KINDS) == {
        k.name for k in kinds.TABLE if k.of is not None}
    assert OPTION == {k.name: k.option for k in kinds.TABLE}
    assert registry.FOLDER == {k.name: k.folder for k in kinds.PRIMARY}
    assert plugins.REQUIRED == {k.name: k.required for k in kinds.PRIMARY}
    assert tables.TITLES == {k.name: k.title for k in kinds.PRIMARY}
    for k in kinds.TABLE:
        if k.of is not None:  # a slot's modules are its kind's, in the same folder
            assert k.folder == kinds.BY_NAME[k.of].folder and registry.builtin(k.name) == registry.builtin(k.of)
    from signsim.engine import plan

    # the loop's calls on its stages are made from the table, one per call (``signsim.engine.plan``), and the loop
    # imports each by that name
    assert set(plan.CALLS) == {c.loop_name for k in kinds.TABLE for c in k.calls}
    for name, fn in plan.CALLS.items():
        assert getattr(loop, name) is fn, name
    for k in kinds.TABLE:  # the loop reads each stage's code and flags from its integer settings
        assert kinds.code_setting(k.name) in loop.ICFG
        for flag in k.flags:
            assert kinds.flag_setting(flag) in loop.ICFG
    # the names the loop's source reads them by (its I_CODE_*, SP_* and flag constants) hold each kind's own index
    for k in kinds.TABLE:
        assert getattr(loop, f"I_CODE_{k.name.upper()}") == loop.ICFG.index(kinds.code_setting(k.name)), k.name
    rows = {name: getattr(loop, name) for name in vars(loop) if name.startswith("SP_") and name != "SP_ROW"}
    assert len(rows) >= len(kinds.TABLE) - 1  # (the downlink's error feedback takes no parameters)
    for name, row in rows.items():
        assert row == loop.SP_ROW[name[3:].lower()] == kinds.NAMES.index(name[3:].lower()), name
    for flag in kinds.FLAGS:
        assert getattr(loop, f"I_{flag}") == loop.ICFG.index(kinds.flag_setting(flag)), flag
    # the arguments of every call on a stage are those the plan types (``plan.call_signatures``: the one loop makes
    # the server's calls, and the workers' on a plugin, by address)
    from signsim.engine import plan

    for k in kinds.TABLE:
        for c in k.calls:
            assert set(c.args) <= set(plan.call_arg_types(np.float64)), (k.name, c.attr, c.args)


def test_every_built_in_stage_module_declares_its_kinds_contract():
    """The contract a plugin is held to (``Kind.required``) holds for every built-in stage too."""
    for kind in kinds.PRIMARY:
        for mod in registry.builtin(kind.name).values():
            for attr, want in kind.required.items():
                assert hasattr(mod, attr), (mod.__name__, attr)
                value = getattr(mod, attr)
                assert callable(value) if want == "function" else isinstance(value, want), (mod.__name__, attr)


def test_a_stage_code_is_its_index_among_the_built_in_stages():
    for kind in kinds.TABLE:
        assert stage_kernels.counts()[kind.name] == len(registry.BUILTIN[kinds.base(kind.name)])
        for i, mod in enumerate(registry.builtin(kind.name).values()):
            assert stage_kernels.codes({kind.name: mod}) == {kind.name: i}


def test_a_workers_stream_made_alone_is_the_spawned_child():
    """SeedSequence(seed, spawn_key=(WORKERS, m)) is the m-th child of the workers' root: the same draws as the
    streams made all at once, whichever order the lazy ones are asked for."""
    seed, M = 12345, 40
    root = np.random.SeedSequence(seed).spawn(CHILDREN)
    eager = [generator(s) for s in root[WORKERS].spawn(M)]
    lazy, server = run_streams(seed, M)
    for m in reversed(range(M)):
        assert np.array_equal(lazy[m].random(5), eager[m].random(5))
    assert len(lazy) == M and lazy[3] is lazy[3]
    assert np.array_equal(server.random(3), generator(root[SERVER]).random(3))
    assert isinstance(lazy, WorkerStreams)


RUN = dict(problem="quadratic", dim=12, workers=7, iters=60, eval_every=5, seed=4)
COMPOSITIONS = [dict(method="topk-ef", aggregate="mean", byzantine=2, attack="invert"),
                # (a composition's own loop draws the run's noise model only; test_split_compile.py's own loop is
                # this one's, compiled once for both)
                dict(method="signum", aggregate="krum:1", clients_per_round=5, byzantine=1, attack="alie-opt",
                     noise="student-t:3:0.5")]


def _run_with_loop(mode: str, opts: dict) -> dict:
    code = ("import json, sys, signsim\nr = signsim.run(**json.loads(sys.argv[1]))\n"
            "d = r.to_dict()\nprint(json.dumps({'history': d['history'], 'x': d['x_final']}))")
    import os

    env = {**os.environ, compose.LOOP_ENV: mode}
    done = subprocess.run([sys.executable, "-c", code, json.dumps(opts)], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


#: runs with a system model (docs/theory.md §14): a composition's own loop then keeps the simulated clock
#: (``plan.Clock``): messages cut by a deadline, and MARINA's full rounds to every worker, timed
TIMED = [dict(method="signsgd", clients_per_round=5, compute="lognormal:0.05:0.5", uplink="lognormal:2e3:0.4",
              latency=0.004, deadline=0.09),
         dict(method="marina", problem="logistic", noise="none", batch_size="full", clients_per_round=3,
              compute="const:0.01", uplink="const:1e4")]


@pytest.mark.parametrize("opts", [pytest.param(COMPOSITIONS[0], marks=pytest.mark.slow), COMPOSITIONS[1],
                                  *(pytest.param(t, marks=pytest.mark.slow) for t in TIMED)],
                         ids=["topk-ef-invert", "signum-krum-alie-sampled", "signsgd-deadline",
                              "marina-full-rounds-timed"])  # (the fast suite keeps one)
def test_the_one_loop_and_a_compositions_own_loop_give_the_same_run(opts):
    """Bit for bit: the plan of every built-in stage changes which code is compiled, never a number (the simulated
    time of a run with a system model included)."""
    opts = {**RUN, **opts}
    if opts.get("problem") != RUN["problem"]:
        opts.pop("dim")
    one = _run_with_loop("builtin", opts)
    own = _run_with_loop("composed", opts)
    assert one == own
    if "compute" in opts:
        times = [row["time"] for row in one["history"]]
        assert times[-1] > 0.0 and times == sorted(times)


#: compositions whose stages of seven kinds are built-in ones copied as plugins, of the server's path and of a
#: worker's (folder, name, kind, the run's option and the spec it takes), and the run's other options
PLUGINS = {
    "signum-krum": (dict(method="signum", byzantine=1),
                    [("pre_aggregation", "nnm", "pre_aggregation", "pre_aggregate", "{}:1"),
                     ("aggregation", "krum", "aggregation", "aggregate", "{}:2"),
                     ("server_optimizers", "fedadam", "server_optimizer", "server_opt", "{}"),
                     ("compressors", "sign", "compressor", "compressor", "{}"),
                     ("attacks", "alie", "attack", "attack", "{}:1.5")]),
    # a blind attack (its row on the worker's path) and an estimator (its before and after there)
    "diana-invert": (dict(method="diana", byzantine=1),
                     [("estimators", "diana", "estimator", "grad_estimator", "{}:0.5"),
                      ("attacks", "invert", "attack", "attack", "{}")]),
    # error feedback: its sends (optional, from signsim.stages.defaults), before and after on the worker's path
    "ef-signsgd": (dict(method="ef-signsgd"), [("error_feedback", "ef", "error_feedback", "error_feedback", "{}")]),
}
PLUGIN_RUN = dict(problem="rosenbrock", workers=9, iters=40, eval_every=4, seed=3)


def _plugins(tmp_path, copies: list, kept=()) -> tuple[list, dict]:
    """The plugin files of ``copies`` (the built-in source under a new name; those in ``kept`` left out) and the
    run's options that name them."""
    tag = hashlib.sha1(str(tmp_path).encode()).hexdigest()[:8]
    files, opts = [], {}
    for folder, name, kind, option, spec in copies:
        if name in kept:
            opts[option] = spec.format(name)
            continue
        new = f"p-{name}-{tag}"
        src = (Path(signsim.__file__).parent / "stages" / folder / f"{name}.py").read_text()
        assert src.count(f'NAME = "{name}"') == 1
        files.append(tmp_path / f"{name}_copy.py")
        files[-1].write_text(src.replace(f'NAME = "{name}"', f'NAME = "{new}"\nSTAGE = "{kind}"'))
        opts[option] = spec.format(new)
    return files, opts


@pytest.mark.parametrize("case", list(PLUGINS))
def test_plugins_run_in_the_one_loop_by_address_with_the_built_ins_results(tmp_path, monkeypatch, case):
    """Built-in stages copied as plugins (a pre-aggregation, an aggregation, a server optimizer, a compressor, two
    attacks, an estimator, an error feedback) run in the family's one loop, which calls their kernels by address (a
    plugin's code is the count of its kind's built-in stages, ``stage_kernels.codes``), so that they compile only
    their own kernels; the run is the built-in stages' run bit for bit."""
    from signsim.engine import plan as plans

    extra, copies = PLUGINS[case]
    monkeypatch.setenv(compose.LOOP_ENV, "builtin")
    chosen, codes = [], []
    choose, check = compose.choose, compose.check_codes
    monkeypatch.setattr(compose, "choose", lambda *a, **k: chosen.append(choose(*a, **k)) or chosen[-1])
    monkeypatch.setattr(compose, "check_codes", lambda p, icfg: codes.append(icfg.copy()) or check(p, icfg))
    files, opts = _plugins(tmp_path, copies)
    _, builtin = _plugins(tmp_path, copies, kept=[name for _, name, *_ in copies])
    docs = [signsim.run(plugins=files, **PLUGIN_RUN, **extra, **o).to_dict() for o in (builtin, opts)]
    # every column, the error's norm too (from the error feedback's TRACK_ERROR, not its name)
    assert docs[0]["history"] == docs[1]["history"] and docs[0]["x_final"] == docs[1]["x_final"]
    assert ("ef_error_norm" in docs[1]["history"][0]) == (case == "ef-signsgd")
    assert docs[1]["status"] == "ok" and len(chosen) == 2
    assert all(plan.stages.builtin for _, plan, _ in chosen)
    stages = chosen[1][1].stages
    mine = {kind: m for kind, m in stages.server.items() if plugins.is_plugin(m)}
    assert sorted(m.NAME for m in mine.values()) == sorted(v.split(":")[0] for v in opts.values())
    # the codes the run passed: past the built-ins' for each plugin's kind
    counts = stage_kernels.counts()
    assert {k: int(codes[-1][loop.ICFG.index(kinds.code_setting(k))]) for k in mine} == {k: counts[k] for k in mine}
    # each worker's call on a plugin, in its slot of the calls by address
    calls = [c for _, c in plans.BY_ADDRESS]
    for kind, module in mine.items():
        for call in kinds.TABLE[kinds.NAMES.index(kind)].calls:
            if call.worker and hasattr(module, call.attr):
                assert stages.fns[calls.index(call)].py_func.__name__.startswith(f"{call.attr}__p_"), call.attr


def test_a_plugin_whose_kernel_does_not_fit_the_one_loops_call_takes_its_own_loop(tmp_path):
    """``compose.plugin_kernels_fit``: an aggregation whose ``finish`` returns a value (the call returns nothing) is
    refused for the one loop, which would call it by address with another signature; its own loop types it as it
    is. The copies of krum and sign fit."""
    files, _ = _plugins(tmp_path, PLUGINS["signum-krum"][1])
    krum, sign = plugins.load_file(files[1]), plugins.load_file(files[3])
    assert compose.plugin_kernels_fit({"aggregation": krum, "compressor": sign})
    bad = tmp_path / "bad_finish.py"
    src = files[1].read_text().replace("p-krum-", "p-bad-krum-")
    bad.write_text(src + "\n\ndef finish(agg, M, p, tie, gen):\n    return 1.0\n")
    wrong = plugins.load_file(bad)
    assert not compose.plugin_kernels_fit({"aggregation": wrong})


@pytest.mark.slow
def test_plugins_give_the_same_run_in_the_one_loop_and_in_their_own(tmp_path):
    """Bit for bit: the plugins of ``PLUGINS``' first composition called by address in the one loop, and compiled
    into their composition's own loop."""
    extra, copies = PLUGINS["signum-krum"]
    files, opts = _plugins(tmp_path, copies)
    code = ("import json, sys, signsim\nr = signsim.run(plugins=json.loads(sys.argv[2]), **json.loads(sys.argv[1]))\n"
            "d = r.to_dict()\nprint(json.dumps({'history': d['history'], 'x': d['x_final']}))")
    import os

    runs = []
    for mode in ("builtin", "composed"):
        done = subprocess.run([sys.executable, "-c", code, json.dumps({**PLUGIN_RUN, **extra, **opts}),
                               json.dumps([str(f) for f in files])], capture_output=True, text=True,
                              env={**os.environ, compose.LOOP_ENV: mode}, timeout=600)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout))
    assert runs[0] == runs[1]


def test_a_compositions_own_loop_keeps_the_clock_only_for_a_run_with_a_system_model():
    """``plan.Clock``: the one loop always keeps the simulated clock; a composition's own loop only when asked
    (``timed``), and a run with a system model is refused before the loop on a loop without it."""
    from numba import typeof

    from signsim.engine import dispatch
    from signsim.engine.plan import plan_for

    stages = {k: next(iter(registry.builtin(k).values())) for k in kinds.NAMES}
    (_, untimed), (_, timed) = (compose.loops("analytic", stages, False, builtin=False, noise="gaussian", timed=t)
                                for t in (False, True))
    assert not untimed.clock.on and timed.clock.on and typeof(untimed) != typeof(timed)
    assert all(plan_for("analytic", timed=t).clock.on for t in (False, True))  # the plan of every built-in stage
    assert compose.loops("analytic", stages, False, timed=False)[1].clock.on
    icfg = np.zeros(len(loop.ICFG), dtype=np.int64)
    icfg[loop.I_NOISE] = dispatch.gaussian.CODE
    for plan in (untimed, timed):
        compose.check_codes(plan, icfg)  # no system model: any loop
    icfg[loop.I_TOPOLOGY] = 1
    compose.check_codes(timed, icfg)
    with pytest.raises(ValueError, match="keeps no simulated clock"):
        compose.check_codes(untimed, icfg)
    icfg[loop.I_TOPOLOGY], icfg[loop.I_KEEP] = 0, 3  # the first uploads kept (--over-select): the clock's selection
    with pytest.raises(ValueError, match="keeps no simulated clock"):
        compose.check_codes(untimed, icfg)


class _Chosen(Exception):
    """Raised by the stand-in for ``compose.choose`` below, so that no loop compiles."""


def test_the_engine_asks_for_the_clock_only_for_a_run_with_a_system_model(monkeypatch):
    """The driver's ``timed`` (``compose.choose``): a run with a system model (heterogeneous compute, a deadline) gets
    a loop with the simulated clock, a run without one a loop without it; and its problem's kernel module (a
    composition's own loop calls that module's kernels only), for rounds and for an asynchronous run
    (``compose.buffered_plan``)."""
    from ..conftest import run_engine

    asked = []

    def choose(family, stages, threaded, signature, noise=None, timed=True, dtype=None, module=None):
        asked.append((timed, module))
        raise _Chosen

    def buffered_plan(family, stages, signature, noise=None, dtype=None, module=None):
        asked.append(("async", module))
        raise _Chosen

    monkeypatch.setattr(compose, "choose", choose)
    monkeypatch.setattr(compose, "buffered_plan", buffered_plan)
    for system in ({}, {"compute": "lognormal:0.05:0.5", "uplink": "const:1e4"},
                   {"compute": "const:0.01", "deadline": 0.5}, {"problem": "quadratic"}, {"problem": "logistic"},
                   {"problem": "quadratic", "clients_per_round": 2, "asynchronous": "buffer:2"}):
        with pytest.raises(_Chosen):
            run_engine(method="signsgd", workers=4, iters=2, **system)
    assert asked == [(False, "rosenbrock"), (True, "rosenbrock"), (True, "rosenbrock"), (False, "quadratic"),
                     (False, "glm"), ("async", "quadratic")]


def test_loop_mode_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv(compose.LOOP_ENV, "composed")
    assert compose.mode() == "composed"
    monkeypatch.setenv(compose.LOOP_ENV, "nonsense")
    assert compose.mode() == "auto" and compose.mode("analytic") == "auto"
    monkeypatch.setenv(compose.LOOP_ENV, "analytic,mlp")
    assert [compose.mode(f) for f in ("analytic", "glm", "mlp")] == ["builtin", "composed", "builtin"]
    stages = {k: next(iter(registry.builtin(k).values())) for k in kinds.NAMES}
    monkeypatch.setenv(compose.LOOP_ENV, "builtin")
    from numba import typeof

    from signsim.engine import loop

    threaded, every = compose.loops("analytic", stages, True)
    serial, every_serial = compose.loops("analytic", stages, False)
    # one loop, compiled with threads and without for each plan, told apart by the plan's type
    assert (threaded, serial) == (loop.run_chunk_threaded, loop.run_chunk)
    assert every.parallel.on and not every_serial.parallel.on and typeof(every) != typeof(every_serial)
    assert every.stages.builtin and every.stages.key == stage_kernels.builtin_key()
    assert (every.problems.family, every.problems.noise) == ("analytic", None)
    own, plan = compose.loops("analytic", stages, False, builtin=False, noise="gaussian")
    assert own is serial and not plan.stages.builtin and plan.problems.noise == "gaussian"
    assert plan.stages.key == tuple((k, m.__name__, stage_kernels.source_hash(m)) for k, m in sorted(stages.items()))


def test_a_compositions_own_loop_draws_the_runs_noise_model_only_and_refuses_another():
    """A composition's own plan is bound to one noise model (``dispatch.Problems(family, noise)``): the other
    models' draws are NaN stand-ins there, so a run with another model's code is refused before the loop, never run
    on NaN; the family's one loop takes every model."""
    from signsim.engine import dispatch, loop
    from signsim.engine.plan import plan_for

    stages = {k: next(iter(registry.builtin(k).values())) for k in kinds.NAMES}
    _, plan = compose.loops("analytic", stages, False, builtin=False, noise="laplace")
    assert plan.problems.noise == "laplace"
    icfg = np.zeros(len(loop.ICFG), dtype=np.int64)
    for name in dispatch.NOISE:
        icfg[loop.I_NOISE] = getattr(dispatch, name).CODE
        assert dispatch.noise_name(int(icfg[loop.I_NOISE])) == name
        compose.check_codes(plan_for("analytic"), icfg)
        if name == "laplace":
            compose.check_codes(plan, icfg)
        else:
            with pytest.raises(ValueError, match="draws noise laplace"):
                compose.check_codes(plan, icfg)
    draw = dispatch.compiled("noise_draw", "analytic", "laplace")
    p = np.array([1.0, 0.0, 0.0])
    assert np.isfinite(draw(dispatch.laplace.CODE, np.random.default_rng(0), p))
    for name, model in dispatch.NOISE_MODELS.items():  # the other models draw NaN there (and are refused before)
        if name != "laplace":
            assert np.isnan(draw(model.CODE, np.random.default_rng(0), p)), name


def test_a_compositions_own_loop_calls_its_problems_module_only_and_refuses_another():
    """A composition's own plan is bound to the problem kernel module of its run (``dispatch.Problems(family,
    noise, module)``): the family's other modules are not compiled into it (a first run compiles one problem's
    kernels), so a run on a problem of another module is refused before the loop; the family's one loop takes every
    problem of the family."""
    from numba import typeof

    from signsim.engine import dispatch, loop
    from signsim.engine.plan import plan_for
    from signsim.problems import quadratic, rosenbrock, sign_trap

    stages = {k: next(iter(registry.builtin(k).values())) for k in kinds.NAMES}
    _, plan = compose.loops("analytic", stages, False, builtin=False, noise="gaussian", module="rosenbrock")
    assert plan.problems.module == "rosenbrock" and "rosenbrock" in str(typeof(plan.problems))
    _, one = compose.loops("analytic", stages, False, noise="gaussian", module="rosenbrock")
    assert one.problems.module is None  # (the one loop: every problem of the family)
    icfg = np.zeros(len(loop.ICFG), dtype=np.int64)
    icfg[loop.I_NOISE] = dispatch.gaussian.CODE
    for module, code in dispatch.FAMILIES["analytic"]:
        icfg[loop.I_PROBLEM] = code[0]
        compose.check_codes(plan_for("analytic"), icfg)
        if module is rosenbrock:
            compose.check_codes(plan, icfg)
        else:
            with pytest.raises(ValueError, match="calls the problems of rosenbrock"):
                compose.check_codes(plan, icfg)
    x, none = np.full(2, 0.5), np.zeros(0)
    loss = dispatch.compiled("problem_loss", "analytic", "gaussian", "rosenbrock")
    pf = np.zeros(0)
    assert loss(rosenbrock.CODE, x, pf, np.zeros(0, np.int64), none.reshape(0, 0), none) == pytest.approx(
        (1 - 0.5) ** 2 + 100 * (0.5 - 0.25) ** 2)
    for other in (quadratic.CODE, sign_trap.CODE):  # the others' kernels are not there: refused, as an unknown code
        with pytest.raises(ValueError, match="unknown problem code"):
            loss(other, x, pf, np.zeros(0, np.int64), none.reshape(0, 0), none)
    with pytest.raises(ValueError, match="no problem module 'glm' in the family 'analytic'"):
        dispatch.Problems("analytic", None, "glm")
    assert dispatch.Problems("glm", None, "glm").module is None  # (a family of one module: nothing to narrow)
    assert [dispatch.module_name(c) for c in (rosenbrock.CODE, quadratic.CODE)] == ["rosenbrock", "quadratic"]


def test_with_one_numba_thread_a_large_step_takes_the_serial_loop_with_the_same_results():
    """A step of at least ``PARALLEL_WORK`` numbers takes the threaded loop only when Numba has more than one thread;
    with one, the serial loop, whose results are the threaded loop's (docs/reference.md, NUMBA_NUM_THREADS)."""
    import numba

    from signsim.engine import driver
    from signsim.engine.build import build
    from signsim.interface import config

    opts = {"problem": "quadratic", "dim": 2000, "workers": 32, "iters": 3, "method": "signsgd", "eval_every": 1}
    assert 32 * 2000 >= driver.PARALLEL_WORK
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        engine = build(config.resolve(opts)).engine
        assert not engine.parallel and not engine.icfg[loop.I_PARALLEL]
        one = signsim.run(**opts).to_dict()
    finally:
        numba.set_num_threads(before)
    assert build(config.resolve(opts)).engine.parallel == (before > 1)
    assert one["history"] == signsim.run(**opts).to_dict()["history"]


def test_a_billion_clients_of_which_two_take_part_cost_nothing_per_client():
    """M = 10^9 workers, S = 2 per round, stateless stages: a worker array would need gigabytes (and its streams
    hours); the run sets up and finishes with the oracle calls of its participants only, reproducibly."""
    opts = dict(problem="quadratic", dim=5, workers=10**9, clients_per_round=2, iters=30, method="sgd", seed=1,
                eval_every=10)
    a = signsim.run(**opts).to_dict()
    b = signsim.run(**opts).to_dict()
    assert a["status"] == "ok"
    assert a["final"]["grad_calls"] == 2 * 30
    assert a["history"] == b["history"]
