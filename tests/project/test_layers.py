"""Imports point one way (issue #12, item 5): every ``import`` in signsim (at the top of a module or inside a
function, and ``importlib.import_module`` of a literal or f-string name) goes to a lower layer or stays in its
own group:

    entry        cli.py, api.py
    commands     commands/
    render       render/                    (reads the history's and the tracked quantities' fields)
    diagnostics  diagnostics/   |  sweep    sweep/
    engine       engine/
    config       interface/config.py, interface/experiment_config.py   (each config section parsed here, below
                 the commands), interface/composition.py (a run's composition checked)
    domain       problems/, methods/, noise/, data/, system/, resources.py, torch/
    base         the package itself (__version__), errors, codes, history, seeding, draws, memory, stages/,
                 accounting.py, rounds.py (pure functions of the settings), paths.py (files read and written),
                 suggest.py (did you mean), and the rest of interface/: options, results, interrupts, transform_specs

Two groups of the same layer do not import each other. Exceptions, each for a stated reason:

* the package facades ``signsim/__init__.py`` and ``signsim/sweep/__init__.py`` load ``signsim.api`` (and
  ``signsim.sweep``) on first use: they are the API's names ``signsim.run``, ``signsim.sweep(...)``;
* a command imports another command only to compose it (ORCHESTRATION below: compare, sweep and the
  experiments run ``run`` or ``diversity``; ``experiments`` dispatches to the experiment commands), and only
  the names that command offers for composing (COMPOSABLE); shared computation lives below the commands.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "signsim"

#: layer of each group, low to high
RANK = {"base": 0, "domain": 1, "config": 2, "engine": 3, "diagnostics": 4, "sweep": 4, "render": 5,
        "commands": 6, "entry": 7}
#: the group of a module: the first prefix that matches it (longest prefixes first)
GROUPS = {
    "signsim.cli": "entry", "signsim.api": "entry", "signsim.__main__": "entry",
    "signsim.commands": "commands",
    "signsim.render": "render",
    "signsim.diagnostics": "diagnostics",
    "signsim.sweep": "sweep",
    "signsim.engine": "engine",  # the loop, its driver and engine.build, which assembles a run
    "signsim.interface.config": "config", "signsim.interface.experiment_config": "config",
    "signsim.interface.composition": "config",  # a run's composition checked in one place, with the config
    "signsim.interface.step_sizes": "config",  # --lr theory: resolved with the config, from the problem's constants
    "signsim.problems": "domain", "signsim.methods": "domain", "signsim.noise": "domain", "signsim.data": "domain",
    "signsim.resources": "domain",
    "signsim.system": "domain",  # the system model: the workers' compute times and links (docs/theory.md §14)
    "signsim.torch": "domain",  # your own PyTorch model: the model problem's oracle, its file's contract, the DDP hook
    "signsim.errors": "base", "signsim.codes": "base", "signsim.history": "base", "signsim.stages": "base",
    "signsim.seeding": "base", "signsim.draws": "base", "signsim.numbers": "base", "signsim.memory": "base",
    "signsim.accounting": "base", "signsim.rounds": "base",  # pure functions of the settings
    "signsim.paths": "base", "signsim.suggest": "base",  # files read and written; the one "did you mean"
    "signsim.interface": "base",  # options, results, interrupts, transform_specs
    "signsim": "base",
}
#: (importer, imported) module pairs allowed against the layers, with their reason
FACADES = {
    ("signsim", "signsim.api"): "signsim.run etc. are the API's functions, loaded on first use",
    ("signsim", "signsim.sweep"): "signsim.sweep is the API's sweep function, loaded on first use",
    ("signsim.sweep", "signsim.api"): "the package signsim.sweep is callable as signsim.api.sweep",
}
#: command -> the commands it composes
ORCHESTRATION = {
    "compare": {"run"},  # runs each [[compare]] variant
    "sweep": {"run"},  # hands run to the executors as the runner of every task
    "replication": {"run", "diversity"},  # runs to a target loss, B_S where the B = 1 run reaches it
    "heuristics": {"run"},  # runs to a target loss with and without Langevin noise
    "dimension": {"diversity"},  # B_S of generated data per dimension
    "conflicts": {"diversity"},  # B_S of sparse data per conflict degree
    "lower_bound": {"run"},  # runs to a target loss per batch size
    "compile": {"sweep"},  # a sweep's compile notices: the runs it plans
    "experiments": {"replication", "dimension", "heuristics", "stability", "conflicts", "lower_bound"},
}
#: the names a composed command offers for composing (its entry point, its options, shared orchestration)
COMPOSABLE = {
    "run": {"run", "iterations_to_target", "first_hit"},
    "diversity": {"diversity", "DiversityOptions"},
    "replication": {"replication"},
    "dimension": {"dimension"},
    "heuristics": {"heuristics"},
    "stability": {"stability"},
    "conflicts": {"conflicts"},
    "lower_bound": {"lower_bound"},
    "sweep": {"plan"},
}


ORDER = " < ".join(" = ".join(g for g in RANK if RANK[g] == r) for r in sorted(set(RANK.values())))


def group(module: str) -> str | None:
    for prefix in sorted(GROUPS, key=len, reverse=True):
        if module == prefix or module.startswith(prefix + "."):
            return GROUPS[prefix]
    return None


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(base: str, name: str, known: set[str]) -> str:
    """``from base import name``: the submodule base.name when there is one, else base itself."""
    return f"{base}.{name}" if f"{base}.{name}" in known else base


def imports(source: str, module: str, is_package: bool, known: set[str],
            dynamic: bool = True) -> list[tuple[str, int, set[str]]]:
    """(imported signsim module, line, names taken from it) for every import in ``source``; ``dynamic``: also
    ``import_module(f"signsim.problems.{m}")``, counted as an import of the package its name begins with."""
    out: list[tuple[str, int, set[str]]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno, set()) for a in node.names if a.name.split(".")[0] == "signsim"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the importer's package
                pkg = module.split(".") if is_package else module.split(".")[:-1]
                pkg = pkg[: len(pkg) - (node.level - 1)]
                base = ".".join(pkg + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base.split(".")[0] != "signsim":
                continue
            names = {a.name for a in node.names}
            targets: dict[str, set[str]] = {}
            for name in names:
                targets.setdefault(_resolve(base, name, known), set()).add(name)
            out += [(t, node.lineno, n) for t, n in targets.items()]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) \
                == "import_module" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                name = arg.value
            elif dynamic and isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
                name = str(arg.values[0].value).rsplit(".", 1)[0]  # f"signsim.problems.{m}": the package
            else:
                continue
            if name.split(".")[0] == "signsim":
                out.append((name, node.lineno, set()))
    return out


def violations(sources: dict[str, tuple[str, bool]]) -> list[str]:
    """Every import among ``sources`` (module name -> (source, is package)) that points the wrong way."""
    known = set(sources)
    found = []
    for module, (source, is_package) in sorted(sources.items()):
        mine = group(module)
        assert mine is not None, f"{module}: in no layer; add it to GROUPS in tests/project/test_layers.py"
        for target, line, names in imports(source, module, is_package, known):
            theirs = group(target)
            where = f"{module}:{line} imports {target}"
            if theirs is None:
                found.append(f"{where}: {target} is in no layer")
            elif (module, target) in FACADES or mine == "entry":
                continue
            elif mine == "commands" and theirs == "commands":
                me, it = module.split(".")[2:3], target.split(".")[2:3]
                if not it or me == it:
                    continue
                if it[0] not in ORCHESTRATION.get(me[0] if me else "", set()):
                    found.append(f"{where}: a command imports another command only to compose it "
                                 f"(ORCHESTRATION); move what they share below the commands")
                elif not names <= COMPOSABLE.get(it[0], set()):
                    found.append(f"{where}: {sorted(names - COMPOSABLE.get(it[0], set()))} are not among the names "
                                 f"{it[0]} offers for composing (COMPOSABLE)")
            elif mine == theirs:
                continue
            elif RANK[theirs] >= RANK[mine]:
                found.append(f"{where}: {mine} may not import {theirs} (layers: {ORDER})")
    return found


def package_sources(root: Path = PACKAGE) -> dict[str, tuple[str, bool]]:
    return {module_name(p, root): (p.read_text(encoding="utf-8"), p.name == "__init__.py")
            for p in sorted(root.rglob("*.py"))}


def test_imports_point_one_way():
    found = violations(package_sources())
    assert not found, "imports that point the wrong way:\n" + "\n".join(found)


def test_every_orchestration_edge_is_used():
    """A stale allowance would let a new hub in unnoticed: each documented edge is one the code has."""
    sources = package_sources()
    known = set(sources)
    used = set()
    for module, (source, is_package) in sources.items():
        if module.startswith("signsim.commands."):
            for target, _, _ in imports(source, module, is_package, known):
                if target.startswith("signsim.commands."):
                    used.add((module.split(".")[2], target.split(".")[2]))
    documented = {(a, b) for a, bs in ORCHESTRATION.items() for b in bs}
    assert documented <= used, f"documented but unused: {sorted(documented - used)}"


def _fake(package: dict[str, str]) -> dict[str, tuple[str, bool]]:
    """The real package with some modules' sources replaced."""
    sources = package_sources()
    for module, source in package.items():
        sources[module] = (source, sources.get(module, ("", False))[1])
    return sources


@pytest.mark.parametrize(("module", "source", "expected"), [
    # the violations issue #12 names: the config importing a command, a command used as a hub, a command
    # importing back, the diagnostics importing a command's document code
    ("signsim.interface.config", "def f():\n    from signsim.commands.experiments import parse\n",
     "config may not import commands"),
    ("signsim.commands.bound", "from signsim.commands.run import problem_info\n", "only to compose it"),
    ("signsim.commands.run", "from signsim.commands.check_spb import spb_quantities\n", "only to compose it"),
    ("signsim.commands.replication", "from signsim.commands.run import spb_tracker\n", "offers for composing"),
    ("signsim.diagnostics.samples", "from signsim.commands.check_spb import estimate_fields\n",
     "diagnostics may not import commands"),
    ("signsim.sweep.worker", "from signsim.commands.run import run\n", "sweep may not import commands"),
    ("signsim.commands.compile", "from signsim.cli import main\n", "commands may not import entry"),
    ("signsim.engine.loop", "from signsim.diagnostics import spb\n", "engine may not import diagnostics"),
    ("signsim.problems.base", "from signsim.interface import config\n", "domain may not import config"),
    ("signsim.sweep.store", "from signsim.diagnostics import tracking\n", "sweep may not import diagnostics"),
    ("signsim.interface.config", "import importlib\nm = importlib.import_module(f'signsim.commands.{x}')\n",
     "config may not import commands"),
])
def test_the_check_catches_wrong_imports(module, source, expected):
    found = violations(_fake({module: source}))
    assert any(module in f and expected in f for f in found), found


def circles(sources: dict[str, tuple[str, bool]]) -> list[list[str]]:
    """The sets of modules that import each other in a loop (strongly connected components of more than one
    module), over every static import, at the top of a module or inside a function; the facades' lazy loads of the
    API (FACADES) are left out, and so is a module loaded by a name made at run time (a stage of a folder)."""
    known = set(sources)
    graph = {m: sorted({t for t, _, _ in imports(src, m, pkg, known, dynamic=False)
                        if t in known and t != m and (m, t) not in FACADES})
             for m, (src, pkg) in sources.items()}
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph):  # Tarjan's algorithm, iterative
        if root in order:
            continue
        work = [(root, iter(graph[root]))]
        order[root] = low[root] = len(order)
        stack.append(root)
        while work:
            node, targets = work[-1]
            for t in targets:
                if t not in order:
                    order[t] = low[t] = len(order)
                    stack.append(t)
                    work.append((t, iter(graph[t])))
                    break
                if t in stack:
                    low[node] = min(low[node], order[t])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == order[node]:
                    component = []
                    while True:
                        m = stack.pop()
                        component.append(m)
                        if m == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_circle_between_modules():
    """Issue 47, item 5: no two modules import each other, directly or through others."""
    found = circles(package_sources())
    assert not found, "modules that import each other in a loop:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_a_circle_is_found():
    """The check above can fail: a loop through a function-level import, and one of three modules."""
    two = {"signsim.a": ("from signsim import b\n", False), "signsim.b": ("def f():\n    import signsim.a\n", False)}
    three = {"signsim.x": ("from signsim.y import f\n", False), "signsim.y": ("from signsim import z\n", False),
             "signsim.z": ("import signsim.x\n", False), "signsim.w": ("import signsim.x\n", False)}
    assert circles(two) == [["signsim.a", "signsim.b"]]
    assert circles(three) == [["signsim.x", "signsim.y", "signsim.z"]]
    sources = package_sources()  # and in the package itself: the registry loading the plugins again, as it did
    source, is_package = sources["signsim.stages.registry"]
    sources["signsim.stages.registry"] = (source + "\ndef f():\n    from signsim.stages import plugins\n", is_package)
    assert ["signsim.stages.plugins", "signsim.stages.registry"] in circles(sources)


#: the test folders that are not a subpackage of signsim: ``base`` (the modules at the package's top), ``cli``
#: (the command line as a user meets it), ``hostile`` (the hostile-input suite, kept together) and ``project``
#: (the documents, the imports and the private names)
TEST_FOLDERS_BEYOND_THE_PACKAGE = {"base", "cli", "hostile", "project"}


def test_tests_are_laid_out_by_module():
    """Every test file lives in a folder named after the subpackage of signsim it tests (or one of the folders
    above); none at the top of tests/."""
    tests = PACKAGE.parent / "tests"
    subpackages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert sorted(p.name for p in tests.glob("*.py")) == ["__init__.py", "conftest.py"]
    folders = {p.parent.name for p in tests.glob("*/*.py")}
    allowed = subpackages | TEST_FOLDERS_BEYOND_THE_PACKAGE
    assert folders <= allowed, sorted(folders - allowed)
    assert all((tests / f / "__init__.py").is_file() for f in folders)
