"""``signsim check-stage`` for a stage of every kind (``signsim.diagnostics.stage_replay``): the stage in a short run
of the compiled loop against the NumPy replay, whose step is the module's own ``reference``. The issue's examples
pass; a plugin whose kernel and reference disagree fails (exit 1) and says what differs; a name several kinds share
needs ``--kind``."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("args", [("krum:1",), ("geomed",), ("nnm:1",), ("bucketing:2",), ("alie:1",), ("fedadam",),
                                  ("diana:0.5",), ("clag:1",), ("lion", "--kind", "momentum")])
def test_a_built_in_stage_of_every_kind_passes(cli, args):
    r = cli("check-stage", *args)
    assert r.code == 0, r.err
    assert "compiled loop against the NumPy reference" in r.out and r.out.strip().endswith("ok"), r.out


@pytest.fixture
def stage_registry_restored():
    import sys

    from signsim.stages import plugins, registry

    kept = {kind: dict(table) for kind, table in registry.PLUGINS.items()}
    loaded, modules = dict(plugins.LOADED), set(sys.modules)
    yield
    for kind, table in registry.PLUGINS.items():
        table.clear()
        table.update(kept.get(kind, {}))
    plugins.LOADED.clear()
    plugins.LOADED.update(loaded)
    for name in set(sys.modules) - modules:
        if name.startswith("signsim_plugin_"):
            del sys.modules[name]


def test_a_plugin_whose_kernel_and_reference_disagree_fails(cli, tmp_path, stage_registry_restored):
    src = (ROOT / "signsim" / "stages" / "aggregation" / "mean.py").read_text()
    src = src.replace('NAME = "mean"', 'NAME = "skewed-mean"\nSTAGE = "aggregation"')
    assert src.count("    return total / msgs.shape[0]\n") == 1  # the reference's last line
    src = src.replace("    return total / msgs.shape[0]\n", "    return 1.01 * total / msgs.shape[0]\n")
    p = tmp_path / "skewed_mean.py"
    p.write_text(src)
    r = cli("check-stage", "skewed-mean", "--plugin", p)
    assert r.code == 1, r.err
    assert "FAILED" in r.out and "iterates differ from the NumPy reference" in r.out, r.out


@pytest.mark.parametrize("args, says", [
    (("none",), "give --kind"),
    (("none", "--kind", "bogus"), "--kind bogus"),
    (("krum:x",), "krum"),
    # a name no kind has: the closest of any kind, with its kind (a method's name is not a stage's)
    (("signum",), "no stage of any kind has this name (did you mean 'sign', a stage of the kind compressor?)"),
    (("krumm:1",), "(did you mean 'krum', a stage of the kind aggregation?)"),
    (("topk:3",), "(did you mean 'top-k', a stage of the kind compressor?)"),
])
def test_an_ambiguous_or_bad_spec_is_one_line(cli, args, says):
    r = cli("check-stage", *args)
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and says in r.err, r.err


def test_a_kernel_that_indexes_outside_an_array_in_some_draws_is_one_line(cli, tmp_path):
    """Issue 50 (class 4): check-stage on a plugin whose kernel writes past ``out`` in about one draw in 100 (the
    smoke test's few calls miss it, the contract's thousands meet it) gave an IndexError traceback."""
    from ..hostile.test_hostile_classes import FAULT_PLUGIN

    p = tmp_path / "rare_oob.py"
    p.write_text(FAULT_PLUGIN)
    r = cli("check-stage", "--plugin", p, "generated-fault:0:0.01:4")
    lines = r.err.strip().splitlines()
    assert r.code == 2 and len(lines) == 1 and "Traceback" not in r.err, r.err
    assert "rare_oob.py" in lines[0] and "outside an array" in lines[0], lines[0]
