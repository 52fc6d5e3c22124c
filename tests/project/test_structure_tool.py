"""``tools/structure.py``, the numbers of issue 47's before/after (engine lines, private names, widest function,
import graph): on this checkout it agrees with the tests whose rules it borrows."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from .test_layers import circles, package_sources
from .test_private_names import REMAINING, ROOT

TOOL = Path(__file__).resolve().parents[2] / "tools" / "structure.py"


def _tool():
    spec = importlib.util.spec_from_file_location("structure", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_tool_counts_what_the_tests_check():
    tool = _tool()
    assert tool.private_uses(ROOT) == sorted(REMAINING)
    arrows, against, found = tool.graph(ROOT)
    assert found == circles(package_sources(ROOT)) and against == 0 and arrows > 100
    best, where, wide = tool.widths(ROOT)
    assert best >= 10 and wide >= 1 and ":" in where


def test_the_tool_measures_another_checkout(tmp_path):
    """A copy with one more private reach, one circle and one wide function is measured as such."""
    tool = _tool()
    pkg = tmp_path / "signsim"
    (pkg / "engine").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "engine" / "__init__.py").write_text("")
    (pkg / "engine" / "a.py").write_text("from signsim.engine import b\nimport numba\nnumba.njit(_nrt=False)\n")
    (pkg / "engine" / "b.py").write_text("from signsim.engine import a\n\n\ndef f(" + ", ".join(
        f"p{i}" for i in range(12)) + "):\n    pass\n")
    assert tool.private_uses(pkg) == [("engine/a.py", "no runtime")]
    assert tool.graph(pkg) == (2, 0, [["signsim.engine.a", "signsim.engine.b"]])
    assert tool.widths(pkg) == (12, "engine/b.py:f", 1)
    assert tool.engine_lines(pkg) == (8, 0)
    out = subprocess.run([sys.executable, str(TOOL), "--root", str(pkg)], capture_output=True, text=True, check=True)
    assert "1 circles" in out.stdout and "widest function: 12 parameters" in out.stdout
