"""Researchers' own stages (docs/api.md, "Your own stage"): the worked example of docs/api.md, written to a
temporary directory, runs end to end as a plugin (run, replay, bits, check-stage, a sweep with 2 jobs), and a plugin
that breaks the contract stops with one error line naming it."""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from signsim.engine import loop, stage_kernels
from signsim.engine.driver import simulate
from signsim.engine.reference import ReferenceRun

from ..conftest import make_engine

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def plugins_of_this_test_only():
    """The stages a test's plugins register leave with it: a plugin made to fail when used (a negative down_bits)
    would otherwise sit in the tables other tests of this process walk."""
    import sys

    from signsim.stages import plugins, registry

    kept = {kind: dict(table) for kind, table in registry.PLUGINS.items()}
    loaded = dict(plugins.LOADED)
    modules = {name for name in sys.modules if name.startswith("signsim_plugin_")}
    yield
    for name in [n for n in sys.modules if n.startswith("signsim_plugin_") and n not in modules]:
        del sys.modules[name]
    for kind, table in registry.PLUGINS.items():
        table.clear()
        table.update(kept.get(kind, {}))
    plugins.LOADED.clear()
    plugins.LOADED.update(loaded)
EXAMPLE = ROOT / "configs" / "plugins" / "scaled_sto_sign.py"


def example_source() -> str:
    """The plugin file of docs/api.md's worked example."""
    return EXAMPLE.read_text()


def test_the_worked_example_in_docs_is_the_example_file():
    section = (ROOT / "docs" / "api.md").read_text().split("## Your own stage", 1)[1]
    assert re.search(r"```python\n(.*?)```", section, re.S).group(1) == example_source()


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("plugin") / "scaled_sto_sign.py"
    p.write_text(example_source())
    return p


def test_the_documented_plugin_runs_replays_and_counts_its_bits(cli, plugin):
    r = cli("run", "--plugin", plugin, "--compressor", "scaled-sto-sign", "--aggregate", "mean", "--problem",
            "quadratic", "--dim", "8", "--workers", "3", "--iters", "6", "--eval-every", "1", "--json")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["status"] == "ok" and doc["stages"]["compressor"]["spec"] == "scaled-sto-sign"
    assert doc["stages"]["compressor"]["omega"] == 7.0
    ups = np.diff([row["bits_up"] for row in doc["history"]])
    assert np.all(ups == 3 * (8 + 32))  # d sign bits and one float per message, 3 workers
    assert np.all(np.diff([row["bits_down"] for row in doc["history"]]) == 3 * 32 * 8)  # floats
    engine, problem, model, params, settings, cfg = make_engine(
        plugin=str(plugin), compressor="scaled-sto-sign", aggregate="mean", problem="quadratic", dim=8, workers=3,
        iters=6, eval_every=1)
    simulate(engine)
    ref = ReferenceRun(problem, model, params, settings, cfg.workers, cfg.seed)
    for _ in range(6):
        ref.step()
    np.testing.assert_allclose(engine.x, ref.x, rtol=1e-12, atol=1e-14)
    assert engine.tally[loop.T_UP] == ref.bits_up and engine.tally[loop.T_DOWN] == ref.bits_down
    np.testing.assert_array_equal(engine.x, doc["x_final"])


def test_the_documented_plugin_passes_check_stage(cli, plugin):
    r = cli("check-stage", "scaled-sto-sign", "--plugin", plugin, "--samples", "400")
    assert r.code == 0, r.out + r.err
    assert "FAIL" not in r.out and "scaled-sto-sign" in r.out


def test_the_documented_plugin_in_a_sweep_with_two_jobs(cli, plugin, tmp_path):
    sweep = tmp_path / "s.toml"
    sweep.write_text('problem = "quadratic"\ndim = 6\nworkers = 3\niters = 5\ncompressor = "scaled-sto-sign"\n'
                     'aggregate = "mean"\n[grid]\nlr = [0.01, 0.02]\n')
    out = tmp_path / "out"
    r = cli("sweep", sweep, "--out", out, "--jobs", "2", "--force", "--plugin", plugin, "--json")
    assert r.code == 0, r.err
    assert r.json()["statuses"] == {"ok": 2}
    for f in (out / "runs").glob("*.json"):
        doc = json.loads(f.read_text())
        assert doc["stages"]["compressor"]["spec"] == "scaled-sto-sign"
        assert doc["config"]["plugin"] == str(plugin.resolve())


BROKEN = {
    "missing": ("NAME = 'p-missing'\n", "must declare"),
    "clash": ("NAME = 'sign'\n", "clashes with a built-in"),
    "not-compiling": ("NAME = 'p-bad-kernel'\n", "does not compile"),
    "non-finite": ("NAME = 'p-nan'\n", "non-finite"),
    "bad-bits": ("NAME = 'p-bits'\n", "bits"),
    "not-a-kind": ("NAME = 'p-kind'\n", "STAGE must be one of"),
}


def broken_source(case: str) -> str:
    src = example_source().replace('NAME = "scaled-sto-sign"\n', BROKEN[case][0])
    if case == "missing":
        src = src.replace("def bits(", "def _bits(")
    elif case == "not-compiling":
        src = src.replace("    return d + 32.0\n", "    return undefined_name + d\n")
    elif case == "non-finite":
        src = src.replace("            out[i] = 0.0\n        else:", "            out[i] = 0.0\n        elif i == 0:\n"
                          "            out[i] = math.nan\n        else:")
    elif case == "bad-bits":
        src = src.replace("    return d + 32.0\n", "    return -1.0\n")
    elif case == "not-a-kind":
        src = src.replace('STAGE = "compressor"', 'STAGE = "compresor"')
    return src


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_plugin_that_breaks_the_contract_gets_one_line_naming_it(cli, tmp_path, case):
    p = tmp_path / f"broken_{case.replace('-', '_')}.py"
    p.write_text(broken_source(case))
    name = BROKEN[case][0].split("'")[1]
    r = cli("run", "--plugin", p, "--compressor", name, "--aggregate", "mean", "--problem", "quadratic", "--dim",
            "4", "--workers", "2", "--iters", "2")
    lines = r.err.strip().splitlines()
    assert r.code == 2 and len(lines) == 1, r.err
    assert str(p.name) in lines[0] and BROKEN[case][1] in lines[0], lines[0]


def test_a_missing_plugin_file_is_exit_2(cli, tmp_path):
    r = cli("run", "--plugin", tmp_path / "nope.py", "--iters", "2")
    assert r.code == 2 and "nope.py" in r.err and len(r.err.strip().splitlines()) == 1


def test_an_edited_plugin_compiles_under_a_new_name(tmp_path, plugin):
    """Numba's cache does not notice an edited callee: the kernel's name carries a hash of the plugin's code as
    loaded; an edited file, loaded, is another hash; the file edited after its load does not change the loaded
    module's (its kernels are compiled from the code in memory)."""
    import importlib.util

    from signsim.stages import plugins

    mod = plugins.load_file(plugin)
    before = stage_kernels.stage_function(mod, "kernel", True).py_func.__name__
    assert stage_kernels.source_hash(mod) in before
    copy = tmp_path / "copy.py"
    copy.write_text(plugin.read_text() + "\n\ndef edited_helper(v):\n    return v\n")
    spec = importlib.util.spec_from_file_location("edited_copy", copy)
    edited = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(edited)
    assert stage_kernels.source_hash(edited) != stage_kernels.source_hash(mod)
    mod.__file__ = str(copy)  # the same module object, its file now edited on disk
    stage_kernels.source_hash.cache_clear()
    try:
        assert stage_kernels.source_hash(mod) == before.rsplit("__", 2)[-2]
    finally:
        mod.__file__ = str(plugin)
        stage_kernels.source_hash.cache_clear()


def test_python_api_takes_plugins(plugin):
    import signsim

    res = signsim.run(plugins=[plugin], compressor="scaled-sto-sign", aggregate="mean", problem="quadratic", dim=5,
                      workers=2, iters=3)
    assert res["status"] == "ok" and res["stages"]["compressor"]["spec"] == "scaled-sto-sign"


def test_python_api_names_an_empty_plugins_value():
    import signsim
    from signsim.errors import InputError

    for value in ("", " , "):
        with pytest.raises(InputError, match=r"^plugins '.*': an empty value is not allowed$"):
            signsim.run(plugins=value, iters=1)
    assert signsim.run(plugins=[], iters=1)["status"] == "ok"  # an empty list: no plugins


# --- what a user meets (issue 34, items 1-3): a plugin cannot corrupt memory, end signsim, or run stale ---------

def test_a_kernel_that_writes_past_its_array_is_one_line_not_a_corrupted_heap(cli, tmp_path):
    """One write past the end of out: with bounds checks in the smoke test it is caught before any run (exit 2,
    the plugin named), where unchecked it would overwrite the heap."""
    src = example_source()
    assert "    return d + 32.0" in src
    p = tmp_path / "oob.py"
    p.write_text(src.replace("    return d + 32.0", "    out[d] = 0.0\n    return d + 32.0").replace(
        'NAME = "scaled-sto-sign"', 'NAME = "one-past-the-end"'))
    for args in (("check-stage", "--plugin", p, "one-past-the-end"),
                 ("run", "--plugin", p, "--compressor", "one-past-the-end", "--aggregate", "mean", "--iters", "3")):
        r = cli(*args)
        assert r.code == 2, (args, r.err)
        assert "oob.py" in r.err and "outside an array" in r.err and "Traceback" not in r.err
        assert len(r.err.strip().splitlines()) == 1, r.err


def test_a_plugin_that_raises_systemexit_is_an_error_naming_it(cli, tmp_path):
    p = tmp_path / "quits.py"
    p.write_text("raise SystemExit(0)\n" + example_source().replace('NAME = "scaled-sto-sign"', 'NAME = "quits"'))
    r = cli("check-stage", "--plugin", p, "quits")
    assert r.code == 2 and "quits.py" in r.err and "SystemExit" in r.err


def test_a_refused_plugin_stays_refused_on_a_second_load(tmp_path):
    from signsim.errors import InputError
    from signsim.stages import plugins

    p = tmp_path / "clash.py"
    p.write_text(example_source().replace('NAME = "scaled-sto-sign"', 'NAME = "sign"'))
    for _ in range(2):  # the built-in name clash is found each time, not only the first
        with pytest.raises(InputError, match="clashes with a built-in"):
            plugins.load_file(p)


def test_a_copy_of_a_plugin_is_the_same_stage_and_another_source_of_its_name_clashes(tmp_path):
    """Two files of one source (a copy in another folder, under another name) register one stage, the last loaded;
    a file of another source declaring the same NAME is refused, naming the file that holds the name."""
    from signsim.errors import InputError
    from signsim.stages import plugins, registry

    source = example_source().replace('NAME = "scaled-sto-sign"', 'NAME = "copied"')
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "first.py").write_text(source)
    (tmp_path / "second.py").write_text(source)
    plugins.load_file(tmp_path / "a" / "first.py")
    copy = plugins.load_file(tmp_path / "second.py")
    assert registry.stages("compressor")["copied"] is copy
    (tmp_path / "other.py").write_text(source.replace('SUMMARY = "', 'SUMMARY = "other: '))
    with pytest.raises(InputError, match=r"other\.py.*'copied' clashes with the plugin .*second\.py"):
        plugins.load_file(tmp_path / "other.py")

def test_an_edited_plugin_is_loaded_afresh_in_the_same_process(tmp_path):
    """A notebook edits its plugin and runs again: the new source is the stage that runs."""
    from signsim.stages import plugins, registry

    p = tmp_path / "edited_in_place.py"
    p.write_text(example_source().replace('NAME = "scaled-sto-sign"', 'NAME = "edited-in-place"'))
    first = plugins.load_file(p)
    p.write_text(p.read_text().replace('SUMMARY = "', 'SUMMARY = "edited: '))
    second = plugins.load_file(p)
    assert second is not first and second.SUMMARY.startswith("edited: ")
    assert registry.stages("compressor")["edited-in-place"] is second


# --- a plugin's declarations and results, checked where they are used (issue 50: tracebacks, silent acceptance,
# corruption off the smoke test's path) ------------------------------------------------------------------------

PRE = '''
STAGE = "pre_aggregation"
NAME = "{name}"
PARAMS = ()
SUMMARY = "a test's pre-aggregation"
THEORY = "a test"


def rows(n, params):
    return {rows}


def pre(msg, n, p, gen):
    return {kept}


def reference(msgs, params, gen):
    return msgs
'''


@pytest.mark.parametrize("rows, kept, says", [
    ("n", "n + 3 if gen.random() < 0.05 else n", "contract forbids"),  # a kernel keeping more rows than it got
    ("'n'", "n", "rows() returned"),  # a declaration of the wrong type
    ("n + 3", "n", "rows() returned"),
    ("1 // 0", "n", "rows() raised ZeroDivisionError"),
])
def test_a_pre_aggregation_that_keeps_rows_it_does_not_have_is_one_line(cli, tmp_path, rows, kept, says):
    p, name = tmp_path / "pre_rows.py", f"p-rows-{tmp_path.name[-12:]}"  # (a name of its own: one process)
    p.write_text(PRE.format(name=name, rows=rows, kept=kept))
    r = cli("run", "--plugin", p, "--pre-aggregate", name, "--aggregate", "mean", "--compressor", "identity",
            "--workers", "4", "--iters", "200", "--quiet")
    lines = r.err.strip().splitlines()
    assert r.code == 2 and len(lines) == 1, r.err
    assert "pre_rows.py" in lines[0] and says in lines[0], lines[0]


@pytest.mark.parametrize("body, says", [
    ("    out[d + 5] = 0.0\n", "outside an array"),  # a write past out, only in some rounds
    ("    return -1.0\n", "bits"),  # a bit count that is negative, only in some rounds
])
def test_a_kernel_fault_off_the_smoke_tests_path_stops_the_run_in_one_line(cli, tmp_path, body, says):
    """The fault happens in about one call in 200 (random draws of the run's own streams): the smoke test's few calls
    rarely meet it, the run's 800 calls do. Either way: exit 2, one line naming the file, no corrupted memory, and
    the results up to the faulty round kept (status "failed", the line as its error; issue 50: they were lost)."""
    name = f"rare-fault-{tmp_path.name[-12:]}"
    src = example_source().replace('NAME = "scaled-sto-sign"', f'NAME = "{name}"')
    src = src.replace("    return d + 32.0\n", "    if gen.random() < 0.005:\n    " + body + "    return d + 32.0\n")
    p = tmp_path / "rare_fault.py"
    p.write_text(src)
    out = tmp_path / "partial.json"
    r = cli("run", "--plugin", p, "--compressor", name, "--aggregate", "mean", "--workers", "8",
            "--iters", "100", "--eval-every", "1", "--out", out, "--quiet")
    lines = r.err.strip().splitlines()
    assert r.code == 2 and len(lines) == 1, r.err
    assert "rare_fault.py" in lines[0] and says in lines[0] and "Traceback" not in r.err, lines[0]
    doc = json.loads(out.read_text())
    k = doc["final"]["iters_done"]
    assert doc["status"] == "failed" and lines[0] == f"signsim: error: {doc['error']}" and f"round {k}" in lines[0]
    assert 0 < k < 100 and [row["iter"] for row in doc["history"]] == list(range(k + 1))


def test_a_trusted_plugin_is_compiled_without_bounds_checks():
    from signsim.stages import plugins

    trusted, untrusted = type(plugins)("t"), type(plugins)("u")
    trusted.TRUSTED, trusted.__file__, untrusted.__file__ = True, "/x/t.py", "/x/u.py"
    assert plugins.bounds_checked(untrusted) and not plugins.bounds_checked(trusted)


ERROR_FEEDBACK_WIDTH = '''
import numpy as np
STAGE = "error_feedback"
NAME = "p-width-{name}"
PARAMS = ()
SUMMARY = "a test's error feedback"
THEORY = "a test"
STATE = True
STATE_WIDTH = {width}
'''


@pytest.mark.parametrize("width", ["-1", "None", "0", "1.5", "True"])
def test_a_bad_state_width_is_one_line(cli, tmp_path, width):
    p = tmp_path / "width.py"
    p.write_text(ERROR_FEEDBACK_WIDTH.format(width=width, name=tmp_path.name[-12:]))
    r = cli("run", "--plugin", p, "--iters", "2")
    lines = r.err.strip().splitlines()
    assert r.code == 2 and len(lines) == 1 and "width.py" in lines[0], r.err


@pytest.mark.parametrize("value, says", [("-5", "down_bits() returned -5"), ("float('nan')", "down_bits() returned"),
                                         ("'32'", "down_bits() returned"), ("1 // 0", "down_bits() raised")])
def test_a_bad_down_bits_is_one_line(cli, tmp_path, value, says):
    src = (ROOT / "signsim" / "stages" / "aggregation" / "mean.py").read_text()
    name = f"p-mean-{tmp_path.name[-12:]}"
    src = src.replace('NAME = "mean"', f'NAME = "{name}"\nSTAGE = "aggregation"')
    src = re.sub(r"def down_bits\(([^)]*)\):\n(    .*\n)+", rf"def down_bits(\1):\n    return {value}\n", src)
    p = tmp_path / "down.py"
    p.write_text(src)
    r = cli("run", "--plugin", p, "--aggregate", name, "--compressor", "identity", "--iters", "2", "--quiet")
    lines = r.err.strip().splitlines()
    assert r.code == 2 and len(lines) == 1, r.err
    assert "down.py" in lines[0] and says in lines[0], lines[0]


def test_a_fault_mid_run_returns_the_results_so_far_from_python_and_stops_a_comparison(tmp_path, cli):
    """``signsim.run`` returns a run a plugin's fault stopped (status failed, its line as error, also a warning); a
    [[compare]] stops at it and says failed."""
    import signsim

    from ..hostile.test_hostile_classes import FAULT_PLUGIN

    p = tmp_path / "generated_fault.py"
    p.write_text(FAULT_PLUGIN)
    with pytest.warns(UserWarning, match="the run failed: plugin .*generated_fault.py: a kernel indexed outside"):
        res = signsim.run(plugins=[p], compressor="generated-fault:0:0.05:4", aggregate="mean", problem="quadratic",
                          workers=8, iters=100, eval_every=1)
    assert res.status == "failed" and "outside an array" in res["error"] and 0 < res["final"]["iters_done"] < 100
    config = tmp_path / "c.toml"
    config.write_text(f'problem = "quadratic"\nworkers = 8\niters = 100\nplugin = "{p}"\n[[compare]]\nlabel = "a"\n'
                      'compressor = "generated-fault:0:0.05:4"\naggregate = "mean"\n[[compare]]\nlabel = "b"\n')
    r = cli("run", "--config", config, "--json", "--quiet")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
    doc = r.json()
    assert doc["status"] == "failed" and [d["label"] for d in doc["runs"]] == ["a"]
