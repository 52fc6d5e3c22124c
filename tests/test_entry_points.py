"""An installed package's stages, found through the entry-point group ``signsim.stages`` (docs/api.md, "Your own
stage"): a real distribution's metadata (a ``.dist-info`` folder with ``entry_points.txt``) on the path of a new
process, as ``pip install`` leaves it, and no ``--plugin``."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "configs" / "plugins" / "scaled_sto_sign.py"


def install(site: Path, module: str, name: str, source: str) -> None:
    """What pip leaves for a package ``module`` that declares one entry point in the group signsim.stages."""
    (site / f"{module}.py").write_text(source)
    info = site / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[signsim.stages]\n{name} = {module}\n")


def signsim(site: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "signsim.cli", *args], env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.slow  # new processes that find the package through its metadata (6 s); .ci/run runs it
def test_an_installed_packages_stage_runs_by_its_name(tmp_path):
    source = EXAMPLE.read_text().replace('NAME = "scaled-sto-sign"', 'NAME = "installed-sto-sign"')
    install(tmp_path, "signsim_ep_example", "installed-sto-sign", source)
    r = signsim(tmp_path, "run", "--compressor", "installed-sto-sign", "--aggregate", "mean", "--problem",
                "quadratic", "--dim", "8", "--workers", "3", "--iters", "4", "--eval-every", "1", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["stages"]["compressor"]["spec"] == "installed-sto-sign"
    # the example's count: d sign bits and one float per message, 3 workers
    assert doc["history"][-1]["bits_up"] == 4 * 3 * (8 + 32)
    listed = signsim(tmp_path, "list")
    assert listed.returncode == 0 and "installed-sto-sign" in listed.stdout


def test_a_broken_installed_stage_is_one_line_naming_its_entry_point(tmp_path):
    install(tmp_path, "signsim_ep_broken", "broken-stage", "STAGE = 'compresor'\nNAME = 'broken-stage'\n")
    r = signsim(tmp_path, "run", "--iters", "2", "--quiet")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert "broken-stage" in lines[0] and "entry point" in lines[0] and "STAGE must be one of" in lines[0]
