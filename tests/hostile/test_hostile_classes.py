"""Issue #25: generated cases for each class of hostile input that was found to fail (findings 3, 4, 6, 8, 9
and 10): hostile JSON results files, gradients of extreme magnitude, transformation specs, noise scales, data
files, sweep grids and directories, memory, full disks; and issue 50's classes: plugin faults off the smoke test's
path, damaged kernel caches, signals, plugin declarations, a model's stdout under --json, server rules at any size,
robustness metrics. Each class has its generator (hypothesis) and a property: a clear one-line refusal
(InputError, exit 2) or a correct result, never a traceback.

The quick profile (default) draws a few cases per class; ``HYPOTHESIS_PROFILE=long`` draws
``LONG_CASES`` per class (more than 10,000 in all) and the last test prints the counts."""

import contextlib
import io
import json
import os
import pickle
import resource
import signal
import stat
import sys
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from signsim.errors import InputError

ROOT = __import__('pathlib').Path(__file__).resolve().parents[2]
#: cases per class in the long profile (the quick profile keeps its own small count)
LONG_CASES = 1500
LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"
COUNTS: dict[str, int] = {}


def cases(fast: int = LONG_CASES, quick: int | None = None):
    """The class's case count: the loaded profile's (or ``quick``, for a class whose cases each run a command),
    or ``fast`` in the long profile."""
    if LONG:
        return settings(max_examples=fast)
    return settings(max_examples=quick) if quick else (lambda f: f)


def counted(name: str) -> None:
    COUNTS[name] = COUNTS.get(name, 0) + 1


def one_line_error(r, *words: str) -> str:
    lines = [line for line in r.err.splitlines() if line.strip()]
    assert r.code == 2 and len(lines) == 1 and lines[0].startswith("signsim: error: "), (r.code, r.err)
    assert "Traceback" not in r.err
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


# --- finding 3: hostile JSON -------------------------------------------------------------------------------

RUN_DOC = {"signsim_version": "0", "command": "run", "status": "ok", "config": {"problem": "quadratic"},
           "history": [{"iter": 0, "loss": 1.0}], "final": {"loss": 1.0}}


@st.composite
def hostile_json(draw) -> str:
    """Nested arrays or objects far beyond any results document, integers longer than Python converts, or
    either of them inside an otherwise valid run document."""
    kind = draw(st.sampled_from(["arrays", "objects", "digits", "inside"]))
    depth = draw(st.integers(101, 200_000))
    if kind == "arrays":
        return "[" * depth + ("]" * depth if draw(st.booleans()) else "")
    if kind == "objects":
        return '{"a":' * depth + "1" + "}" * depth
    digits = "9" * draw(st.integers(sys.get_int_max_str_digits() + 1, 20_000))
    if kind == "digits":
        return digits
    doc = json.dumps(RUN_DOC)
    hole = draw(st.sampled_from(['"loss": 1.0}]', '"iter": 0']))
    value = digits if draw(st.booleans()) else "[" * depth + "]" * depth
    return doc.replace(hole, hole.replace("1.0", value).replace(": 0", f": {value}"), 1)


@cases()
@given(hostile_json())
def test_one_json_reader_refuses_hostile_json_in_one_line(text):
    from signsim.interface.results import parse_json

    counted("json")
    with pytest.raises(InputError) as e:
        parse_json(text, "F.json")
    assert str(e.value).startswith("F.json: not a JSON results file (") and "\n" not in str(e.value)


@pytest.mark.parametrize("content", ["[" * 100_000, "9" * 5000, json.dumps(RUN_DOC).replace("1.0", "9" * 5000)])
def test_hostile_json_exits_2_everywhere_it_is_read(cli, tmp_path, content):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    one_line_error(cli("plot", bad, "--out", tmp_path / "f.png"), str(bad))
    one_line_error(cli("bound", "--overlay", bad, "--quiet"), "--overlay")
    sweep_dir = tmp_path / "dir"
    sweep_dir.mkdir()
    (sweep_dir / "manifest.json").write_text(content)
    (sweep_dir / "results.csv").write_text("run_id\n")
    one_line_error(cli("plot", sweep_dir), "manifest.json")


def _hostile_run_files(tmp_path):
    """A sweep file and its two runs' files replaced by hostile JSON (as a damaged disk or a hand edit would)."""
    from signsim.commands.sweep import plan

    spec = tmp_path / "s.toml"
    spec.write_text('problem = "quadratic"\niters = 3\n[grid]\nlr = [0.1, 0.2]\n')
    out = tmp_path / "o"
    (out / "runs").mkdir(parents=True)
    victims = [out / "runs" / f"{t['run_id']}.json" for t in plan(spec)[1]]
    victims[0].write_text("[" * 100_000)
    victims[1].write_text(json.dumps(RUN_DOC).replace("1.0", "9" * 5000))
    return spec, out, victims


def test_a_sweep_plan_reads_hostile_run_files(cli, tmp_path):
    spec, out, victims = _hostile_run_files(tmp_path)
    dry = cli("sweep", spec, "--out", out, "--dry-run", "--json")
    assert dry.code == 0 and not any(r["finished"] for r in dry.json()["runs"]), dry.err


@pytest.mark.slow
def test_a_sweep_resumes_over_hostile_run_files(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("SIGNSIM_MAX_ITERS", "3")
    spec, out, victims = _hostile_run_files(tmp_path)
    r = cli("sweep", spec, "--out", out, "--jobs", "1", "--json")
    assert r.code == 0 and r.json()["ran"] == 2, r.err
    assert "Traceback" not in r.err and all(str(v) in r.err for v in victims)  # each named in a warning
    assert all(json.loads(v.read_text())["status"] == "ok" for v in victims)


# --- finding 4: gradients of extreme magnitude ---------------------------------------------------------------


def brute_B_S(G: np.ndarray) -> float:
    """n sum_j ||g_j||^2 / ||sum_j g_j||^2 straight from the definition (docs/theory.md §6)."""
    return G.shape[0] * float(np.sum(G * G)) / float(np.sum(G.sum(axis=0) ** 2))


@cases()
@given(st.integers(2, 30), st.integers(1, 6), st.integers(-1000, 1010), st.integers(0, 2**32 - 1),
       st.booleans(), st.floats(0.1, 1.0))
def test_diversity_of_gradients_of_any_magnitude(n, d, exponent, seed, blocks, mean):
    """B_S does not depend on the unit of the gradients: at any finite magnitude it is that of the same
    gradients at unit scale (computed from the definition), and exactly so for a power-of-two unit."""
    from signsim.diagnostics.samples import diversity_document

    counted("magnitude")
    G = np.random.default_rng(seed).normal(size=(n, d)) + mean
    c = 2.0**exponent
    scaled = G * c
    if not (np.isfinite(scaled).all() and np.all(np.abs(scaled[G != 0]) >= np.finfo(float).tiny)):
        return  # overflowed or lost precision (subnormal) before signsim saw it
    given_ = [scaled[: n // 2], scaled[n // 2:]] if blocks and n > 2 else scaled
    doc = diversity_document(given_)
    assert doc["B_S"] == pytest.approx(brute_B_S(G), rel=1e-9)
    assert doc["B_S"] == diversity_document(G)["B_S"] or blocks


@cases()
@given(st.sampled_from(["langevin:0", "langevin:0.5", "dropout:0.3", "qsgd:3", "natural", "sign", "sto-sign"]),
       st.integers(-900, 900), st.integers(0, 2**32 - 1))
# (the 12 rows' signs balanced in every coordinate: their sum is exactly 0, and B_S = n A / 0, infinite; found by the
# long profile, 7 December 2026)
@example("sign", 0, 10589)
@example("sign", 700, 10589)
def test_transformed_diversity_of_gradients_of_any_magnitude(spec, exponent, seed):
    from signsim.diagnostics import transforms as tr

    counted("magnitude-transforms")
    G = np.random.default_rng(seed).normal(size=(12, 4)) + 0.3
    c = 2.0**exponent
    t = tr.parse(spec)
    if spec == "langevin:0.5":
        t = tr.parse(f"langevin:{0.5 * c!r}")
    base, big = tr.closed_form(tr.parse(spec), G), tr.closed_form(t, [G[:5] * c, G[5:] * c])
    assert big.B_S == pytest.approx(base.B_S, rel=1e-12)
    # finite at any magnitude, but where the transformed gradients' exact sum is 0 (a deterministic transform: sign)
    balanced = spec == "sign" and not np.sign(G).sum(axis=0).any()
    assert np.isfinite(big.B_S) != balanced and (big.mean_sq == 0) == balanced


def test_diversity_grads_file_near_1e300(cli, tmp_path):
    G = np.random.default_rng(0).normal(size=(20, 3)) + 0.2
    path = tmp_path / "g.npy"
    np.save(path, G * 1e300)
    r = cli("diversity", "--grads", path, "--json")
    assert r.code == 0, r.err
    assert r.json()["B_S"] == pytest.approx(brute_B_S(G), rel=1e-9)


# --- finding 10: transformation specs, noise scales, full disks ---------------------------------------------


@cases()
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr),
                 st.integers(-2**70, 2**70).map(str), st.sampled_from(["1e300", "inf", "nan", "-0", "2147483648"])),
       st.sampled_from(["qsgd", "dropout", "langevin"]))
def test_transform_parameters_are_checked_with_a_true_message(value, name):
    from signsim.interface.transform_specs import parse
    from signsim.stages import registry

    counted("transform")
    try:
        t = parse(f"{name}:{value}")
    except InputError as e:
        msg = str(e)
        assert msg.startswith(f"--transform {name}:{value}: ") and "\n" not in msg
        if name == "qsgd":  # the compressor's own check, as --compressor says it
            with pytest.raises(InputError) as as_compressor:
                registry.parse("compressor", f"{name}:{value}")
            assert msg == str(as_compressor.value).replace("--compressor", "--transform", 1)
        return
    p = float(value)
    assert {"qsgd": 1 <= p <= 2**31 and p == int(p), "dropout": 0 <= p < 1,
            "langevin": 0 <= p < np.inf}[name], (name, value, t)


def test_qsgd_1e300_is_not_called_an_integer_below_1(cli):
    line = one_line_error(cli("diversity", "--transform", "qsgd:1e300", "--quiet"), "qsgd:1e300")
    assert "s must be <= 2147483648" in line and ">= 1" not in line


@cases()
@given(st.floats(0, 1e308), st.floats(0, 1e100), st.sampled_from(["gaussian", "laplace", "cauchy"]),
       st.integers(1, 5))
def test_noise_scales_share_the_noise_limit(tmp_path_factory, scale, sigma, model, d):
    from signsim import noise

    counted("noise-scales")
    path = tmp_path_factory.mktemp("s") / "s.npy"
    np.save(path, np.full(d, scale))
    cfg = SimpleNamespace(noise=f"{model}:{sigma!r}", noise_scales=str(path))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no raw NumPy RuntimeWarning either
        try:
            noise.for_config(cfg, d)
        except InputError as e:
            assert str(e).startswith(f"--noise-scales {path}: ") and "1e+100" in str(e)
            assert scale > 1e100 or scale * sigma > 1e100
            return
    assert scale <= 1e100 and scale * sigma <= 1e100


def test_a_noise_scales_file_of_1e308_exits_2(cli, tmp_path):
    path = tmp_path / "s.npy"
    np.save(path, np.full(10, 1e308))
    one_line_error(cli("run", "--problem", "quadratic", "--noise-scales", path, "--iters", "3", "--quiet"),
                   "--noise-scales", "1e+100")


def test_a_full_device_is_named(cli):
    one_line_error(cli("run", "--problem", "quadratic", "--iters", "3", "--out", "/dev/full", "--quiet"),
                   "/dev/full", "No space left on device")


def test_a_write_that_fails_names_the_file(tmp_path):
    """A file size limit (RLIMIT_FSIZE, like a full disk or quota) fails the write: the error names the
    target, not the temporary file nor nothing; the target is untouched."""
    from signsim.paths import write_atomic

    target = tmp_path / "r.json"
    target.write_text("old")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1000, hard))
    try:
        with pytest.raises(OSError) as e:
            write_atomic(target, "x" * 100_000)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)
    assert e.value.filename == str(target) and target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


# --- finding 8: data files ---------------------------------------------------------------------------------


@cases()
@given(st.lists(st.tuples(st.sampled_from(["1", "-1", "0", "2.5"]), st.sampled_from(["", " # c", "\t"])),
                min_size=1, max_size=20))
def test_a_libsvm_file_of_labels_only_is_refused(tmp_path_factory, lines):
    from signsim.data import svmlight

    counted("data:libsvm")
    path = tmp_path_factory.mktemp("d") / "labels.svm"
    path.write_text("".join(f"{label}{tail}\n" for label, tail in lines))
    with pytest.raises(InputError, match="no features"):
        svmlight.load(str(path))


NOT_REAL = ["timedelta64[s]", "timedelta64[ns]", "timedelta64[D]", "datetime64[D]", "datetime64[s]",
            "complex64", "complex128", "U3", "S2", "V8"]


@cases()
@given(st.sampled_from(NOT_REAL), st.sampled_from(["X", "y"]), st.integers(1, 50), st.integers(1, 8))
def test_an_npz_without_real_numbers_is_refused(tmp_path_factory, dtype, which, n, p):
    from signsim.data import npz

    counted("data:npz")
    arrays = {"X": np.ones((n, p)), "y": np.ones(n)}
    arrays[which] = np.zeros(arrays[which].shape, dtype=dtype)
    path = tmp_path_factory.mktemp("d") / "d.npz"
    np.savez(path, **arrays)
    with pytest.raises(InputError, match=f"'{which}'"):
        npz.load(str(path))


@cases()
@given(st.sampled_from([chr(c) for c in [*range(0, 9), *range(11, 32), 127]]), st.integers(0, 3),
       st.integers(1, 20), st.booleans())
def test_a_csv_first_line_with_a_control_character_is_not_a_header(char, where, rows, before):
    """A damaged first data row (a NUL or another control character in a field) is an error naming line 1,
    never dropped silently as a header."""
    from signsim.data import csvfile

    counted("data:csv")
    first = ["1", "2", "3", "4"]
    first[where] = char + first[where] if before else first[where] + char
    text = ",".join(first) + "\n" + "".join(f"0,{i},{i},{i}\n" for i in range(rows))
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "d.csv")
        with open(path, "w", newline="") as f:
            f.write(text)
        if char in "\r\x0b\x0c\x1c\x1d\x1e":  # line breaks for Python's splitlines: not one line any more
            return
        with pytest.raises(InputError, match="line 1"):
            csvfile.load(path)


def test_a_csv_header_of_names_is_still_a_header(tmp_path):
    from signsim.data import csvfile

    path = tmp_path / "h.csv"
    path.write_text("label,f1\tx,f2\n1,2,3\n0,4,5\n")
    assert csvfile.load(str(path)).n == 2


@pytest.mark.parametrize(("name", "content"), [
    ("labels.svm", b"1\n-1\n1\n"),
    ("nul.csv", b"1,2\x00,3\n0,1,2\n1,3,4\n"),
    ("td.npz", None),
])
def test_data_files_found_accepted_exit_2(cli, tmp_path, name, content):
    path = tmp_path / name
    if content is None:
        np.savez(path, X=np.ones((5, 2)).astype("timedelta64[s]"), y=np.ones(5))
    else:
        path.write_bytes(content)
    one_line_error(cli("run", "--problem", "least-squares", "--data", path, "--iters", "3", "--quiet"), name)


# --- finding 6: sweep grids and directories, checked before the first run ---------------------------------


@pytest.mark.parametrize(("grid", "words"), [
    ('compressor = ["top-k:3", "top-k:11"]', ["run 1", "top-k:11", "dimension 10"]),
    ('method = ["signsgd", "ssdm"]\nvotes = ["binomial"]', ["run 1", "ssdm", "binomial"]),
    ('noise-scales = ["first:3", "{tmp}/three.npy"]', ["run 1", "three.npy", "10"]),
    ('noise-scales = ["first:3", "{tmp}/missing.npy"]', ["run 1", "missing.npy", "no such file"]),
])
def test_every_grid_point_is_checked_before_the_first_run(cli, tmp_path, grid, words):
    np.save(tmp_path / "three.npy", np.ones(3))
    spec = tmp_path / "s.toml"
    spec.write_text('problem = "quadratic"\ndim = 10\niters = 3\nnoise = "gaussian:1"\n[grid]\n'
                    + grid.replace("{tmp}", str(tmp_path)) + "\n")
    out = tmp_path / "o"
    one_line_error(cli("sweep", spec, "--out", out, "--quiet"), str(spec), *words)
    assert not (out / "runs").exists() and not (out / "results.csv").exists()


@pytest.mark.parametrize("case", ["manifest-dir", "runs-file", "csv-fifo", "run-file-dir"])
def test_the_output_directory_is_checked_before_the_first_run(cli, tmp_path, case, monkeypatch):
    from signsim.commands.sweep import plan

    monkeypatch.setenv("SIGNSIM_MAX_ITERS", "3")
    spec = tmp_path / "s.toml"
    spec.write_text('problem = "quadratic"\niters = 3\n[grid]\nlr = [0.1, 0.2]\n')
    out = tmp_path / "o"
    out.mkdir()
    victim = {"manifest-dir": out / "manifest.json", "runs-file": out / "runs", "csv-fifo": out / "results.csv",
              "run-file-dir": out / "runs" / f"{plan(spec)[1][1]['run_id']}.json"}[case]
    if case == "runs-file":
        victim.write_text("keep me")
    elif case == "csv-fifo":
        os.mkfifo(victim)
    else:
        victim.mkdir(parents=True)
    one_line_error(cli("sweep", spec, "--out", out, "--quiet"), str(victim))
    assert [f for f in out.rglob("*") if f.is_file() and f != victim] == []  # nothing ran, nothing written
    mode = os.stat(victim).st_mode
    assert {"manifest-dir": stat.S_ISDIR, "run-file-dir": stat.S_ISDIR, "runs-file": stat.S_ISREG,
            "csv-fifo": stat.S_ISFIFO}[case](mode)
    if case == "runs-file":
        assert victim.read_text() == "keep me"


# --- issue #34: an output path under ~user for a user that does not exist ---------------------------------


@cases(quick=12)
@given(st.text("abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=12),
       st.sampled_from(["--out", "--plot", "--log tensorboard:", "sweep --out"]),
       st.sampled_from(["x.json", "sub/x.json", ""]))
def test_an_output_path_under_an_unknown_user_is_refused(cli, tmp_path, monkeypatch, user, option, rest):
    """``~nouser/x.json`` was written into a folder literally named ``~nouser``: every path option refuses it."""
    import pwd

    user = "nouser-" + user
    with contextlib.suppress(KeyError):
        pwd.getpwnam(user)
        return
    monkeypatch.chdir(tmp_path)
    path = f"~{user}/{rest}" if rest else f"~{user}"
    if option == "sweep --out":
        spec = tmp_path / "s.toml"
        spec.write_text('problem = "quadratic"\niters = 3\n[grid]\nlr = [0.1, 0.2]\n')
        r = cli("sweep", str(spec), "--out", path, "--quiet")
    elif option.startswith("--log"):
        r = cli("run", "--problem", "quadratic", "--iters", "3", "--quiet", "--log", f"tensorboard:{path}")
    else:
        r = cli("run", "--problem", "quadratic", "--iters", "3", "--quiet", option, path)
    one_line_error(r, path, f"'~{user}'")
    assert not list(tmp_path.glob("~*"))
    counted("unknown-user path")


# --- issue #34: an empty stage parameter was taken as its default ---------------------------------------------


@cases()
@given(st.data())
def test_an_empty_stage_parameter_is_refused(data):
    """``qsgd:``, ``trimmed:``, ``krum:1:``, ``top-k::x``: an empty field is refused naming the spec (it was
    silently the parameter's default)."""
    from signsim.stages import kinds, registry

    kind = data.draw(st.sampled_from([k.name for k in kinds.TABLE]))
    table = registry.stages(kind)
    name = data.draw(st.sampled_from(sorted(table)))
    n = len(table[name].PARAMS)
    given = data.draw(st.lists(st.sampled_from(["1", "2", "0.5", "elias"]), max_size=max(n - 1, 0)))
    where = data.draw(st.integers(0, len(given)))
    spec = ":".join([name, *given[:where], "", *given[where:]])
    with pytest.raises(InputError) as e:
        registry.parse(kind, spec, dim=10)
    message = str(e.value)
    assert f" {spec}: " in message and ("empty parameter" in message or "takes no parameter" in message), message
    counted("empty stage parameter")


@pytest.mark.parametrize("option", [["--compressor", "qsgd:"], ["--aggregate", "trimmed:"],
                                    ["--aggregate", "krum:1:"], ["--compressor", "top-k:"]])
def test_an_empty_stage_parameter_exits_2(cli, option):
    one_line_error(cli("run", "--problem", "quadratic", "--iters", "3", "--quiet", *option), " ".join(option),
                   "empty parameter")


# --- issue #34: one-class data was accepted without a word ---------------------------------------------------


@cases(quick=6)
@given(st.lists(st.tuples(st.floats(-5, 5), st.floats(-5, 5)), min_size=3, max_size=12),
       st.sampled_from([0.0, 1.0, 3.0, -1.0]), st.sampled_from([None, "same"]))
def test_one_class_data_for_logistic_is_said_in_one_warning(tmp_path_factory, rows, label, positive):
    """A CSV whose labels are all the same: the logistic problem is built (its loss is defined) with one warning
    naming the file; ``mlp`` refuses it (a classifier needs two classes)."""
    from signsim import problems
    from signsim.interface import config

    path = tmp_path_factory.mktemp("one") / "one.csv"
    path.write_text("".join(f"{label:g},{a!r},{b!r}\n" for a, b in rows))
    options = {"problem": "logistic", "data": str(path), "test_fraction": 0.0, "standardize": False}
    if positive:
        options["positive_class"] = label
    problem = problems.build(config.resolve(options))
    assert len(problem.warnings) == 1 and problem.warnings[0].startswith(f"--data {path}: every training label")
    with pytest.raises(InputError, match="at least two classes"):
        problems.build(config.resolve({**options, "problem": "mlp", "positive_class": None}))
    counted("one-class data")


def test_two_class_data_gives_no_warning(tmp_path):
    from signsim import problems
    from signsim.interface import config

    path = tmp_path / "two.csv"
    path.write_text("0,1,2\n1,2,1\n0,3,1\n1,0,1\n")
    problem = problems.build(config.resolve({"problem": "logistic", "data": str(path), "test_fraction": 0.0}))
    assert problem.warnings == []


# --- finding 9: memory estimated before allocating --------------------------------------------------------


@contextlib.contextmanager
def address_space(extra: int = 3 * 2**30):
    """RLIMIT_AS at what the process uses plus ``extra``: an allocation beyond fails at once (it would take
    tens of seconds to fail otherwise), and the memory signsim sees as available is this limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        used = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    cap = used + extra if hard == resource.RLIM_INFINITY else min(hard, used + extra)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _wide_npy(path, n: int, d: int) -> None:
    """A header promising n x d float64 and a sparse file of that size (no disk space used)."""
    from numpy.lib import format as npformat

    with open(path, "wb") as f:
        npformat.write_array_header_1_0(f, {"descr": "<f8", "fortran_order": False, "shape": (n, d)})
        f.seek(8 * n * d - 1, io.SEEK_CUR)
        f.write(b"\0")


@pytest.mark.parametrize(("args", "reduce"), [
    (["check-spb", "--problem", "quadratic", "--workers", "2147483647"], "--workers"),
    (["bound", "--problem", "quadratic", "--workers", "2147483647"], "--workers"),
    (["check-spb", "--problem", "quadratic", "--workers", "3000000", "--dim", "10000"], "--workers"),
    (["check-spb", "--grads", "{g}", "--workers", "2147483647"], "--workers"),
    (["check-spb", "--grads", "{g}", "--batch-size", "1000000000"], "--batch-size"),
    (["check-spb", "--grads", "{wide}"], "coordinates"),
    (["diversity", "--grads", "{wide}"], "coordinates"),
    (["run", "--problem", "mlp", "--hidden", "100000000"], "--hidden"),
], ids=["check-spb-workers", "bound-workers", "vote-of-3e6", "grads-workers", "grads-batch", "grads-wide-spb",
        "grads-wide-diversity", "mlp-hidden"])
def test_memory_is_estimated_before_allocating(cli, tmp_path, args, reduce):
    g, wide = tmp_path / "g.npy", tmp_path / "wide.npy"
    np.save(g, np.random.default_rng(0).normal(size=(20, 5)))
    _wide_npy(wide, 2, 200_000_000)
    args = [a.replace("{g}", str(g)).replace("{wide}", str(wide)) for a in args]
    with address_space():
        r = cli(*args, "--quiet")
    line = one_line_error(r, "needs about", "available", reduce)
    assert "not enough memory for this problem size" not in line


#: digits of other scripts that Python's int() and float() take: Arabic-Indic, fullwidth, Devanagari
SCRIPTS = (0x0660, 0xFF10, 0x0966)
#: where a number is written as text, with {} for it (an integer form where the place takes integers)
NUMBER_PLACES = [
    ("run", "--iters", "{}"), ("run", "--workers", "{}"), ("run", "--lr", "0.0{}"), ("run", "--budget-mb", "{}"),
    ("run", "--compressor", "qsgd:{}"), ("run", "--server-opt", "fedavgm:0.{}"), ("run", "--aggregate", "krum:{}"),
    ("check-spb", "--at", "run:{}"), ("diversity", "--transform", "qsgd:{}"),
    ("run", "--data", "synthetic:glm:n={}"), ("bound", "--constant", "L1={}"),
]


@cases()
@given(st.sampled_from(NUMBER_PLACES), st.integers(10, 99_999), st.sampled_from(["underscore", *SCRIPTS]),
       st.integers(0, 8))
def test_a_number_in_a_form_the_docs_do_not_show_is_refused(cli, place, n, how, at):
    """1_000 and digits of other scripts (٥, ５) were accepted by every number option and spec (Python's int and
    float take them); the docs show plain ASCII decimals only."""
    command, option, form = place
    digits = str(n)
    if how == "underscore":
        i = 1 + at % (len(digits) - 1)
        text = digits[:i] + "_" + digits[i:]
    else:
        text = "".join(chr(how + int(c)) for c in digits)
    value = form.format(text)
    extra = ["--problem", "logistic"] if option == "--data" else []
    r = cli(command, option, value, *extra, "--quiet")
    counted("number-forms")
    assert r.code == 2, (value, r.err)
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and value in lines[0] and "Traceback" not in r.err, (value, r.err)


def test_sweep_grids_that_would_run_a_point_twice_or_override_the_file_are_refused(cli, tmp_path):
    cases = {"[grid]\nworkers = [1, 1]\n": "[grid] workers: 1 is listed twice",
             "workers = 4\n[grid]\nworkers = [1, 2]\n": "'workers' is both a top-level option and varied",
             "[[zip]]\nworkers = [2, 2]\nlr = [0.1, 0.1]\n": "[[zip]] #1: (2, 0.1) is listed twice"}
    for i, (text, words) in enumerate(cases.items()):
        f = tmp_path / f"s{i}.toml"
        f.write_text('problem = "quadratic"\niters = 3\n' + text)
        r = cli("sweep", f, "--out", tmp_path / f"o{i}", "--dry-run")
        assert r.code == 2 and words in r.err and len(r.err.strip().splitlines()) == 1, (text, r.err)


def test_nested_x0_fractional_bits_and_python_dash_m(cli, tmp_path):
    for text in ("x0 = [[1.0]]\n", "x0 = [1.0, [2.0]]\n"):
        f = tmp_path / "c.toml"
        f.write_text(text)
        r = cli("run", "--config", f, "--quiet")
        assert r.code == 2 and "'x0' must be a number" in r.err and "Traceback" not in r.err, r.err
    r = cli("run", "--budget-bits", "1000.5", "--quiet")
    assert r.code == 2 and "--budget-bits 1000.5: must be a whole number of bits" in r.err
    import subprocess

    p = subprocess.run([sys.executable, "-m", "signsim", "list"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "compressor" in p.stdout.lower() + p.stderr.lower(), p.stderr


def test_errors_echo_the_value_as_written_and_the_test_aids_check_theirs(cli, monkeypatch):
    for option, value in (("--lr", "1e-400"), ("--workers", "-0"), ("--lr", "1e400")):
        r = cli("run", option, value, "--quiet")
        assert r.code == 2 and f"{option} {value}:" in r.err, r.err
    monkeypatch.setenv("SIGNSIM_MAX_ITERS", "-5")
    r = cli("run", "--quiet")
    assert r.code == 2 and "SIGNSIM_MAX_ITERS=-5" in r.err and "--iters" not in r.err, r.err
    monkeypatch.delenv("SIGNSIM_MAX_ITERS")
    for bad in ("abc", "-1"):
        monkeypatch.setenv("SIGNSIM_MEMORY_LIMIT", bad)
        r = cli("run", "--iters", "2", "--quiet")
        assert r.code == 2 and f"SIGNSIM_MEMORY_LIMIT={bad}: must be" in r.err, r.err



def test_check_spb_refuses_a_point_where_the_gradient_overflows(cli, tmp_path):
    """It reported 'violated' on 31 coordinates with a gradient of nulls."""
    big = tmp_path / "big.npy"
    np.save(big, np.full(31, 1e308))
    r = cli("check-spb", "--at", big, "--quiet")
    assert r.code == 2 and f"--at {big}: the gradient at" in r.err and "not finite" in r.err, r.err
    r = cli("check-spb", "--x0", "1e308", "--quiet")
    assert r.code == 2 and "--x0 1e+308: the gradient at init is not finite" in r.err, r.err


def test_bound_refuses_a_box_whose_constants_overflow(cli):
    """--box 1e160 gave every bound null with no word."""
    r = cli("bound", "--box", "1e160", "--quiet")
    assert r.code == 2 and "--box 1e+160: the smoothness constants over this box overflow" in r.err, r.err
    assert cli("bound", "--box", "1e100", "--quiet").code == 0


def test_gradients_near_the_float_range_give_a_warning_not_numpy_noise(cli, tmp_path):
    """check-spb --grads with an entry of 1e308 printed 12 lines of NumPy RuntimeWarnings."""
    g = np.random.default_rng(0).normal(size=(50, 6))
    g[3, 2] = 1e308
    np.save(tmp_path / "g.npy", g)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # any NumPy overflow warning fails the test
        r = cli("check-spb", "--grads", tmp_path / "g.npy", "--workers", "5", "--quiet")
    assert r.code in (0, 1) and "RuntimeWarning" not in r.err, r.err
    assert r.err.count("warning: ") == 1 and "overflow float64 when squared" in r.err, r.err


#: characters that look like part of a number, or like space, and are not in the docs' plain ASCII forms
LOOKALIKES = ["\u00a0", "\u2007", "\u202f", "\u3000", "\u2003", "_", "\uff11", "\u0661", "\u00b2", "\u2212",
              "\ufeff", "\u200b"]


@st.composite
def number_text(draw) -> tuple[str, bool]:
    """A number's text with lookalike characters (no-break and other Unicode spaces, an underscore, full-width or
    Arabic-Indic digits, a superscript, a minus sign) inserted at random places, or a plain ASCII one with ASCII
    spaces around it; and whether it is plain."""
    core = draw(st.sampled_from(["1", "10", "0.5", "2e3", "-3", "+7", "1e-9"]))
    if draw(st.booleans()):
        return draw(st.sampled_from(["", " ", "\t"])) + core + draw(st.sampled_from(["", " ", "\n"])), True
    chars = list(core)
    for _ in range(draw(st.integers(1, 3))):
        chars.insert(draw(st.integers(0, len(chars))), draw(st.sampled_from(LOOKALIKES)))
    return "".join(chars), False


@cases()
@given(number_text(), st.sampled_from(["workers", "lr", "iters", "momentum"]))
def test_a_number_spelled_with_lookalikes_is_refused_by_every_option(case, name):
    """A no-break space read as 1 by 50 options, 1_0 as 10 by check-stage's integers: an option's number is its
    plain ASCII text or one line naming what was written."""
    from signsim.interface.options import of_command, value

    counted("number text")
    text, plain = case
    option = of_command("run")[name]
    if plain:
        try:
            value(option, text)
        except InputError as e:  # a plain number out of the option's range or of the wrong kind: refused, one line
            assert "\n" not in str(e) and str(e).startswith(option.flag)
        return
    with pytest.raises(InputError) as e:
        value(option, text)
    assert "\n" not in str(e.value) and str(e.value).startswith(option.flag), str(e.value)


# --- issue 50's hostile pass: a generator per class that was found to fail ------------------------------------
# Class 5 (numbers in lookalike characters) has its generator above (test_a_number_spelled_with_lookalikes...); every
# generated invocation of tests/hostile/test_hostile_fuzz.py also ends with a Ctrl-C if still running (class 3).

FAULT_PLUGIN = '''"""A compressor whose faults strike off the smoke test's path, as its parameters say: in about
one call in 1/rate, a write at out[d + off] (off = -1: the last entry, in bounds) and a bit count of ``bits``."""
from signsim.stages.base import Param

STAGE = "compressor"
NAME = "generated-fault"
PARAMS = (Param("off", "int", default=0, low=-1), Param("rate", "float", default=0.0, low=0.0, high=1.0),
          Param("bits", "float", default=1.0))
SUMMARY = "a generated fault"
KIND = "biased"
THEORY = "a test"
SCRATCH = False
BROADCAST = "floats"


def constant(d, *params):
    return None


def may_be_zero(sign_zero):
    return True


def kernel(v, out, p, sign_zero, gen, iwork):
    d = v.shape[0]
    for i in range(d):
        out[i] = 1.0 if v[i] >= 0 else -1.0
    if gen.random() < p[1]:
        out[d + int(p[0])] = 0.0
        return p[2]
    return d * 1.0


def bits(d, p, sign_zero, nonzero):
    return d


def reference(v, p, sign_zero, gen):
    import numpy as np

    return np.where(v >= 0, 1.0, -1.0)
'''


@pytest.fixture(scope="module")
def fault_plugin(tmp_path_factory):
    p = tmp_path_factory.mktemp("fault") / "generated_fault.py"
    p.write_text(FAULT_PLUGIN)
    return p


@cases(150, quick=6)
@given(st.integers(-1, 1000), st.sampled_from([0.0, 1e-3, 0.01, 0.2, 1.0]),
       st.sampled_from(["4", "0", "-1", "1e300", "-1e-300", "nan", "inf"]), st.integers(1, 16), st.integers(1, 40),
       st.integers(1, 20))
def test_a_plugin_s_fault_off_the_smoke_test_s_path_is_one_line(cli, fault_plugin, off, rate, bits, workers, iters,
                                                                 dim):
    """Class 1: a write outside ``out`` or a bad bit count in some calls only (which calls: the run's own draws;
    how far: the generated offset) stops the run with one line naming the file (bounds checks, the loop's check of
    every declared result), or the run is clean: never a crash, a corrupted heap or a silent negative count."""
    counted("50.1-plugin-faults")
    r = cli("run", "--plugin", fault_plugin, "--compressor", f"generated-fault:{off}:{rate}:{bits}", "--aggregate",
            "mean", "--problem", "quadratic", "--dim", str(dim), "--workers", str(workers), "--iters", str(iters),
            "--quiet", "--json")
    if r.code == 0:
        doc = r.json()
        assert all(row["bits_up"] >= 0 for row in doc["history"]), doc["history"]
        return
    line = one_line_error(r)
    assert "generated_fault.py" in line or f"--compressor generated-fault:{off}:{rate}:{bits}" in line, line
    assert "constant()" not in line  # (the plugin itself is sound: only its generated faults may be named)


def _damaged(draw, good: bytes) -> bytes:
    how = draw(st.sampled_from(["truncated", "flipped", "garbage", "empty", "appended"]))
    if how == "truncated":
        return good[:draw(st.integers(0, len(good) - 1))]
    if how == "flipped":
        data = bytearray(good)
        for _ in range(draw(st.integers(1, 4))):
            i = draw(st.integers(0, len(data) - 1))
            data[i] = draw(st.integers(0, 255))
        return bytes(data)
    if how == "garbage":
        return draw(st.binary(min_size=1, max_size=200))
    if how == "empty":
        return b""
    return good + draw(st.binary(min_size=1, max_size=20))


#: what a Numba cache index holds: a source stamp and the compiled overloads' keys and file names
INDEX = (("stamp", 1234567.0, 4096), {((("float64", "int64"), "x86_64", "cpu"), "abc123"): "loop-1.nbc"})


@cases()
@given(st.data(), st.sampled_from([".nbi", ".nbc"]))
def test_a_damaged_cache_file_is_compiled_again_never_a_traceback(tmp_path_factory, data, suffix):
    """Class 2: a kernel cache file damaged in any way (truncated anywhere, bytes changed, garbage, empty, extra bytes)
    is either still read whole or removed with one line naming it and its kernel compiled again."""
    from signsim.interface import kernel_cache

    from ..interface.test_kernel_cache import _reader

    counted("50.2-damaged-cache")
    f = tmp_path_factory.mktemp("cache") / f"k{suffix}"
    good = pickle.dumps(INDEX, protocol=pickle.HIGHEST_PROTOCOL)
    f.write_bytes(_damaged(data.draw, good))
    said: list[str] = []

    def command():
        return _reader(f) if f.exists() else "compiled afresh"

    out = kernel_cache.repairing(command, said.append)
    if out == "compiled afresh":
        assert not f.exists() and len(said) == 1 and str(f) in said[0], said
    else:
        assert said == []  # read as a pickle (the damage left a readable one): Numba checks what it finds


HOSTILE_VALUES = [-1, 0, 1, 2**70, -(2**70), 0.5, float("nan"), float("inf"), -0.0, None, True, "1", "", b"x", [],
                  (1, 2), {}, (1.0, float("nan")), (-1.0, 2.0), 1e300, object()]


@cases()
@given(st.sampled_from(["bits", "down_bits", "rows", "constant", "extra_bits"]),
       st.one_of(st.sampled_from(range(len(HOSTILE_VALUES))).map(lambda i: ("value", HOSTILE_VALUES[i])),
                 st.sampled_from([ZeroDivisionError, ValueError, TypeError, RecursionError, MemoryError,
                                  SystemExit, OverflowError, LookupError]).map(lambda e: ("raises", e))))
def test_a_plugin_s_declaration_is_a_valid_value_or_one_line(attr, outcome):
    """Class 4: whatever a plugin's plain-Python declaration returns or raises (SystemExit included), signsim gets a
    value its contract allows or one InputError naming the file; never a traceback or a silent negative count."""
    import types

    from signsim.stages import plugins

    counted("50.4-declarations")
    how, what = outcome

    def declaration(*args):
        if how == "raises":
            raise what("a plugin's own failure")
        return what

    mod = types.ModuleType("users_plugin")
    mod.__file__ = "/home/user/users_plugin.py"
    setattr(mod, attr, declaration)
    result = {"rows": "rows", "constant": "number", "extra_bits": "pair"}.get(attr, "bits")
    try:
        value = plugins.declared(mod, attr, 4, (), result=result, rows=4)
    except InputError as e:
        assert str(e).startswith("--plugin '/home/user/users_plugin.py': ") and "\n" not in str(e), str(e)
        return
    ok, _ = plugins.RESULTS.get(result, (lambda v: isinstance(v, int) and 1 <= v <= 4, ""))
    assert ok(value) and not (how == "raises"), (attr, outcome, value)


@cases()
@given(st.sampled_from(["STATE_WIDTH", "TRUSTED", "KIND", "BROADCAST", "NAME", "PARAMS", "constant", "bits",
                        "kernel"]), st.sampled_from(range(len(HOSTILE_VALUES))))
def test_a_plugin_s_declared_attribute_is_checked_in_one_line(attr, index):
    """Class 4: a plugin module whose declared attribute is any hostile value is loaded or refused in one line
    naming the file (STATE_WIDTH of -1 or None gave a traceback)."""
    import types

    from signsim.stages import plugins

    counted("50.4-attributes")
    src = (ROOT / "configs" / "plugins" / "scaled_sto_sign.py").read_text()
    mod = types.ModuleType("users_plugin")
    exec(compile(src, "/home/user/users_plugin.py", "exec"), mod.__dict__)  # noqa: S102 - the project's example
    mod.NAME = "users-generated-plugin"
    if attr == "STATE_WIDTH":  # an error feedback's: the example's kind changed
        mod.STAGE = "error_feedback"
    setattr(mod, attr, HOSTILE_VALUES[index])
    try:
        kind = plugins.check_contract(mod, "/home/user/users_plugin.py")
    except InputError as e:
        assert str(e).startswith("--plugin '/home/user/users_plugin.py': "), str(e)
        return
    # accepted: then the value is one the plugin contract (docs/api.md) allows
    value = HOSTILE_VALUES[index]
    allowed = {"STATE_WIDTH": lambda v: type(v) is int and v >= 1, "TRUSTED": lambda v: type(v) is bool,
               "KIND": lambda v: v in plugins.COMPRESSOR_KINDS, "BROADCAST": lambda v: v in plugins.BROADCASTS,
               "NAME": lambda v: isinstance(v, str) and v.strip() == v and v and ":" not in v,
               "PARAMS": lambda v: len(v) == 0}.get(attr, lambda v: callable(v) and hasattr(v, "__code__"))
    assert kind == mod.STAGE and allowed(value), (attr, value)


#: what a model file's own code writes to standard output, and how
MODEL_OUTPUT = ['print({text!r})', 'print({text!r}, end="")', 'import sys; sys.stdout.write({text!r})',
                'import sys; sys.stdout.write({text!r}); sys.stdout.flush()',
                'import os; os.write(1, {text!r}.encode())',
                'import subprocess; subprocess.run(["echo", {text!r}])']
#: where in the model file it does so
MODEL_PLACES = ["import numpy as np\n", "def model():\n", "def loss(output, target):\n", "def data():\n"]


@cases(40, quick=3)
@given(st.sampled_from(MODEL_OUTPUT), st.sampled_from(MODEL_PLACES),
       st.sampled_from(['{"command": "fake"}', "plain words", "]", "\n\n", "\u00e9t\u00e9 \\u0000"]),
       st.sampled_from([("run", "--iters", "2"), ("check-spb", "--samples", "20"), ("diversity",)]))
def test_what_a_model_writes_to_stdout_never_corrupts_json(tmp_path_factory, how, where, text, command):
    """Class 6: whatever a model file's code writes to standard output (print, sys.stdout, the file descriptor
    itself, a process it starts), wherever (at import, building the model, in the loss, loading the data), the
    --json document alone is on stdout."""
    pytest.importorskip("torch")
    from ..conftest import run_subprocess
    from ..torch.test_torch_model import SMALL_FILE

    counted("50.6-model-stdout")
    statement = how.format(text=text)
    indent = "    " if where.startswith("def ") else ""
    src = SMALL_FILE.replace(where, where + indent + statement + "\n", 1)
    path = tmp_path_factory.mktemp("model") / "noisy_model.py"
    path.write_text(src)
    # in a process of its own: what reaches the file descriptor, as a process started by the model writes it, is
    # not seen by an in-process capture
    r = run_subprocess(command[0], "--model", str(path), "--workers", "2", *command[1:], "--json")
    assert r.code in (0, 1), (r.code, r.err)
    assert isinstance(json.loads(r.out), dict), r.out[:500]


#: long commands a signal may stop, each with a file its partial results go to (``{out}``)
SIGNALLED = [
    ("run", "--problem", "quadratic", "--iters", "100000000", "--out", "{out}"),
    ("run", "--problem", "logistic", "--workers", "4", "--iters", "100000000", "--out", "{out}"),
    ("check-spb", "--problem", "quadratic", "--dim", "50", "--estimator", "monte-carlo", "--samples", "1000000000"),
    ("diversity", "--problem", "quadratic", "--dim", "50", "--estimator", "two-batch", "--pairs", "1000000000"),
    # a PyTorch model's rounds run in the main thread once its loop is loaded (``driver.HERE_SECONDS``)
    ("run", "--model", "{model}", "--workers", "4", "--iters", "100000000", "--model-gradients", "grouped", "--out",
     "{out}"),
]


@cases(20, quick=2)
@given(st.sampled_from(range(len(SIGNALLED))), st.sampled_from(["SIGINT", "SIGTERM"]),
       st.sampled_from([0.0, 0.3, 1.0]))
def test_a_signal_at_any_point_of_a_long_command_stops_it_in_one_line(tmp_path_factory, which, name, later):
    """Class 3: SIGINT (to the process group, as a terminal sends it) or SIGTERM, once the command's work is under way
    or ``later`` CPU seconds into it: exit 130 / 143, the one line "signsim: interrupted" / "terminated", within
    about a second of the command's own CPU time, and a run's partial results in its --out file."""
    import subprocess

    from ..conftest import ACT_WITHIN_CPU, exit_after_signal, wait_for_cpu, wait_until_ready

    counted("50.3-signals")
    sig = getattr(signal, name)
    tmp = tmp_path_factory.mktemp("signal")
    out, ready = tmp / "r.json", tmp / "ready"
    args = [a.replace("{out}", str(out)) for a in SIGNALLED[which]]
    if "{model}" in args:
        pytest.importorskip("torch")
        from ..torch.test_torch_model import SMALL_FILE

        (tmp / "model.py").write_text(SMALL_FILE)
        args = [a.replace("{model}", str(tmp / "model.py")) for a in args]
    p = subprocess.Popen([sys.executable, "-m", "signsim.cli", *args, "--quiet"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True,
                         env={**os.environ, "SIGNSIM_READY_FILE": str(ready)})
    wait_until_ready(p, ready)
    if later:
        wait_for_cpu(p, later)
    os.killpg(p.pid, sig) if sig == signal.SIGINT else os.kill(p.pid, sig)
    err, took = exit_after_signal(p)
    code, line = (130, "signsim: interrupted") if sig == signal.SIGINT else (143, "signsim: terminated")
    assert p.returncode == code and err.strip().splitlines() == [line], (p.returncode, err)
    assert took < ACT_WITHIN_CPU, took
    if "--out" in args:
        assert json.loads(out.read_text())["status"] == "interrupted"


@cases()
@given(st.sampled_from([("quadratic", ""), ("logistic", "data = \"builtin:breast-cancer\"\n"),
                        ("mlp", "hidden = 4\n")]),
       st.sampled_from(["loss", "test_loss", "train_acc", "test_acc", "accuracy", "f1", "", "LOSS", "loss "]))
def test_a_robustness_metric_is_checked_before_the_first_run(cli, tmp_path_factory, problem, metric):
    """Class 8: a ``[robustness]`` table's metric, of any name, on a problem that may not record it: the plan takes
    it or refuses it in one line naming it, before any run (a dry run writes nothing); quadratic records the loss
    only."""
    counted("50.8-robustness-metric")
    tmp = tmp_path_factory.mktemp("metric")
    p = tmp / "s.toml"
    p.write_text(f'problem = "{problem[0]}"\nworkers = 6\niters = 5\n{problem[1]}[robustness]\naggregate = '
                 f'["mean"]\nattack = ["alie"]\nbyzantine = [1]\nmetric = "{metric}"\n')
    r = cli("sweep", p, "--out", tmp / "o", "--dry-run")
    if r.code == 0:
        assert metric in ("loss", "test_loss", "train_acc", "test_acc") and (problem[0] != "quadratic"
                                                                               or metric == "loss"), r.err
        return
    one_line_error(r, "metric", repr(metric) if metric not in ("loss", "test_loss", "train_acc", "test_acc")
                   else metric)
    assert not (tmp / "o" / "runs").exists()


def _spec(module) -> str:
    """The stage's name with each parameter at its default (or its lowest value, or its first choice)."""
    values = []
    for p in module.PARAMS:
        if p.default is not None:
            values.append(str(p.default))
        elif p.kind == "choice":
            values.append(p.choices[0])
        elif p.low is not None:
            values.append(str(int(p.low) + 1 if p.kind == "int" else (p.low + 0.1 if p.low_open else p.low)))
        else:
            values.append("1")
    return ":".join([module.NAME, *values])


@cases(300, quick=10)
@given(st.data(), st.sampled_from(["aggregation", "pre_aggregation"]), st.integers(10_000, 1_000_000),
       st.integers(10, 10_000))
def test_a_server_rule_at_any_size_is_refused_before_it_allocates_or_runs(cli, data, kind, workers, dim):
    """Class 7: every robust rule (drawn from the catalog) at sizes whose work alone is years (K M d >= 10^17
    operations) is one line before any allocation (the address space is limited) and before any kernel compiles."""
    from signsim.stages import registry

    counted("50.7-server-work")
    modules = sorted(registry.stages(kind).items())
    name, module = data.draw(st.sampled_from(modules))
    spec = _spec(module)
    iters = -(-10**17 // (workers * dim))
    option = "--aggregate" if kind == "aggregation" else "--pre-aggregate"
    with address_space():
        r = cli("run", option, spec, *(["--aggregate", "mean"] if kind == "pre_aggregation" else []), "--workers",
                str(workers), "--dim", str(dim), "--iters", str(iters), "--problem", "quadratic", "--quiet")
    one_line_error(r)


def test_a_loop_of_symbolic_links_as_a_model_file_is_one_line(cli, tmp_path):
    """Issue 50, class 4: ``--model`` naming a loop of links gave Python's RuntimeError traceback."""
    (tmp_path / "a.py").symlink_to(tmp_path / "b.py")
    (tmp_path / "b.py").symlink_to(tmp_path / "a.py")
    r = cli("run", "--model", tmp_path / "a.py", "--iters", "2")
    one_line_error(r, "--model", "a.py", "cannot follow its links")


def test_a_loop_of_links_is_one_line_where_resolve_says_nothing(cli, tmp_path, monkeypatch):
    """Python >= 3.13 resolves a loop of links to itself without an error: the stat after it names the loop."""
    import pathlib

    (tmp_path / "a.py").symlink_to(tmp_path / "b.py")
    (tmp_path / "b.py").symlink_to(tmp_path / "a.py")
    monkeypatch.setattr(pathlib.Path, "resolve", lambda self, strict=False: self.absolute())
    r = cli("run", "--model", tmp_path / "a.py", "--iters", "2")
    one_line_error(r, "--model", "a.py", "cannot follow its links")


def test_zz_report_case_counts(capsys):
    with capsys.disabled():
        print(f"\nhostile classes, cases run: {json.dumps(COUNTS, sort_keys=True)} ({sum(COUNTS.values())} in all)")


def test_a_file_the_memory_cannot_hold_is_one_line_before_it_is_read(cli, tmp_path, monkeypatch):
    """Issue 50, item 7: a 20 GB (sparse) model file was read whole (killed by the kernel's OOM killer on a 24 GB
    machine). Every text or source file a command reads (model, plugin, config, results JSON) and a --at vector is
    checked against the memory its reading takes, before it is read: exit 2, one line naming the file."""
    import importlib.util

    big = tmp_path / "big_model.py"
    with open(big, "wb") as f:
        f.truncate(20 * 2**30)  # sparse: no disk used
    if importlib.util.find_spec("torch") is not None:  # (--problem model needs PyTorch)
        r = cli("run", "--problem", "model", "--model", big, "--iters", "2", "--quiet")
        assert r.code == 2 and f"--model {big}: reading this 21,474,836,480-byte file needs about" in r.err, r.err
        assert len(r.err.strip().splitlines()) == 1 and "use a smaller file" in r.err
    r = cli("run", "--plugin", big, "--iters", "2", "--quiet")
    assert r.code == 2 and f"--plugin '{big}': reading this 21,474,836,480-byte file" in r.err, r.err
    big.unlink()

    monkeypatch.setenv("SIGNSIM_MEMORY_LIMIT", "20000")  # then a file of 5,000 bytes (parsed at ~10 bytes a byte)
    text = tmp_path / "five.py"
    text.write_text("#" * 4999 + "\n")
    toml = tmp_path / "five.toml"
    toml.write_text("#" * 4999 + "\n")
    results = tmp_path / "five.json"
    results.write_text(" " * 4999 + "\n")
    vector = tmp_path / "v.npy"
    np.save(vector, np.zeros(4000))
    for args, where in ((("run", "--plugin", text, "-q"), f"--plugin '{text}'"),
                        (("run", "--config", toml, "-q"), f"--config {toml}"),
                        (("plot", results, "--out", tmp_path / "f.png"), str(results))):
        r = cli(*args)
        assert r.code == 2 and r.err.startswith(f"signsim: error: {where}") and "needs about" in r.err, (args, r.err)
        assert len(r.err.strip().splitlines()) == 1
    from signsim.data.files import load_npy
    from signsim.errors import InputError

    with pytest.raises(InputError, match=r"--at v.npy: an array of shape \(4000,\) needs about 32.0 kB"):
        load_npy(vector, "--at v.npy")  # (the CLI's --at refuses a problem of this size first, at this limit)


def test_a_sweep_s_own_run_file_is_not_charged_as_a_file_to_parse(tmp_path, monkeypatch):
    """A review: with little memory, the memory check made a finished run's file 'damaged', so the sweep ran it
    again and left its rows out of results.csv. A sweep's own files are read as they were written."""
    import json

    from signsim.sweep.store import Store

    store = Store(tmp_path)
    doc = {"status": "failed", "error": "x" * 4000, "config": {}, "history": [], "final": {}}
    store.path("r1").parent.mkdir(parents=True, exist_ok=True)
    store.path("r1").write_text(json.dumps(doc))
    monkeypatch.setenv("SIGNSIM_MEMORY_LIMIT", "20000")  # less than 10 bytes a byte of the 4 kB file, with headroom
    loaded = store.load("r1")
    assert loaded is not None and loaded["status"] == "failed"
