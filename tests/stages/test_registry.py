"""One table of truth: every registry entry (problem, noise model, method, stage) is wired through dispatch,
accounting, the NumPy reference, ``signsim list`` and the CLI help. A new entry is tested the day it is added."""

import os

import numpy as np
import pytest

from signsim import accounting, methods, noise, problems, stages
from signsim.codes import Noise, Problem, SignZero, Tie
from signsim.engine import dispatch
from signsim.engine.driver import simulate
from signsim.engine.reference import ReferenceRun
from signsim.stages import registry

from ..conftest import make_engine

PROBLEMS = list(problems.registry())
NOISES = list(noise.registry())
METHODS = list(methods.registry())


def noise_spec(name):
    return noise.registry()[name].example_spec


def test_codes_are_assigned_once_and_match_the_registries():
    assert sorted(s.code for s in problems.registry().values()) == sorted(int(c) for c in Problem)
    assert sorted(m.code for m in noise.registry().values()) == sorted(int(c) for c in Noise)
    for kind in registry.BUILTIN:  # every built-in stage module named once, under the name it declares
        mods = registry.builtin(kind)
        assert len(mods) == len(registry.BUILTIN[kind])
        assert [m.__name__.rsplit(".", 1)[1] for m in mods.values()] == list(registry.BUILTIN[kind])


def test_every_problem_code_belongs_to_exactly_one_family_of_loops():
    for spec in problems.registry().values():
        owners = [f for f, modules in dispatch.FAMILIES.items() if any(spec.code in codes for _, codes in modules)]
        assert len(owners) == 1, (spec.name, owners)
        assert dispatch.family_of(spec.code) == owners[0]
    modules = [m for family in dispatch.FAMILIES.values() for m, _ in family]
    assert len(modules) == len(set(modules))
    with pytest.raises(ValueError, match="no family"):
        dispatch.family_of(10_000)
    with pytest.raises(ValueError, match="unknown problem code"):
        dispatch.check_code(10_000)


def test_a_family_loop_refuses_a_problem_of_another_family():
    """The stand-ins match no code, so a problem outside the family is an unknown code there, checked before
    the loop starts (never a silent NaN run)."""
    from signsim.engine import loop

    e, p, *_ = make_engine(problem="quadratic", dim=3, method="signsgd", iters=2)
    icfg = e.icfg.copy()
    icfg[loop.I_PROBLEM] = problems.get("logistic").code
    assert dispatch.family_of(int(icfg[loop.I_PROBLEM])) == "glm"
    from signsim.engine import compose

    serial, plan = compose.loops("analytic", e.settings.stages(), False)
    data, workers, server, run, gens = e.bundles()
    with pytest.raises(ValueError, match="unknown problem code"):
        serial(plan, 0, 1, 1, data, workers, server, run._replace(icfg=icfg), gens)


@pytest.mark.parametrize("problem", PROBLEMS)
def test_every_problem_runs_through_dispatch_and_the_reference(problem):
    # plain SGD: x moves by the gradient itself, so any wrong coordinate shows (its loops are shared with other tests)
    options = {"problem": problem, "method": "sgd", "iters": 2}
    if problem in ("logistic", "least-squares", "mlp", "model"):
        options.update(workers=2, batch_size=2)
    if problem == "model":  # your own PyTorch model: compile's model file (torch: tests/torch/test_torch_model.py)
        if os.environ.get("SIGNSIM_REQUIRE_TORCH") != "1":
            pytest.importorskip("torch")
        from signsim.commands.compile import COMPILE_MODEL

        options.update(model=str(COMPILE_MODEL))
    engine, prob, model, params, settings, cfg = make_engine(**options, eval_every=1)
    out = simulate(engine)
    assert out.status == "ok" and out.iters_done == 2
    ref = ReferenceRun(prob, model, params, settings, cfg.workers, cfg.seed)
    ref.step()
    ref.step()
    # the example model computes in float32: its reference means per-sample gradients, the engine's vmap the mean loss
    rtol, atol = (1e-6, 1e-9) if problem == "model" else (1e-10, 1e-12)
    np.testing.assert_allclose(engine.x, ref.x, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", NOISES)
def test_every_noise_model_runs_through_dispatch_and_the_reference(name):
    engine, prob, model, params, settings, cfg = make_engine(problem="quadratic", dim=4, noise=noise_spec(name),
                                                             method="sgd", iters=3, eval_every=1, workers=2)
    simulate(engine)
    ref = ReferenceRun(prob, model, params, settings, cfg.workers, cfg.seed)
    for _ in range(3):
        ref.step()
    np.testing.assert_allclose(engine.x, ref.x, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", list(stages.COMPRESSORS))
def test_every_compressor_has_accounting_a_reference_and_a_constant(name):
    info = stages.COMPRESSORS[name]
    stage = stages.parse_compressor({"noisy-sign": "noisy-sign:1"}.get(name, name), 20)
    assert accounting.uplink_bits(stage, 20, SignZero.RANDOM) > 0
    for agg in stages.AGGREGATES:  # with a parameter where one is required
        spec = {"krum": "krum:1", "cclip": "cclip:1", "multikrum": "multikrum:1", "meamed": "meamed:1",
                "monna": "monna:1", "mda": "mda:1", "caf": "caf:1", "smea": "smea:1"}.get(agg, agg)
        assert accounting.downlink_bits(stage, spec, 5, 20, SignZero.RANDOM, Tie.RANDOM) > 0
    out = stage.module.reference(np.linspace(-1, 1, 20), stage.params, SignZero.RANDOM, np.random.default_rng(0))
    assert out.shape == (20,)
    assert info.kind in ("unbiased", "contractive", "biased")
    assert (stage.module.constant(20, *stage.params) is None) == (info.kind == "biased")


def test_unknown_codes_raise_in_every_dispatch():
    x = np.zeros(2)
    empty = np.zeros(0)
    with pytest.raises(ValueError, match="problem"):  # (the analytic family's copy, the one the loops call)
        dispatch.compiled("problem_loss", "analytic")(99, x, empty, np.zeros(0, dtype=np.int64), np.zeros((0, 0)),
                                                      empty)
    with pytest.raises(ValueError, match="problem"):  # the history's evaluation of the problems without data
        dispatch.compiled("problem_evaluate", "analytic")(99, x, empty, np.zeros(0, dtype=np.int64),
                                                          np.zeros((0, 0)), empty, np.zeros(2))
    # inside parallel loops: NaN
    assert np.isnan(dispatch.compiled("noise_draw", "analytic")(99, np.random.default_rng(0), empty))
    with pytest.raises(ValueError, match="noise"):
        dispatch.check_noise(99)
    with pytest.raises(ValueError, match="problem"):
        dispatch.compiled("check_problem", "analytic")(99)
    for code in Problem:
        dispatch.check_code(int(code))
        dispatch.compiled("check_problem", dispatch.family_of(int(code)))(int(code))
    for code in Noise:
        dispatch.check_noise(int(code))


def test_list_and_help_name_every_registry_entry(cli):
    listed = cli("list").out
    helped = " ".join(cli("run", "--help").out.split())
    builtin = {kind: list(registry.builtin(kind)) for kind in registry.BUILTIN}  # plugins loaded by other tests aside
    for name in PROBLEMS + NOISES + METHODS + builtin["compressor"]:
        assert name in listed, name
    for name in PROBLEMS + METHODS + builtin["compressor"] + builtin["aggregation"] + builtin["attack"]:
        assert name in helped, name
    for name in NOISES:
        assert name in helped or name == "none", name
    for name in builtin["error_feedback"]:
        assert name in helped


FAMILY_ISOLATION = """
import numpy as np
from signsim.interface import config
from signsim.engine.build import build
from signsim.engine.driver import simulate
from signsim.problems import glm, mlp

engine = build(config.resolve({"problem": "rosenbrock", "method": "ssdm", "iters": 5, "eval_every": 5,
                                "workers": 3})).engine
engine.advance(2)
engine.record_now()  # the row an interrupt records: with the family's record, not a generic one
assert engine.history()[-1, 0] == 2
out = simulate(engine)
assert out.status == "ok", out.status
compiled = {name: k.signatures for name, k in [("glm.oracle", glm.oracle), ("glm.evaluate", glm.evaluate),
            ("glm.loss", glm.loss), ("mlp.oracle", mlp.oracle), ("mlp.evaluate", mlp.evaluate),
            ("mlp.loss", mlp.loss), ("mlp.grad", mlp.grad)]}
assert not any(compiled.values()), compiled
print("isolated")
"""


@pytest.mark.slow  # compiles a family's kernels from an empty cache of its own
def test_a_run_compiles_no_kernel_of_another_family(tmp_path):
    """The point of the loops per family: with an empty kernel cache, a Rosenbrock run (and the row an
    interrupt records) compiles none of the GLM's or the MLP's kernels (a fresh process: nothing compiled
    before it)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    r = subprocess.run([sys.executable, "-c", FAMILY_ISOLATION], capture_output=True, text=True, env=env,
                       timeout=600)
    assert r.returncode == 0 and "isolated" in r.stdout, r.stderr[-2000:]


WORKER_STEP_FIRST = """
from signsim.interface import config
from signsim.engine.build import build
from signsim.engine.driver import simulate

for problem in ("logistic", "mlp"):
    engine = build(config.resolve({"problem": problem, "method": "signum", "iters": 2, "workers": 2,
                                    "batch_size": 2})).engine
    assert simulate(engine).status == "ok", problem
print("compiled")
"""


@pytest.mark.slow  # compiles a family's kernels from an empty cache of its own
def test_each_data_family_compiles_with_its_worker_step_first(tmp_path):
    """The worker step is compiled without Numba's runtime, and the kernels it calls inherit that unless they
    ask for it; an allocating kernel on the workers' path that forgot to ask compiles only if something else
    compiled it first. A fresh process with an empty cache compiles each data family's loop before anything
    else, so such a kernel fails here (the analytic family is covered by the isolation test above)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    r = subprocess.run([sys.executable, "-c", WORKER_STEP_FIRST], capture_output=True, text=True, env=env,
                       timeout=900)
    assert r.returncode == 0 and "compiled" in r.stdout, r.stderr[-2000:]


def test_a_stage_module_in_its_folder_is_registered():
    """A new compressor, aggregation, attack, ... is one file: a module of its folder that declares NAME is in the
    catalog the generator writes (so in list, --help, the docs' stage tables, the generated dispatch), after the
    stages already there (their codes stay)."""
    import importlib
    from pathlib import Path

    from signsim.stages import catalog, kinds

    for kind in kinds.PRIMARY:
        folder = Path(registry.__file__).parent / kind.folder
        for path in sorted(folder.glob("*.py")):
            if path.stem.startswith("_"):
                continue
            mod = importlib.import_module(f"signsim.stages.{kind.folder}.{path.stem}")
            if hasattr(mod, "NAME"):  # a stage, not a helper module (adaptive.py)
                assert path.stem in registry.BUILTIN[kind.name], (kind.name, path.stem)
        assert [entry[1] for entry in catalog.STAGES[kind.name]] == list(registry.builtin(kind.name))


def _names(spec_list: str) -> list[str]:
    """The stage names of "a | b:X | c[:Y|Z]" or "a|b:X" (each alternative's word before its parameters)."""
    import re

    parts = re.split(r"\\?\|(?![^\[]*\])", spec_list)  # not the | of a choice inside [...]
    return [re.split(r"[:\[]", part.strip())[0] for part in parts if part.strip()]


def test_the_readme_names_only_stages_that_exist():
    """The README's paragraph of stages is prose (its own words for parameters, σ and ζ); every stage it names is
    one (a renamed or removed stage is caught), and the complete lists are generated: --help, signsim list and
    docs/reference.md's stage tables."""
    import re
    from pathlib import Path

    from signsim.stages import catalog

    known = {entry[1] for entries in catalog.STAGES.values() for entry in entries} | set(METHODS)
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    paragraph = readme.split("A method is a composition of stages", 1)[1].split("\n\n", 1)[0]
    checked = 0
    for span in re.findall(r"`([^`]+)`", paragraph):
        if span.startswith("--"):  # an option with a value: the value, when the option names a stage
            flag, _, span = span.partition(" ")
            if flag not in STAGE_FLAGS:
                continue
        if re.fullmatch(r"[a-z][a-z0-9-]*([:|].*)?", span):
            for name in _names(span):
                assert name in known, (span, name)
                checked += 1
    assert checked > 50


#: each option that names a stage (or a method), and the kind whose built-in names its help must list
HELP_LISTS = {"compressor": "compressor", "aggregate": "aggregation", "attack": "attack",
              "error_feedback": "error_feedback", "grad_estimator": "estimator", "server_opt": "server_optimizer",
              "down_feedback": "error_feedback", "pre_aggregate": "pre_aggregation"}
STAGE_FLAGS = {"--" + o.replace("_", "-"): k for o, k in HELP_LISTS.items()} | {"--down-compressor": "compressor"}


def _listed(help_text: str) -> set[str]:
    """The names of a help line's "a | b:X | c[:Y]" list (before the first parenthesis, after a "words: ")."""
    return set(_names(help_text.split("(")[0].rsplit(": ", 1)[-1]))


def _expected(option: str, kind: str) -> list:
    mods = list(registry.builtin(kind).values())
    if option == "down_feedback":  # a lazy error feedback (CLAG) is for the workers' messages only
        mods = [m for m in mods if not getattr(m, "LAZY", False)]
    return mods


def test_each_stage_options_help_lists_exactly_the_builtin_stages():
    """The lists are generated from the catalog: each stage's spec form (``NAME:...`` when too long for the help
    column at 80 columns), in the catalog's order."""
    from signsim.interface import options
    from signsim.interface.options import RECORD

    for option, kind in HELP_LISTS.items():
        mods = _expected(option, kind)
        listed = " | ".join(options.help_form(m.NAME, registry.form(m)) for m in mods)
        assert listed + " (" in RECORD[option].help, option
        assert _listed(RECORD[option].help) == {m.NAME for m in mods}, option
    assert _listed(RECORD["method"].help) == set(methods.registry()), "method"


def test_the_reference_rows_of_the_stage_options_point_to_the_stage_tables():
    """docs/reference.md's row of each stage option names stages in its own words (a few, or all with their
    parameters' meaning); the complete list is the generated Stages tables, which each row points to, and the
    list in a row's flag column (``--error-feedback none|ef|ef21|clag[:ZETA]``) names only built-in stages."""
    from pathlib import Path

    from signsim.stages import catalog

    reference = (Path(__file__).resolve().parents[2] / "docs" / "reference.md").read_text(encoding="utf-8")
    for flag, kind in STAGE_FLAGS.items():
        (row,) = [line for line in reference.splitlines() if line.startswith(f"| `{flag} ")]
        assert "[Stages](#stages)" in row, flag
        listed = row.split("`")[1].partition(" ")[2]
        if listed.upper() != listed:  # a list of stages, not SPEC or RULE
            assert set(_names(listed)) <= {entry[1] for entry in catalog.STAGES[kind]} | {"none"}, (flag, listed)
