"""A damaged kernel cache entry is compiled again, as a deleted one is (``signsim.interface.kernel_cache``).

Unit: a failure raised while "Numba's cache reader" (code compiled under that file name) reads a file names that
file, which ``repairing`` removes before running the command again; any other failure passes through untouched.
End to end (slow): a real cache, its files truncated, emptied and overwritten, then a run in a new process."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys

import pytest

from signsim.interface import kernel_cache

READER = os.path.join("site-packages", "numba", "core", "caching.py")


def _reader(path):
    """A function compiled as if it were Numba's cache reader: it opens ``path`` and unpickles it."""
    ns = {"pickle": pickle}
    exec(compile("def load(path):\n    with open(path, 'rb') as f:\n        return pickle.load(f)\n", READER, "exec"),
         ns)  # noqa: S102 - the fixed source above
    return ns["load"](path)


def test_a_damaged_file_is_removed_and_the_command_runs_again(tmp_path):
    bad = tmp_path / "k.nbi"
    bad.write_bytes(b"garbage")
    said, calls = [], []

    def command():
        calls.append(1)
        return _reader(bad) if bad.exists() else "compiled afresh"

    assert kernel_cache.repairing(command, said.append) == "compiled afresh"
    assert len(calls) == 2 and not bad.exists()
    assert len(said) == 1 and str(bad) in said[0] and "UnpicklingError" in said[0]


def test_an_error_outside_the_cache_reader_passes_through(tmp_path):
    def command():
        raise ValueError("a bad value of the user's")

    with pytest.raises(ValueError, match="the user's"):
        kernel_cache.repairing(command, lambda line: pytest.fail(line))


def test_a_file_that_stays_damaged_empties_the_folder_once_then_fails(tmp_path, monkeypatch):
    bad = tmp_path / "k.nbc"
    emptied = []

    def command():
        bad.write_bytes(b"")  # damaged again each time (a disk that keeps failing)
        return _reader(bad)

    with pytest.raises(EOFError):
        kernel_cache.repairing(command, lambda line: None, empty=lambda: emptied.append(1) or 0)
    assert emptied == [1]


@pytest.mark.slow  # a cache compiled from empty (~15 s), then a run that compiles the damaged kernels again
def test_a_run_repairs_a_damaged_cache(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "SIGNSIM_WARM": "0"}
    args = [sys.executable, "-m", "signsim", "run", "--problem", "quadratic", "--workers", "2", "--iters", "3",
            "--quiet", "--json"]
    first = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    files = sorted((tmp_path / "cache").rglob("*.nb[ic]"))
    loops = [f for f in files if "run_rounds" in f.name]
    steps = [f for f in files if "worker_step" in f.name and f.suffix == ".nbi"]
    assert loops and steps
    for f in loops:
        f.write_bytes(f.read_bytes()[:200] if f.suffix == ".nbc" else b"garbage")
    for f in steps:
        f.write_bytes(b"")
    again = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert "was unreadable" in again.stderr and "Traceback" not in again.stderr
    assert json.loads(again.stdout)["history"] == json.loads(first.stdout)["history"]


# --- a full disk: kernels compile into a temporary folder (not kept); a disk that fills names the folder -------

FULL = "/proc/signsim-kernels"  # /proc reports no free space: a folder under it stands for one on a full disk


def test_a_cache_folder_on_a_full_disk_gives_way_to_a_temporary_one(tmp_path, monkeypatch):
    import tempfile

    import signsim

    assert signsim._free_bytes(FULL) == 0
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    tmp, free = signsim._uncached_fallback(FULL)
    assert os.path.dirname(tmp) == str(tmp_path) and os.path.isdir(tmp) and free == 0
    assert signsim._uncached_fallback(str(tmp_path / "cache")) is None  # room: the folder itself
    assert signsim._uncached_fallback(str(tmp_path / "cache"), need=1 << 62) is None  # no room anywhere: as before
    assert signsim._free_bytes("/tmp/" + "a" * 300 + "/k") is None  # a name too long: unknown, not a traceback


def test_the_compile_notice_says_the_kernels_are_not_kept(monkeypatch):
    import signsim
    from signsim.commands.compile import notice

    monkeypatch.setattr(signsim, "UNCACHED", (FULL, 3 * 2**20))
    line = notice("run", "analytic", "float64", "run_rounds__analytic__own", "ssdm: sto-sign, mean")
    assert line.startswith("signsim: compiling ") and f"not kept: the kernel cache folder {FULL} has 3 MB free" in line


def test_compiling_ahead_of_time_into_a_full_disk_s_cache_is_one_line(cli, monkeypatch):
    import signsim

    monkeypatch.setattr(signsim, "UNCACHED", (FULL, 0))
    r = cli("compile", "--command", "bound")
    assert r.code == 2 and r.err.strip().splitlines() == [
        f"signsim: error: the kernel cache folder {FULL} has 0 MB free: nothing compiled would be kept (free space "
        "there, or set NUMBA_CACHE_DIR to a folder with room)"], r.err


def test_a_disk_that_fills_while_a_kernel_is_saved_names_the_cache_folder(cli, monkeypatch, tmp_path):
    """The OSError raised inside Numba's cache writer (code compiled under its file name) becomes one line naming
    NUMBA_CACHE_DIR, not the bare "No space left on device" it was."""
    import errno

    from signsim import api

    ns = {"errno": errno}
    exec(compile("def save(*a, **k):\n    raise OSError(errno.ENOSPC, 'No space left on device')\n", READER, "exec"),
         ns)  # noqa: S102 - the fixed source above
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "full"))
    monkeypatch.setattr(api, "execute", ns["save"])
    r = cli("run", "--problem", "quadratic", "--iters", "2")
    assert r.code == 2 and r.err.strip().splitlines() == [
        f"signsim: error: the kernel cache folder {tmp_path / 'full'}: No space left on device (free space there, "
        "or set NUMBA_CACHE_DIR to a folder with room)"], r.err


@pytest.mark.slow  # a composition compiled from empty (~15 s)
def test_a_run_with_its_cache_on_a_full_disk_runs_and_keeps_nothing(tmp_path):
    (tmp_path / "t").mkdir()
    env = {**os.environ, "NUMBA_CACHE_DIR": FULL, "SIGNSIM_WARM": "0", "TMPDIR": str(tmp_path / "t")}
    p = subprocess.run([sys.executable, "-m", "signsim", "run", "--problem", "quadratic", "--workers", "2", "--iters",
                        "3", "--json"], env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert f"not kept: the kernel cache folder {FULL} has 0 MB free" in p.stderr
    assert json.loads(p.stdout)["history"] and list((tmp_path / "t").iterdir()) == []  # the temporary folder gone
    # a child process (a sweep's worker) compiles into its parent's temporary folder and knows the kernels are not
    # kept (no background compile of its own)
    code = ("import os, signsim\nfrom signsim.engine import warm\nprint(signsim.UNCACHED, "
            "os.environ['NUMBA_CACHE_DIR'] == os.environ['PARENT_TMP'], warm.enabled())")
    parent = ("import os, subprocess, sys, signsim\nos.environ['PARENT_TMP'] = os.environ['NUMBA_CACHE_DIR']\n"
              f"subprocess.run([sys.executable, '-c', {code!r}], check=True)")
    child = subprocess.run([sys.executable, "-c", parent], env=env, capture_output=True, text=True, timeout=120)
    assert child.stdout.strip() == f"('{FULL}', 0) True False", child.stdout + child.stderr


@pytest.mark.slow  # a composition compiled from empty (~15 s), then a real Ctrl-C
def test_an_interrupted_run_removes_its_temporary_kernel_folder_too(tmp_path):
    """After Ctrl-C the command leaves with os._exit (no exit handlers): the temporary folder is removed first."""
    import signal

    from ..conftest import exit_after_signal, wait_until_ready

    (tmp_path / "t").mkdir()
    ready = tmp_path / "ready"
    env = {**os.environ, "NUMBA_CACHE_DIR": FULL, "SIGNSIM_WARM": "0", "TMPDIR": str(tmp_path / "t"),
           "SIGNSIM_READY_FILE": str(ready)}
    p = subprocess.Popen([sys.executable, "-m", "signsim", "run", "--problem", "quadratic", "--iters", "100000000",
                          "--quiet"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    wait_until_ready(p, ready)
    assert len(list((tmp_path / "t").iterdir())) == 1  # the temporary kernel folder, in use
    os.killpg(p.pid, signal.SIGINT)
    err, _ = exit_after_signal(p)
    assert p.returncode == 130, err
    assert list((tmp_path / "t").iterdir()) == [], err
