"""Issue #18: generated hostile values for every option of every command (read from the command line
definition, so a new option is covered without editing this file) and for every file format.

Each case runs in this process under a real address-space limit (RLIMIT_AS: what the process already uses
plus CASE_MEMORY) and a time limit (after CASE_SECONDS a SIGINT arrives, as from a terminal: the command
must then stop within GRACE of this process's CPU seconds, which a loaded machine does not stretch, with exit
130, or its own code if it was already writing its results). The outcome must be exit 0 or 1 (check-spb and sweep),
2 with one stderr line naming the option or file, or 130 after the alarm; never a traceback.
Profiles: quick by default, HYPOTHESIS_PROFILE=long for many more cases."""

import contextlib
import gzip
import io
import json
import os
import resource
import signal
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

CASE_MEMORY = 3 * 2**30
CASE_SECONDS = 5.0
GRACE = 2.0  # CPU seconds of this process from the Ctrl-C to the command's end
COUNTS: dict[str, int] = {}

HUGE_INTS = ["0", "-1", "-5", "1", "2", "3", str(2**31), str(2**63), str(10**16), "9" * 23, "1e3", "0x10", "",
             " ", "x"]
HOSTILE_FLOATS = ["nan", "-nan", "inf", "-inf", "1e308", "-1e308", "1e-320", "0", "-0", "0.5", "1", "2", "-1",
                  "1+2j", "", "abc"]
HOSTILE_TEXT = ["", " ", ":", "::", "x:", "gaussian:", "shared:", "label-skew:", "label-skew:nan",
                "label-skew:1e400", "student-t:0:1", "gaussian:1e200", "gaussian:1e400", "\u00e9", "a" * 300,
                "run:", "run:" + "9" * 23, "run:-1", "run:3", "init", "optimum"]
KNOWN = {
    "--problem": ["rosenbrock", "quadratic", "sign-trap", "vote-trap", "logistic", "least-squares", "mlp"],
    "--method": ["sgd", "signsgd", "signum", "ssdm", "ef-signsgd", "sto-sign"],
    "--noise": ["none", "gaussian:1", "laplace:0.5", "uniform:2", "student-t:3:1", "bimodal:1", "skewed:1"],
    "--aggregate": ["mean", "majority"], "--lr-schedule": ["constant", "sqrt"], "--attack": ["invert", "random"],
    "--sign-zero": ["random", "plus", "zero"], "--tie": ["random", "zero"], "--oracle": ["full", "term"],
    "--data": ["builtin:digits", "builtin:breast-cancer", "builtin:x"],
    "--split": ["shared", "iid", "sorted", "label-skew:0.5", "split-batch"], "--activation": ["relu", "tanh"],
    "--estimator": ["auto", "exact", "closed-form", "monte-carlo", "population", "two-batch"],
    "--interval": ["wilson", "clopper-pearson"], "--correction": ["holm", "bonferroni", "none"],
    "--at": ["init", "optimum", "run:2"], "--constant": ["K=-5", "M=1.5", "alpha=0.7", "sigma1=-1", "L1=0",
                                                         "gamma=0", "F=1e308", "K=1e300", "f0=-1", "d=0"],
    "--executor": ["local", "dask", "ray"], "--scheduler": ["tcp://127.0.0.1", "localhost", "::1", "a:b"],
    "--x": ["iter", "bits", "megabytes", "time", "workers"], "--y": ["loss", "accuracy", "rho-min", "B_S"],
    "--group-by": ["lr", "method", "nothing"],
}


def _kind(param) -> str:
    """int, float, path, text or flag, from the option's declared Python type."""
    if getattr(param, "is_flag", False):
        return "flag"
    name = param.opts[0]
    ann = str(getattr(param, "_signsim_annotation", ""))
    return {"int": "int", "float": "float"}.get(ann, "path" if name in ("--config", "--overlay", "--out", "--plot")
                                                  else "text")


def command_options() -> dict[str, dict[str, str]]:
    import inspect

    import typer.main

    from signsim.cli import app

    group = typer.main.get_command(app)
    out = {}
    for name, cmd in group.commands.items():
        hints = {}
        for p in inspect.signature(cmd.callback).parameters.values():
            ann = p.annotation
            args = getattr(ann, "__args__", None) or ()
            base = args[0] if args else ann
            inner = getattr(base, "__args__", None) or (base,)
            hints[p.name] = next((t.__name__ for t in inner if t in (int, float)), "")
        opts = {}
        for p in cmd.params:
            if p.param_type_name != "option":
                continue
            p._signsim_annotation = hints.get(p.name, "")
            opts[p.opts[0]] = _kind(p)
        out[name] = opts
    return out


OPTIONS = command_options()


def special_paths(tmp):
    d = tmp / "adir"
    d.mkdir(exist_ok=True)
    fifo = tmp / "fifo.csv"
    if not fifo.exists():
        os.mkfifo(fifo)
    f = tmp / "file.txt"
    f.write_text("x")
    return [str(d), str(fifo), "/dev/zero", "/dev/null", "/proc/signsim/x.json", str(f / "under.json"), "",
            str(tmp / ("n" * 300 + ".json")), str(tmp / "missing.npy"), str(tmp / "ok.json"), str(tmp / "ok.png")]


@st.composite
def invocation(draw, tmp):
    command = draw(st.sampled_from(sorted(c for c in OPTIONS if c != "list")))
    opts = OPTIONS[command]
    chosen = draw(st.lists(st.sampled_from(sorted(opts)), max_size=5, unique=True))
    args = [command]
    if command == "sweep":
        args.append(str(tmp / "tiny.toml"))
        if "--dry-run" not in chosen and draw(st.booleans()):
            chosen.append("--dry-run")
    if command == "plot":
        args.append(str(tmp / "run.json"))
    for name in chosen:
        kind = opts[name]
        if kind == "flag":
            args.append(name)
            continue
        pool = list(KNOWN.get(name, []))
        if kind == "int":
            pool += HUGE_INTS
        elif kind == "float":
            pool += HOSTILE_FLOATS
        elif kind == "path":
            pool += special_paths(tmp)
        else:
            pool += HOSTILE_TEXT + special_paths(tmp)[:5]
        args += [name, draw(st.sampled_from(pool))]
    return args


@contextlib.contextmanager
def limits():
    """RLIMIT_AS at current use + CASE_MEMORY; a SIGINT (like Ctrl-C) after CASE_SECONDS."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        used = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    cap = used + CASE_MEMORY if hard == resource.RLIM_INFINITY else min(hard, used + CASE_MEMORY)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    fired: dict[str, float] = {}

    def ctrl_c(*_) -> None:
        fired["cpu"] = time.process_time()
        os.kill(os.getpid(), signal.SIGINT)

    previous = signal.signal(signal.SIGALRM, ctrl_c)
    signal.setitimer(signal.ITIMER_REAL, CASE_SECONDS)
    try:
        yield fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def check(cli, args, suite):
    with limits() as fired:
        r = cli(*args)
    after = time.process_time() - fired["cpu"] if fired else 0.0
    COUNTS[suite] = COUNTS.get(suite, 0) + 1
    assert "Traceback" not in r.err, (args, r.err)
    assert r.code in (0, 1, 2, 130), (args, r.code, r.err)
    assert r.code == 130 or not fired or "interrupted" not in r.err, (args, r.code, r.err)
    assert after < GRACE, (args, after)  # stopped within GRACE CPU seconds of the Ctrl-C
    if r.code == 1:
        assert args[0] in ("check-spb", "sweep"), (args, r.err)
    if r.code == 2:
        lines = [line for line in r.err.splitlines() if line.strip() and not line.startswith("signsim: warning")]
        assert len(lines) == 1, (args, r.err)
        assert lines[0].startswith("signsim: error: "), (args, r.err)
        assert any(t in lines[0] for t in ("--", "/", "'", "SIGNSIM_", "memory")), (args, lines[0])


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    """Commands that write to a default place relative to the working directory (``sweep`` without --out:
    results/NAME/) write under the test's own folder, never into the checkout."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("arena")
    (tmp / "tiny.toml").write_text('problem = "quadratic"\niters = 3\n[grid]\nlr = [0.1, 0.2]\n')
    # its runs compiled once, untimed, before the timed cases: a sweep interrupted while its workers compile waits
    # for them (the drain), so a case must not be the first to compile them (the slow step runs with its own thread
    # count, whose loops the fast step's warm-up did not compile)
    from signsim.cli import main

    with contextlib.suppress(SystemExit):
        main(["sweep", str(tmp / "tiny.toml"), "--out", str(tmp / "warm-sweep"), "--quiet"])
    return tmp


@pytest.fixture(scope="module")
def run_json(arena):
    from signsim.cli import main

    with contextlib.suppress(SystemExit):
        main(["run", "--problem", "quadratic", "--iters", "4", "--out", str(arena / "run.json"), "--quiet"])
    return arena / "run.json"


@given(st.data())
def test_every_option_of_every_command(cli, monkeypatch, arena, run_json, data):
    monkeypatch.setenv("SIGNSIM_MAX_ITERS", "15")
    args = data.draw(invocation(arena))
    check(cli, args, "options")


TOML_VALUES = st.one_of(st.sampled_from(["-1", "0", "1", str(2**63 - 1), str(10**16), "1e400", "nan", "inf",
                                         "-inf", "1.5", "true", '""', '" "', '"x:"', "[]", "[1, -1]", "{}",
                                         '"gaussian:1e300"', '"shared:"', "1979-05-27", '"\\u0000"']),
                        st.integers(-10**20, 10**20).map(str))


@given(st.dictionaries(st.sampled_from(sorted(__import__("signsim.interface.options", fromlist=["RECORD"]).RECORD)),
                       TOML_VALUES, max_size=4), st.booleans(), st.sampled_from(["run", "sweep"]))
def test_every_option_in_config_and_sweep_files(cli, monkeypatch, tmp_path, entries, dashed, where):
    monkeypatch.setenv("SIGNSIM_MAX_ITERS", "15")
    lines = [f"{k.replace('_', '-') if dashed else k} = {v}" for k, v in entries.items()]
    path = tmp_path / "gen.toml"
    if where == "run":
        path.write_text("\n".join(lines) + "\n")
        check(cli, ["run", "--config", str(path), "--quiet"], "config")
    else:
        grid = [f"{k} = [{v}]" for k, v in entries.items()]
        path.write_text("repeats = 1\n[grid]\n" + "\n".join(grid) + "\n")
        check(cli, ["sweep", str(path), "--dry-run", "--quiet", "--out", str(tmp_path / "o")], "sweep")


# --- every file format: valid files, then mutated --------------------------------------------------------


def _valid(fmt: str) -> bytes:
    rng = np.random.default_rng(0)
    X, y = np.round(rng.normal(size=(10, 3)), 3), rng.integers(0, 2, 10).astype(float)
    if fmt in ("csv", "csv.gz"):
        text = "\n".join(",".join(map(str, [yy, *row])) for yy, row in zip(y, X, strict=True)).encode()
        return gzip.compress(text) if fmt == "csv.gz" else text
    if fmt == "svm":
        return "\n".join(f"{yy:g} " + " ".join(f"{j + 1}:{v}" for j, v in enumerate(row))
                         for yy, row in zip(y, X, strict=True)).encode()
    if fmt == "npz":
        buf = io.BytesIO()
        np.savez_compressed(buf, X=X, y=y)
        return buf.getvalue()
    if fmt == "npy":
        buf = io.BytesIO()
        np.save(buf, np.ones(10))
        return buf.getvalue()
    if fmt == "idx":
        imgs = rng.integers(0, 255, (10, 2, 2)).astype(np.uint8)
        return bytes([0, 0, 8, 3]) + b"".join(int(s).to_bytes(4, "big") for s in imgs.shape) + imgs.tobytes()
    if fmt == "json":
        return json.dumps({"command": "run", "config": {"problem": "quadratic"}, "history": [], "final": {}}).encode()
    if fmt == "toml":
        return b'problem = "quadratic"\niters = 3\n'
    raise AssertionError(fmt)


FORMATS = ["csv", "csv.gz", "svm", "npz", "npy", "idx", "json", "toml"]
MUTATIONS = st.one_of(
    st.tuples(st.just("truncate"), st.floats(0, 1)),
    st.tuples(st.just("flip"), st.lists(st.tuples(st.floats(0, 1), st.integers(1, 255)), min_size=1, max_size=8)),
    st.tuples(st.just("insert"), st.sampled_from([b"\xef\xbb\xbf", b"\x00", b"nan", b"1e999", b"99999999999:1",
                                                  b"\n\n", b",", b"\xff\xfe", b"1000000:1", b"-"])),
    st.tuples(st.just("none"), st.just(0)),
)


def mutate(raw: bytes, mutation) -> bytes:
    kind, arg = mutation
    if kind == "truncate":
        return raw[: int(len(raw) * arg)]
    if kind == "flip":
        out = bytearray(raw)
        for where, bits in arg:
            if out:
                out[min(len(out) - 1, int(where * len(out)))] ^= bits
        return bytes(out)
    if kind == "insert":
        return raw + arg if raw.endswith(b"\n") else raw + b"\n" + arg
    return raw


@given(st.sampled_from(FORMATS), MUTATIONS)
def test_every_file_format_mutated(cli, monkeypatch, tmp_path, fmt, mutation):
    monkeypatch.setenv("SIGNSIM_MAX_ITERS", "5")
    content = mutate(_valid(fmt), mutation)
    if fmt == "idx":
        path = tmp_path / "g-images-idx3-ubyte"
        labels = bytes([0, 0, 8, 1, 0, 0, 0, 10]) + bytes(range(10))
        (tmp_path / "g-labels-idx1-ubyte").write_bytes(labels)
    else:
        path = tmp_path / f"g.{fmt}"
    path.write_bytes(content)
    if fmt == "npy":
        args = ["check-spb", "--problem", "quadratic", "--at", str(path), "--quiet"]
    elif fmt == "json":
        args = ["plot", str(path), "--out", str(tmp_path / "f.png")]
    elif fmt == "toml":
        args = ["run", "--config", str(path), "--quiet"]
    else:
        args = ["run", "--problem", "least-squares", "--data", str(path), "--quiet"]
    check(cli, args, f"file:{fmt}")


def test_zz_report_case_counts(capsys):
    with capsys.disabled():
        print(f"\nhostile cases run: {json.dumps(COUNTS, sort_keys=True)}")
