"""An installed package's stages, found through the entry-point group ``signsim.stages`` (docs/api.md, "Your own
stage"): a real distribution's metadata (a ``.dist-info`` folder with ``entry_points.txt``) on the path of a new
process, as ``pip install`` leaves it, and no ``--plugin``."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
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


def test_a_broken_installed_stage_disables_only_itself_with_one_warning_naming_it(tmp_path):
    """A broken entry point must not break every command (issue 34): it is left out, with one warning line that
    names it and never mentions a --plugin the user did not give."""
    install(tmp_path, "signsim_ep_broken", "broken-stage", "STAGE = 'compresor'\nNAME = 'broken-stage'\n")
    r = signsim(tmp_path, "run", "--iters", "2", "--quiet")
    lines = [line for line in r.stderr.strip().splitlines() if "broken-stage" in line]
    assert r.returncode == 0, r.stderr
    assert len(lines) == 1 and "entry point" in lines[0] and "STAGE must be one of" in lines[0], r.stderr
    assert "--plugin" not in r.stderr and "Traceback" not in r.stderr


def test_an_entry_point_that_raises_systemexit_is_left_out_not_a_silent_exit(tmp_path):
    install(tmp_path, "signsim_ep_quits", "quits-stage", "raise SystemExit(0)\n")
    r = signsim(tmp_path, "list")
    assert r.returncode == 0 and "top-k" in r.stdout, r.stderr  # the list is printed, not an exit 0 with nothing
    assert "quits-stage" in r.stderr and "SystemExit" in r.stderr
