"""Issue #18: hostile files, output paths and values. Every case exits 2 with one stderr line that names
what the user wrote, no traceback, and allocates nothing large (each file is tiny; memory-sized cases run
with a small pretend memory limit)."""

import gzip
import io
import os
import stat
import zipfile

import numpy as np
import pytest

LS = ["run", "--problem", "least-squares", "--iters", "2", "--quiet"]


def one_line(r, *tokens):
    assert r.code == 2, (r.code, r.err)
    assert "Traceback" not in r.err, r.err
    lines = [line for line in r.err.splitlines() if line.strip()]
    assert len(lines) == 1, r.err
    assert lines[0].startswith("signsim: error: "), r.err
    for t in tokens:
        assert t in lines[0], (t, lines[0])
    return lines[0]


def npz_bytes(**arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def idx(arr, dims):
    return bytes([0, 0, 8, dims]) + b"".join(int(s).to_bytes(4, "big") for s in arr.shape) + arr.tobytes()


def _bad_deflate():
    raw = bytearray(npz_bytes(X=np.ones((50, 3)), y=np.ones(50)))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("X.npy", bytes(raw[:2000]))
        zf.writestr("y.npy", bytes(raw[:2000]))
    out = bytearray(buf.getvalue())
    for i in range(60, 120):  # inside the first member's deflate stream
        out[i] ^= 0x5A
    return bytes(out)


def _not_array():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("X", b"just some bytes")
        zf.writestr("y.npy", npz_bytes(y=np.ones(3))[:10])
    return buf.getvalue()


BAD_FILES = {
    "libsvm-index-2^40.svm": (b"1 1099511627776:1\n", ("too large",)),
    "libsvm-index-10^12.svm": (b"1 1000000000000:1\n", ("too large",)),
    "libsvm-index-10^6.svm": (b"1 1:1\n-1 1000000:2\n" * 40, ("memory",)),
    "libsvm-bad-field.svm": (b"1 1:2\n1 1:2 x:3\n", ("line 2, field 3", "'x:3'")),
    "libsvm-bad-label.svm": (b"1 1:2\nfoo 1:2\n", ("line 2, field 1", "'foo'")),
    "libsvm-huge-index-line.svm": (b"1 1:2\n1 5000000000000:3\n", ("line 2, field 2", "too large")),
    "truncated.csv.gz": (gzip.compress(b"1,2,3\n" * 100)[:-12], ("gzip",)),
    "truncated.svm.gz": (gzip.compress(b"1 1:2\n" * 100)[:-12], ("truncated",)),
    "array.npz": (b"\x93NUMPY" + b"\x01\x00" + b"v\x00{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }"
                  .ljust(118) + b"\n" + b"\x00" * 24, (".npy",)),
    "member.npz": (_not_array(), ("not a NumPy array",)),
    "deflate.npz": (_bad_deflate(), ("npz",)),
    "zero-images-idx3-ubyte": (idx(np.zeros((0, 2, 2), np.uint8), 3), ("zero items",)),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_malformed_data_files_exit_2_naming_the_file(cli, tmp_path, name, monkeypatch):
    monkeypatch.setenv("SIGNSIM_MEMORY_LIMIT", str(200 * 2**20))
    content, tokens = BAD_FILES[name]
    path = tmp_path / name
    path.write_bytes(content)
    if name.startswith("zero-images"):
        (tmp_path / name.replace("images-idx3", "labels-idx1")).write_bytes(idx(np.zeros(0, np.uint8), 1))
    one_line(cli(*LS, "--data", str(path)), str(path), *tokens)


def test_the_error_is_the_only_stderr_output_without_quiet(cli, tmp_path):
    path = tmp_path / "bad.svm"
    path.write_bytes(b"1 1:2\n1 1:2 x:3\n")
    r = cli("run", "--problem", "least-squares", "--data", str(path))
    assert r.code == 2 and r.err.count("\n") == 1 and r.err.startswith("signsim: error: "), repr(r.err)


def test_csv_with_a_byte_order_mark_and_no_header_keeps_its_first_row(tmp_path):
    from signsim import data

    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbf1,2,3\n0,4,5\n1,6,7\n")
    ds = data.load(str(path))
    assert ds.X.shape == (3, 2) and ds.X[0, 0] == 2


@pytest.mark.parametrize("what", ["directory", "fifo", "/dev/zero"])
@pytest.mark.parametrize("option", ["--data", "--config"])
def test_not_a_regular_file_is_named_for_what_it_is(cli, tmp_path, what, option):
    if what == "directory":
        path, word = tmp_path / "d.csv", "directory"
        path.mkdir()
    elif what == "fifo":
        path, word = tmp_path / "f.csv", "FIFO"
        os.mkfifo(path)
    else:
        path, word = "/dev/zero", "character device"
    args = LS + ["--data", str(path)] if option == "--data" else ["run", "--config", str(path), "--quiet"]
    msg = one_line(cli(*args), option, str(path), word)
    assert "no such file" not in msg


# --- output paths -------------------------------------------------------------------------------------


def _outputs(tmp_path):
    reg = tmp_path / "regular"
    reg.write_text("x")
    return {"directory": (str(tmp_path), "directory"), "empty": ("", "empty"),
            "under-a-file": (str(reg / "out.json"), "not a directory"),
            "proc": ("/proc/signsim-missing/out.json", "cannot write"),
            "too-long": (str(tmp_path / ("n" * 300 + ".json")), "long")}


@pytest.mark.parametrize("case", ["directory", "empty", "under-a-file", "proc", "too-long"])
@pytest.mark.parametrize("command", ["run --out", "run --plot", "plot --out", "sweep --out"])
def test_bad_output_paths_exit_2_before_any_work(cli, tmp_path, case, command, monkeypatch):
    value, word = _outputs(tmp_path)[case]
    name, option = command.split()
    if case in ("directory", "under-a-file", "too-long") and option == "--plot":
        value = value.replace(".json", ".png") if value.endswith(".json") else value
    if command == "sweep --out":
        if case in ("under-a-file", "proc", "too-long"):
            value = value.removesuffix("/out.json").removesuffix(".json")
        sweep = tmp_path / "s.toml"
        sweep.write_text('problem = "quadratic"\niters = 3\n[grid]\nlr = [0.1]\n')
        args = ["sweep", str(sweep), "--out", value, "--quiet"]
        if case == "directory":
            pytest.skip("a sweep's --out is a directory")
        word = {"under-a-file": "not a directory", "proc": "cannot", "too-long": "long", "empty": "empty"}[case]
    elif name == "plot":
        doc = tmp_path / "r.json"
        assert cli("run", "--problem", "quadratic", "--iters", "3", "--out", str(doc), "--quiet").code == 0
        args = ["plot", str(doc), "--out", value]
    else:
        monkeypatch.setenv("SIGNSIM_MAX_ITERS", "10")
        args = ["run", "--problem", "quadratic", "--iters", "100000000000", option, value, "--quiet"]
    one_line(cli(*args), option, word)


def test_a_socket_is_refused_never_replaced(cli, tmp_path):
    import socket

    path = tmp_path / "s.json"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        one_line(cli("run", "--problem", "quadratic", "--iters", "3", "--out", str(path), "--quiet"), "socket",
                 "refusing")
        assert stat.S_ISSOCK(os.stat(path).st_mode)


def test_a_large_data_file_is_checked_before_it_is_read(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("SIGNSIM_MEMORY_LIMIT", str(2**20))
    for name in ("big.csv", "big.svm"):
        path = tmp_path / name
        path.write_bytes(b"1,2,3\n" * 100_000 if name.endswith(".csv") else b"1 1:2 2:3\n" * 100_000)
        one_line(cli(*LS, "--data", str(path)), str(path), "memory")


def test_a_symlink_is_written_through(cli, tmp_path):
    target = tmp_path / "target.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert cli("run", "--problem", "quadratic", "--iters", "3", "--out", str(link), "--quiet").code == 0
    assert link.is_symlink() and target.read_text().startswith("{")


def test_a_fifo_is_written_directly_never_replaced(tmp_path):
    import threading

    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo).read()))
    reader.start()
    from signsim.paths import write_atomic

    write_atomic(fifo, '{"a": 1}\n')
    reader.join(10)
    assert got == ['{"a": 1}\n'] and stat.S_ISFIFO(os.stat(fifo).st_mode)
    write_atomic("/dev/null", "nothing\n")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.parametrize("mask,mode", [(0o022, 0o644), (0o077, 0o600)])
def test_written_files_get_the_umask_mode(tmp_path, mask, mode):
    from signsim.paths import write_atomic

    old = os.umask(mask)
    try:
        write_atomic(tmp_path / "a" / "r.json", "{}\n")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "a" / "r.json").st_mode) == mode
    existing = tmp_path / "kept.json"
    existing.write_text("x")
    os.chmod(existing, 0o640)
    write_atomic(existing, "{}\n")
    assert stat.S_IMODE(os.stat(existing).st_mode) == 0o640


# --- values: one validation layer -------------------------------------------------------------------------


def _complex_npy(tmp_path):
    p = tmp_path / "c.npy"
    np.save(p, np.ones(10) * (1 + 2j))
    return str(p)


VALUE_CASES = {
    "iters 1e16 named as --iters": (["run", "--iters", str(10**16)], ("--iters", "too large")),
    "empty noise": (["run", "--noise", ""], ("--noise ''", "empty")),
    "split shared:": (["run", "--problem", "logistic", "--split", "shared:"], ("--split", "shared:")),
    "split iid:3": (["run", "--problem", "logistic", "--split", "iid:3"], ("--split", "iid:3")),
    "run: 23 digits": (["check-spb", "--problem", "quadratic", "--at", "run:" + "9" * 23], ("--at", "run:")),
    "sigma overflow": (["diversity", "--problem", "quadratic", "--noise", "gaussian:1e200"], ("--noise", "too large")),
    "bound K=-5": (["bound", "--problem", "quadratic", "--constant", "K=-5"], ("--constant K=-5",)),
    "bound M=1.5": (["bound", "--problem", "quadratic", "--constant", "M=1.5"], ("--constant M=1.5",)),
    "bound alpha=0.7": (["bound", "--problem", "quadratic", "--constant", "alpha=0.7"], ("--constant alpha=0.7",)),
    "bound sigma1=-1": (["bound", "--problem", "quadratic", "--constant", "sigma1=-1"], ("--constant sigma1=-1",)),
    "bound L1=0": (["bound", "--problem", "quadratic", "--constant", "L1=0"], ("--constant L1=0",)),
    "bound gamma=0": (["bound", "--problem", "quadratic", "--constant", "gamma=0"], ("--constant gamma=0",)),
    "bound f0 below f_star": (["bound", "--problem", "quadratic", "--constant", "f0=-1"], ("f0", "f_star")),
    "workers 1e7": (["run", "--workers", str(10**7)], ("--workers", "memory")),
    "dim 1e8": (["run", "--problem", "quadratic", "--dim", str(10**8)], ("--dim", "memory")),
    "history 1e12 rows": (["run", "--iters", str(10**12), "--eval-every", "1"], ("--iters", "memory")),
    "negative seed": (["run", "--seed", "-1"], ("--seed -1",)),
    "replicate 1e6": (["run", "--problem", "logistic", "--replicate", str(10**6)], ("--replicate", "memory")),
    "check-spb dim 2e9": (["check-spb", "--problem", "quadratic", "--dim", str(2 * 10**9)], ("--dim", "memory")),
    "monte carlo dim 2e7": (["check-spb", "--problem", "quadratic", "--dim", str(2 * 10**7), "--estimator",
                             "monte-carlo"], ("--dim", "memory")),
}


@pytest.mark.parametrize("case", sorted(VALUE_CASES))
def test_bad_values_exit_2_naming_the_option(cli, monkeypatch, case):
    monkeypatch.setenv("SIGNSIM_MEMORY_LIMIT", str(2 * 2**30))
    args, tokens = VALUE_CASES[case]
    one_line(cli(*args, "--quiet"), *tokens)


def test_a_complex_at_vector_is_rejected(cli, tmp_path):
    path = _complex_npy(tmp_path)
    one_line(cli("check-spb", "--problem", "quadratic", "--at", path, "--quiet"), path, "complex")


def test_both_spellings_of_an_option_in_a_config(cli, tmp_path):
    p = tmp_path / "c.toml"
    p.write_text("batch-size = 2\nbatch_size = 3\n")
    one_line(cli("run", "--config", str(p), "--quiet"), str(p), "'batch-size'", "'batch_size'")


def test_a_new_option_is_one_table_row():
    """Every RunConfig field is declared once in the table of options (type and range), RunConfig made from it."""
    from dataclasses import fields

    from signsim.interface.config import RunConfig
    from signsim.interface.options import RECORD

    assert [f.name for f in fields(RunConfig)] == list(RECORD)


def test_the_summary_never_shows_interrupted_losses_as_final():
    from signsim.commands.sweep import summarize
    from signsim.sweep.spec import SweepSpec

    spec = SweepSpec({}, {"lr": [0.1]}, [], 2, 0)
    tasks = [{"run_id": "a", "params": {"lr": 0.1, "seed": 1, "repeat": 0}},
             {"run_id": "b", "params": {"lr": 0.1, "seed": 2, "repeat": 1}}]
    docs = {"a": {"status": "ok", "final": {"loss": 1.0}}, "b": {"status": "interrupted", "final": {"loss": 5.0}}}
    (group,) = summarize(spec, tasks, docs)["groups"]
    assert group["mean_final_loss"] == 1.0 and group["finite"] == 1


def test_a_fifo_without_reader_is_an_error_not_a_hang(monkeypatch, tmp_path):
    from signsim import paths
    from signsim.errors import InputError

    monkeypatch.setattr(paths, "FIFO_WAIT", 0.2)
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="no process reads"):
        paths.write_atomic(fifo, "{}\n")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_pipe_named_by_dev_fd_is_written_in_place():
    from signsim.paths import write_atomic

    r, w = os.pipe()
    try:
        write_atomic(f"/dev/fd/{w}", "hello\n")
        assert os.read(r, 100) == b"hello\n"
    finally:
        os.close(r)
        os.close(w)


def test_names_with_line_breaks_stay_on_one_line(cli, tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("X.npy", npz_bytes(X=np.ones((3, 2)))[:0] or b"")
        zf.writestr("y\nfake line.npy", b"")
    path = tmp_path / "nl.npz"
    path.write_bytes(buf.getvalue())
    one_line(cli(*LS, "--data", str(path)), "\\n")


def test_a_plugin_name_too_long_for_the_file_system_is_one_line_naming_the_option(cli, tmp_path):
    name = "a" * 300  # longer than a file name may be (255 bytes)
    for args in (("run", "--plugin", name, "--iters", "2"), ("run", "--plugin", str(tmp_path / f"{name}.py")),
                 ("check-stage", "--plugin", name, "sign")):
        r = cli(*args)
        assert r.code == 2 and len(r.err.strip().splitlines()) == 1, (args[:2], r.err)
        assert "--plugin '" in r.err and "File name too long" in r.err and "Traceback" not in r.err, r.err


def test_a_bad_sweep_option_is_one_line_with_no_compile_notice_before_it(tmp_path):
    """The compile notices of a sweep come once its options are checked: with an empty kernel cache, a bad
    --dask-timeout is still the only line."""
    import subprocess
    import sys

    spec = tmp_path / "tiny.toml"
    spec.write_text('problem = "quadratic"\niters = 3\n[grid]\nlr = [0.1, 0.2]\n')
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "empty-cache")}
    r = subprocess.run([sys.executable, "-m", "signsim.cli", "sweep", str(spec), "--dask-timeout", ""], env=env,
                       capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert r.returncode == 2 and r.stderr.strip().splitlines() == ["signsim: error: --dask-timeout '': not a valid "
                                                                   "number"], r.stderr
