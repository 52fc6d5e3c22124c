"""The names and types the kernels and loops of a composition are cached under (``signsim.engine.compose``,
``signsim.engine.plan``) and the kernel cache's folder (``signsim._kernel_cache_dir``): a stage is one file and
changes nothing else (issue 47, item 3).

Numba's cache checks only the file that defines a function, not its callees: a loop compiled with a stage's kernel
stays valid only as long as that stage's source does. The folder's name hashes every kernel-bearing source but the
stage modules; each stage's source (with the built-in stages it takes functions from) is hashed into the names of
what is compiled from it and into the type of the plans that call it. So adding or editing a stage leaves the
folder, and every loop that does not call it, where they are (the end-to-end check, with a real cache, is in
``test_one_file_stage.py``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import signsim
from signsim.engine import stage_kernels
from signsim.engine.plan import Stages, plan_for
from signsim.stages import registry
from signsim.stages.attacks import alie, alie_opt, ipm, ipm_opt
from signsim.stages.compressors import sign
from signsim.stages.error_feedback import clag, ef21

PACKAGE = Path(signsim.__file__).resolve().parent


def _tree(tmp_path) -> Path:
    copy = tmp_path / "signsim"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def test_the_cache_folder_ignores_the_stage_modules_and_what_is_generated_from_them(tmp_path):
    copy = _tree(tmp_path)
    before = signsim._kernel_cache_dir(copy)
    assert before == signsim._kernel_cache_dir(PACKAGE)
    (copy / "stages" / "compressors" / "half_sign.py").write_text('NAME = "half-sign"\n', encoding="utf-8")
    for generated in ("stages/catalog.py", "stages/compressors/sign.py"):
        with open(copy / generated, "a", encoding="utf-8") as f:
            f.write("\n# edited\n")
    assert signsim._kernel_cache_dir(copy) == before


def test_the_cache_folder_follows_every_other_kernel_source(tmp_path):
    copy = _tree(tmp_path)
    before = signsim._kernel_cache_dir(copy)
    for shared in ("stages/rows.py", "stages/kinds.py", "stages/compressors/__init__.py", "engine/loop.py",
                   "problems/rosenbrock.py", "draws.py"):
        text = (copy / shared).read_text(encoding="utf-8")
        (copy / shared).write_text(text + "\n# edited\n", encoding="utf-8")
        assert signsim._kernel_cache_dir(copy) != before, shared
        (copy / shared).write_text(text, encoding="utf-8")
    assert signsim._kernel_cache_dir(copy) == before


def test_the_cache_folder_follows_numbas_optimization_level(monkeypatch):
    """Numba's cache keys on neither NUMBA_OPT nor anything it changes: kernels of each level go to a folder of
    their own, the default level's (set or not) to one."""
    monkeypatch.delenv("NUMBA_OPT", raising=False)
    unset = signsim._kernel_cache_dir()
    folders = {}
    # (Numba takes these exactly as written, and compiles at 3 for any other value)
    for level in ("3", "0", "1", "2", "max", " 1", "1 ", "MAX", "03", "4", ""):
        monkeypatch.setenv("NUMBA_OPT", level)
        folders[level] = signsim._kernel_cache_dir()
    assert all(folders[level] == unset for level in ("3", " 1", "1 ", "MAX", "03", "4", ""))
    assert len({folders[level] for level in ("3", "0", "1", "2", "max")}) == 5
    # the level an unset NUMBA_OPT gives, as Numba itself reads it (a fresh process)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_OPT"}
    default = subprocess.run([sys.executable, "-c", "from numba.core import config; print(int(config.OPT))"],
                             capture_output=True, text=True, env=env, check=True).stdout.strip()
    assert default == signsim.DEFAULT_OPT


def test_the_suite_compiles_at_its_level_in_that_levels_folder():
    """tests/conftest.py sets NUMBA_OPT=1 before signsim is imported (unless you set it or NUMBA_CACHE_DIR): Numba
    compiles at 1 here and the kernel cache folder is level 1's."""
    from numba.core import config

    from ..conftest import SUITE_OPT

    if SUITE_OPT is None:
        pytest.skip("NUMBA_OPT or NUMBA_CACHE_DIR was set before the suite started")
    assert os.environ["NUMBA_OPT"] == SUITE_OPT and int(config.OPT) == int(SUITE_OPT)
    assert os.environ["NUMBA_CACHE_DIR"] == signsim._kernel_cache_dir()


def test_a_stage_hashes_the_stages_it_takes_functions_from():
    names = [m.__name__ for m in stage_kernels._stage_dependencies(clag)]
    assert names == [clag.__name__, ef21.__name__]  # EF21's before/after/direction, by name
    assert set(stage_kernels._stage_dependencies(ipm_opt)) == {ipm_opt, ipm, alie_opt, alie}  # transitively
    assert stage_kernels._stage_dependencies(sign) == [sign]
    assert stage_kernels.source_hash(clag) != stage_kernels.source_hash(ef21)
    assert stage_kernels.source_hash(stage_kernels.NO_ATTACK) == ""  # no file: nothing compiled from it


def test_every_kernel_of_a_stage_carries_its_source_hash():
    for name, mod in (("sign", sign), ("clag", clag)):
        for worker in (True, False):
            attr = "kernel" if mod is sign else "before"
            name_of = stage_kernels.stage_function(mod, attr, worker).py_func.__name__
            assert stage_kernels.source_hash(mod) in name_of, name


def test_a_plan_s_type_names_its_own_stages_only(monkeypatch):
    """A composition's plan is compiled under its type (``signsim.engine.plan``), which names its stages with their
    source hashes: another stage's edit leaves it, its own stage's edit makes another type (compiled anew)."""
    from numba import typeof

    stages = {"compressor": sign, "error_feedback": clag}
    before = typeof(Stages(stages))
    real = stage_kernels.source_hash.__wrapped__

    def edited(of):  # another stage's source edited: nothing here changes
        return lambda mod: ("edited" if mod is of else real(mod))

    monkeypatch.setattr(stage_kernels, "source_hash", edited(alie))
    assert typeof(Stages(stages)) == before
    monkeypatch.setattr(stage_kernels, "source_hash", edited(clag))
    assert typeof(Stages(stages)) != before
    assert typeof(Stages(stages)) != typeof(Stages({"compressor": sign}))


def test_the_one_loop_key_follows_every_built_in_stage_on_a_workers_path_and_no_other(monkeypatch):
    """The one loop compiles a branch over the built-in stages of each kind with a worker's call (an edit of one
    compiles it anew) and calls the server's stages by address (an edited aggregation, pre-aggregation or server
    optimizer compiles its own kernels only: the loop's type, and so its cache entry, stays)."""
    from numba import typeof

    from signsim.engine.plan import WORKER_CALLS
    from signsim.stages import kinds

    # the kinds hashed: those whose built-in stages the worker step's calls branch over (plan._builtin_call)
    assert stage_kernels.inlined_kinds() == {kinds.base(kind.name) for kind, _ in WORKER_CALLS} == {
        "momentum", "compressor", "error_feedback", "attack", "estimator"}
    key = stage_kernels.builtin_key()
    assert stage_kernels.builtin_key.__wrapped__() == key and key in str(typeof(Stages(None)))
    real = stage_kernels.source_hash.__wrapped__
    worker = [sign, alie, registry.builtin("momentum")["ema"], registry.builtin("error_feedback")["ef"],
              registry.builtin("estimator")["diana"]]
    server = [registry.builtin(kind)[name] for kind, name in
              (("aggregation", "mean"), ("aggregation", "krum"), ("server_optimizer", "fedadam"),
               ("pre_aggregation", "nnm"))]
    for mod in worker + server:
        monkeypatch.setattr(stage_kernels, "source_hash", lambda m, of=mod: "edited" if m is of else real(m))
        assert (stage_kernels.builtin_key.__wrapped__() != key) == (mod in worker), mod.__name__


def test_a_plan_s_type_survives_numba_s_cache_index():
    """Numba keeps a compiled loop under its argument types in its index file (pickled): a plan's type must come
    back equal, in any process, so that the next run finds the loop."""
    import pickle
    import subprocess
    import sys

    from numba import typeof

    for plan in (Stages(None), Stages({"compressor": sign, "error_feedback": clag, "attack": stage_kernels.NO_ATTACK})):
        t = typeof(plan)
        assert pickle.loads(pickle.dumps(t)) == t and hash(pickle.loads(pickle.dumps(t))) == hash(t)
    full = typeof(plan_for("glm", {"compressor": sign}, "laplace"))
    assert pickle.loads(pickle.dumps(full)) == full
    code = ("import pickle, sys; from numba import typeof; from signsim.engine.plan import Stages, plan_for; "
            "from signsim.stages.compressors import sign; sys.stdout.buffer.write(pickle.dumps((typeof(Stages({"
            "'compressor': sign})), typeof(plan_for('glm', {'compressor': sign}, 'laplace')))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120, check=True).stdout
    assert pickle.loads(out) == (typeof(Stages({"compressor": sign})), full)


def test_a_call_on_a_plan_reaches_its_stage_with_the_table_s_arguments(monkeypatch):
    """Each call of the table of kinds (``plan.CALLS``) resolves, for a composition's own plan, to its stage's
    function with every argument but the code, in the table's order; for a worker's call in the plan of every
    built-in stage (the stages ``worker_plan`` gives the worker step: the plan's stages and the kernels it calls by
    address), to the built-in stage whose code is given, and past the built-ins' codes to a plugin's kernel by its
    address (the server's calls always go by address: ``plan._server_call``)."""
    from signsim.engine import plan
    from signsim.stages import kinds

    def recorder(module, attr, worker):
        def stage(*args):
            seen.append((module.NAME, attr, args))
            return "result"
        return stage

    def plugin(attr):  # a plugin's kernel, called by its address
        return lambda *args: seen.append(("plugin", attr, args))

    monkeypatch.setattr(stage_kernels, "stage_function", recorder)
    for kind in kinds.TABLE:
        modules = list(registry.builtin(kinds.base(kind.name)).values())
        for call in kind.calls:
            args = tuple(f"a{i}" for i in range(len(call.args)))
            seen = []
            out = plan._own_call(kind, call, modules[-1])("plan", "code", *args)
            assert seen == [(modules[-1].NAME, call.attr, args)], call.loop_name
            assert out == ("result" if call.returns else None), call.loop_name
            if not call.worker:
                continue
            every = plan._builtin_call(kind, call)
            fns = [None] * len(plan.BY_ADDRESS)
            fns[[c for _, c in plan.BY_ADDRESS].index(call)] = plugin(call.attr)
            for code, mod in enumerate(modules):
                seen = []
                every(("stages", fns), code, *args)
                assert seen == [(mod.NAME, call.attr, args)], (call.loop_name, code)
            seen = []
            every(("stages", fns), len(modules), *args)
            assert seen == [("plugin", call.attr, args)], call.loop_name


def test_the_hash_is_of_the_code_as_loaded_not_of_the_file_now(tmp_path):
    """A stage imported, then its file edited, then compiled: the kernel is compiled from the code in memory, so
    its name must carry that code's hash (a review found the old code cached under the edited file's hash, which a
    later process then loaded). The hash is also the same in every process (no address, no set order)."""
    import subprocess
    import sys

    from signsim.stages.momentum import ema

    assert stage_kernels.source_hash.__wrapped__(ema) == stage_kernels.source_hash(ema)
    code = ("from signsim.engine import stage_kernels; from signsim.stages.momentum import ema; "
            "print(stage_kernels.source_hash(ema))")
    seen = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                           env={**__import__("os").environ, "PYTHONHASHSEED": seed}).stdout.strip()
            for seed in ("0", "1", "2")}
    assert seen == {stage_kernels.source_hash(ema)}
    moved = tmp_path / "ema_copy.py"
    moved.write_text(Path(ema.__file__).read_text() + "\n# only a comment\n")
    original = ema.__file__
    try:
        ema.__file__ = str(moved)  # the file as it reads now differs; the code in memory does not
        assert stage_kernels.source_hash.__wrapped__(ema) == stage_kernels.source_hash(ema)
    finally:
        ema.__file__ = original
