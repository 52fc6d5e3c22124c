"""The engine's and the package's structure in numbers (issue 47's before/after): run on any checkout of signsim.

    python tools/structure.py                    # this checkout's signsim/
    python tools/structure.py --root OTHER/signsim

Prints: the lines of ``signsim/engine`` (and how many of them a generator wrote); the uses of private Numba and
llvmlite internals (the patterns of ``tests/project/test_private_names.py``), as (file, pattern) pairs; the widest
function (most parameters) in the package and how many take 10 or more; and the import graph over modules, from
``tests/project/test_layers.py``'s reading of every import (at the top of a module or inside a function): arrows
(importing module -> imported module), those that point up the layers or sideways between groups of a layer (the
rules of that test, this checkout's), and circles (modules that import each other in a loop). The rules and
patterns are this checkout's, applied to the root given, so two checkouts are measured alike.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, HERE / "tests" / "project" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def engine_lines(root: Path) -> tuple[int, int]:
    """(lines of the engine's modules, lines of those a generator wrote)."""
    total = generated = 0
    for path in sorted((root / "engine").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        n = text.count("\n")
        total += n
        if "generated" in text[:400].lower() and "do not edit" in text[:400].lower():
            generated += n
    return total, generated


def private_uses(root: Path) -> list[tuple[str, str]]:
    return sorted(_load("test_private_names")._uses(root))


def widths(root: Path) -> tuple[int, str, int]:
    """(most parameters of a function, which, how many functions take 10 or more)."""
    best, where, wide = 0, "", 0
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                a = node.args
                n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + bool(a.vararg) + bool(a.kwarg)
                wide += n >= 10
                if n > best:
                    best, where = n, f"{path.relative_to(root).as_posix()}:{node.name}"
    return best, where, wide


def graph(root: Path) -> tuple[int, int, list[list[str]]]:
    """(arrows between modules, arrows against the layers, circles)."""
    layers = _load("test_layers")
    sources = layers.package_sources(root)
    known = set(sources)
    arrows = {(m, t) for m, (src, pkg) in sources.items()
              for t, _, _ in layers.imports(src, m, pkg, known, dynamic=False) if t in known and t != m}
    # each importing module and imported module once, however many lines import it
    against = {(w.split(":", 1)[0], w.split(" imports ", 1)[1].split(":", 1)[0])
               for w in layers.violations(sources) if " imports " in w}
    return len(arrows), len(against), layers.circles(sources)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=HERE / "signsim", help="the signsim package folder to measure")
    root = ap.parse_args().root.resolve()
    lines, generated = engine_lines(root)
    uses = private_uses(root)
    best, where, wide = widths(root)
    arrows, against, circles = graph(root)
    print(f"engine: {lines} lines in {len(list((root / 'engine').glob('*.py')))} files ({generated} generated)")
    print(f"private Numba/llvmlite names: {len(uses)} (file, pattern) uses"
          + "".join(f"\n  {f}: {p}" for f, p in uses))
    print(f"widest function: {best} parameters ({where}); {wide} functions take 10 or more")
    print(f"imports: {arrows} arrows between modules, {against} against the layers, {len(circles)} circles"
          + "".join(f"\n  circle: {' <-> '.join(c)}" for c in circles))


if __name__ == "__main__":
    main()
