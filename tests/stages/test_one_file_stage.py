"""A new compressor is one file (issue 31, item 6): in a copy of the package, one module added to
``signsim/stages/compressors/`` and ``python tools/generate_stages.py`` put it everywhere a built-in stage is:
the catalog (after the stages already there, whose codes stay), ``signsim list``, ``run --help``, docs/reference.md's
stage tables, ``check-stage``, ``diversity --transform`` and runs through the one loop (its plan of every built-in
stage, ``signsim.engine.plan``).

Slow: it copies the package and compiles the analytic family's one loop in a kernel cache of its own."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: the maintainer's generator of the catalog and the docs' stage tables, run in the copy (its working directory)
GENERATOR = "tools/generate_stages.py"

#: the one new file: sign(v) / 2, written to the contract of the built-ins (signsim/stages/base.py; sign.py)
HALF_SIGN = '''"""half-sign: C(v) = sign(v) / 2, sign(0) by the --sign-zero policy (docs/theory.md §8.1): the sign at
half the step. d bits, 2 d when sign(0) = 0 is allowed (a ternary message)."""

from signsim.stages.base import SIGN_ZERO_PLUS, SIGN_ZERO_ZERO, sign_value
from signsim.stages.reference_helpers import sign_with_policy

NAME = "half-sign"
PARAMS = ()
SUMMARY = "sign(v) / 2, 1 bit per coordinate"
KIND = "biased"
THEORY = "§8.1"
SCRATCH = False
BROADCAST = "sign-sum"  # the sum of M half-signs: M + 1 values (2 M + 1 with zeros), as the signs'
#: C(2^j v) = C(v): the diversity's estimates may compute in any power-of-two unit (docs/theory.md §10.4)
DEGREE = 0
# not COORDINATE_SIGN: --votes binomial draws counts of sign(v_i) itself, not of sign(v_i) / 2


def constant(d):
    return None


def may_be_zero(sign_zero):
    return sign_zero == SIGN_ZERO_ZERO


def kernel(v, out, p, sign_zero, gen, iwork):
    d = v.shape[0]
    for i in range(d):
        out[i] = 0.5 * sign_value(v[i], sign_zero, gen)
    return (2.0 if sign_zero == SIGN_ZERO_ZERO else 1.0) * d


def bits(d, p, sign_zero, nonzero):
    return (2 if sign_zero == SIGN_ZERO_ZERO else 1) * d


def reference(v, p, sign_zero, gen):
    return 0.5 * sign_with_policy(v, sign_zero, gen)


def sum_values(M, sign_zero):
    return 2 * M + 1 if sign_zero == SIGN_ZERO_ZERO else M + 1


def moments(G, p, sign_zero):
    """(E||C(g_j)||^2, E C(g_j)) for the rows g_j of G: a quarter of the sign's norms, half its means."""
    import numpy as np

    d = G.shape[1]
    mean = 0.5 * np.sign(G)
    if sign_zero == SIGN_ZERO_PLUS:
        return np.full(len(G), 0.25 * d), np.where(G == 0, 0.5, mean)
    if sign_zero == SIGN_ZERO_ZERO:
        return 0.25 * (d - np.count_nonzero(G == 0, axis=1)), mean
    return np.full(len(G), 0.25 * d), mean
'''


def _entries(catalog: Path) -> dict:
    namespace: dict = {}
    exec(catalog.read_text(encoding="utf-8"), namespace)  # plain data
    return namespace["STAGES"]


def _checkout(tmp_path: Path) -> Path:
    """A copy of the package and of the maintainer's tools, as a source checkout has them."""
    copy = tmp_path / "src"
    for folder in ("signsim", "tools"):
        shutil.copytree(ROOT / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


@pytest.mark.slow
def test_a_new_compressor_is_one_file_then_the_generator(tmp_path):
    copy = _checkout(tmp_path)
    (copy / "docs").mkdir()
    shutil.copy(ROOT / "docs" / "reference.md", copy / "docs" / "reference.md")  # the generator writes the copy's
    (copy / "signsim" / "stages" / "compressors" / "half_sign.py").write_text(HALF_SIGN, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(copy), "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "300",
           "SIGNSIM_LOOP": "builtin", "SIGNSIM_WARM": "0"}

    def python(*args, timeout=900):
        return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=copy,
                              timeout=timeout)

    def signsim(*args, timeout=900):
        return python("-m", "signsim.cli", *args, timeout=timeout)

    where = python("-c", "import signsim; print(signsim.__file__)")
    assert Path(where.stdout.strip()).resolve() == (copy / "signsim" / "__init__.py").resolve(), where.stderr

    # before the generator: the module is in its folder, not yet a stage signsim knows, and --check says so
    stale = python(GENERATOR, "--check")
    assert stale.returncode == 1 and "catalog.py is stale" in stale.stderr, stale.stderr
    r = python(GENERATOR)
    assert r.returncode == 0, r.stderr
    assert python(GENERATOR, "--check").returncode == 0

    # the catalog: appended to the compressors, every other stage in its place (its code unchanged)
    before, after = _entries(ROOT / "signsim" / "stages" / "catalog.py"), _entries(
        copy / "signsim" / "stages" / "catalog.py")
    assert after["compressor"] == (*before["compressor"], ("half_sign", "half-sign", "half-sign", ()))
    assert {k: v for k, v in after.items() if k != "compressor"} == {k: v for k, v in before.items()
                                                                     if k != "compressor"}
    counts = python("-c", "from signsim.engine import stage_kernels; print(stage_kernels.counts()['compressor'])")
    assert counts.stdout.strip() == "13", counts.stderr  # the plan of every built-in stage: its code is 12

    # the docs: only the stage tables changed, and they have the new line
    old_doc = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")
    new_doc = (copy / "docs" / "reference.md").read_text(encoding="utf-8")
    row = "| `half-sign` | - | sign(v) / 2, 1 bit per coordinate (biased) | §8.1 |"
    assert row in new_doc and row not in old_doc
    assert new_doc.split("<!-- stages:begin -->")[0] == old_doc.split("<!-- stages:begin -->")[0]
    assert new_doc.split("<!-- stages:end -->")[1] == old_doc.split("<!-- stages:end -->")[1]
    tables = python("-c", "from signsim.render import stage_tables; print(stage_tables.markdown(), end='')")
    assert tables.returncode == 0 and row in tables.stdout
    assert tables.stdout == new_doc.split("<!-- stages:begin -->\n")[1].split("<!-- stages:end -->")[0]

    # list and help
    listed = signsim("list")
    assert listed.returncode == 0 and "half-sign" in listed.stdout and "sign(v) / 2" in listed.stdout
    helped = signsim("run", "--help")
    assert helped.returncode == 0
    assert "dither[:S] | half-sign (signsim list; default: the method's)" in " ".join(helped.stdout.split())
    imports = python("-X", "importtime", "-m", "signsim.cli", "run", "--help")  # the help reads the catalog only
    assert imports.returncode == 0 and "signsim.stages.catalog" in imports.stderr
    assert "signsim.stages.compressors" not in imports.stderr and "numba" not in imports.stderr

    # the contract test
    checked = signsim("check-stage", "half-sign", "--samples", "100")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "half-sign" in checked.stdout and "FAIL" not in checked.stdout

    # a transformation of per-sample gradients, in closed form (its moments): B_S^T is scale-free, so the sign's
    div = signsim("diversity", "--transform", "sign", "--transform", "half-sign", "--json")
    assert div.returncode == 0, div.stderr
    by_name = {t["transform"]: t for t in json.loads(div.stdout)["transforms"]}
    half = by_name["half-sign"]
    assert half["method_of_estimate"] == "closed-form" and isinstance(half["B_S"], float) and half["B_S"] > 0
    assert half["B_S"] == pytest.approx(by_name["sign"]["B_S"], rel=1e-12)

    # runs through the one loop (the plan of every built-in stage, the new stage's code 12): the half sign at twice
    # takes the sign's steps exactly
    base = ("run", "--problem", "quadratic", "--dim", "5", "--iters", "30", "--workers", "3", "--method", "signsgd",
            "--aggregate", "mean", "--seed", "3", "--json")
    sign = signsim(*base, "--compressor", "sign", "--lr", "0.01")
    halved = signsim(*base, "--compressor", "half-sign", "--lr", "0.02")
    assert sign.returncode == 0 and halved.returncode == 0, sign.stderr + halved.stderr
    a, b = json.loads(sign.stdout), json.loads(halved.stdout)
    assert b["stages"]["compressor"]["spec"] == "half-sign"
    assert [h["loss"] for h in a["history"]] == [h["loss"] for h in b["history"]]
    assert [(h["bits_up"], h["bits_down"]) for h in a["history"]] == [(h["bits_up"], h["bits_down"])
                                                                       for h in b["history"]]
    assert b["history"][-1]["bits_up"] == 30 * 3 * 5  # d bits a message
    assert any("half_sign" in p.name for p in (tmp_path / "cache").rglob("*"))  # the new stage's kernel

    # --votes binomial reads what the module declares: it draws sign(v_i) itself, so the half sign is refused
    binomial = signsim("run", "--problem", "quadratic", "--dim", "5", "--iters", "5", "--method", "signsgd",
                       "--compressor", "half-sign", "--votes", "binomial")
    assert binomial.returncode == 2 and len(binomial.stderr.strip().splitlines()) == 1, binomial.stderr
    assert "COORDINATE_SIGN" in binomial.stderr and re.search(r"sends half-sign\b", binomial.stderr)


def _entries_of(cache: Path) -> dict:
    """Every file of a kernel cache, with its size and modification time."""
    return {p.relative_to(cache): (p.stat().st_size, p.stat().st_mtime_ns) for p in cache.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_a_new_or_edited_stage_compiles_only_what_calls_it(tmp_path):
    """Issue 47, item 3: a default run whose kernels are cached compiles nothing after a compressor is added (and
    the generator run), in the same cache folder; an edit of the run's own compressor compiles its loop anew, with
    the same results (the cache folder is chosen as a user's is: XDG_CACHE_HOME, no NUMBA_CACHE_DIR)."""
    copy = _checkout(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update({"PYTHONPATH": str(copy), "XDG_CACHE_HOME": str(tmp_path / "xdg"), "SIGNSIM_WARM": "0",
                "SIGNSIM_LOOP": "auto"})
    cache = tmp_path / "xdg" / "signsim" / "numba"

    def python(*args):
        return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=copy, timeout=900)

    def run():
        r = python("-m", "signsim.cli", "run", "--iters", "30", "--json", "--quiet")
        assert r.returncode == 0, r.stderr
        return [(h["loss"], h["bits_up"]) for h in json.loads(r.stdout)["history"]]

    first = run()
    folders = list(cache.iterdir())
    entries = _entries_of(cache)
    assert len(folders) == 1 and any(".nbc" in str(p) for p in entries)

    (copy / "signsim" / "stages" / "compressors" / "half_sign.py").write_text(HALF_SIGN, encoding="utf-8")
    assert python(GENERATOR).returncode == 0
    assert run() == first
    assert list(cache.iterdir()) == folders and _entries_of(cache) == entries  # nothing compiled, nothing written

    default = copy / "signsim" / "stages" / "compressors" / "sto_sign.py"  # ssdm's compressor
    # (a comment alone changes no code, and compiles nothing: the hash is of the code as loaded)
    default.write_text(default.read_text(encoding="utf-8") + "\n\ndef edited(v):\n    return v\n", encoding="utf-8")
    assert run() == first
    after = _entries_of(cache)
    assert list(cache.iterdir()) == folders
    assert {p for p in after if p not in entries and "run_rounds" in str(p)}, "the loop was not compiled anew"
    # the old loop left as it was (its index lists the new one beside it: one loop, a plan type for each composition)
    assert all(after[p] == entries[p] for p in entries if "run_rounds" in str(p) and p.suffix == ".nbc")
