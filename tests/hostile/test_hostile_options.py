"""Hostile values for every option, in Python and on the command line (issue #25: hostile finding 5, finding 7
and the option handling of the smaller findings). One generator per class of value (integer, number, text
with choices, file name, flag, list, callback), drawn for every option of that class from ``signsim.interface.options``:
in Python each is an ``InputError`` naming the option (never a TypeError, a MemoryError or a silent
acceptance); on the command line exit 2 and one line naming the option and echoing the value."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import signsim
from signsim import api
from signsim.errors import InputError
from signsim.interface import options

from ..cli.test_cli import assert_one_line_error

#: keywords with Python forms of their own (arrays, vectors, results), each tested below
OWN_FORMS = {"data", "x0", "at", "overlay", "constant", "config"}
G = np.random.default_rng(0).standard_normal((12, 3)) + 0.2

#: the Python functions whose keywords come from the table, with what a call needs besides the keyword
CALLS = {
    "run": lambda kw: signsim.run(**kw),
    "check_spb": lambda kw: signsim.check_spb(**kw),
    "diversity": lambda kw: signsim.diversity(**kw),
    "bound": lambda kw: signsim.bound(**kw),
    "sweep": lambda kw: api.sweep("never-read.toml", **kw),
    "spb_from_samples": lambda kw: signsim.spb_from_samples(G, **kw),
    "diversity_from_samples": lambda kw: signsim.diversity_from_samples(G, **kw),
}
OTHER = st.sampled_from([object(), b"4", 1 + 2j, [object()], {"a": 1}, (1, 2), set()])


def _int_text(s: str) -> bool:
    try:
        int(s.strip())
        return True
    except ValueError:
        return False


def _float_text(s: str) -> bool:
    try:
        float(s.strip())
        return True
    except ValueError:
        return False


def out_of_range(o: options.Option):
    """Numbers just outside the option's range (and far outside)."""
    parts = []
    if o.lo is not None:
        below = st.integers(max_value=int(math.ceil(o.lo)) - 1) if o.kind == "int" else \
            st.floats(max_value=o.lo, exclude_max=not o.lo_open, allow_nan=False, allow_infinity=False)
        parts.append(below)
    if o.hi is not None:
        above = st.integers(min_value=int(o.hi) + 1) if o.kind == "int" else \
            st.floats(min_value=o.hi, exclude_min=not o.hi_open, allow_nan=False, allow_infinity=False)
        parts.append(above)
    return parts


def hostile_python(o: options.Option):
    """The generator of the option's class: values no option of that class takes."""
    if o.kind == "int":
        return st.one_of(OTHER, st.booleans(), st.none().map(lambda _: math.nan), st.just(math.inf),
                         st.floats().filter(lambda f: not (math.isfinite(f) and f.is_integer())),
                         st.text(max_size=8).filter(lambda s: not _int_text(s)), *out_of_range(o))
    if o.kind == "float":
        return st.one_of(OTHER, st.booleans(), st.sampled_from([math.nan, math.inf, -math.inf, "nan", "inf"]),
                         st.text(max_size=8).filter(lambda s: not _float_text(s)), *out_of_range(o))
    if o.kind == "str":
        bad = [OTHER, st.integers(), st.floats(), st.booleans(), st.sampled_from(["", "  "])]
        if o.choices:
            bad.append(st.text(min_size=1, max_size=10).filter(lambda s: s not in o.choices and s.strip()))
        return st.one_of(*bad)
    if o.kind in ("path", "file"):
        return st.one_of(OTHER, st.integers(), st.floats(), st.booleans(), st.lists(st.text(max_size=3), max_size=2))
    if o.kind == "bool":
        return st.one_of(OTHER, st.integers(), st.floats(), st.text(max_size=5))
    if o.kind == "strs":
        return st.one_of(st.integers(), st.floats(), st.lists(st.integers(), min_size=1, max_size=3),
                         st.just([""]), st.just([b"x"]))
    if o.kind == "callable":
        return st.one_of(st.text(max_size=5), st.integers(), st.lists(st.integers(), max_size=2))
    raise AssertionError(o.kind)


def _cases(kind: str):
    return sorted((f, name) for f in CALLS for name, o in options.of_function(f).items()
                  if o.kind == kind and name not in OWN_FORMS)


def _check_python(function: str, name: str, value) -> None:
    o = options.of_function(function)[name]
    with pytest.raises(InputError) as e:
        CALLS[function]({name: value})
    text = str(e.value)
    assert "\n" not in text and "unknown option" not in text, (function, name, value, text)
    assert o.flag in text or name in text, (function, name, value, text)


@pytest.mark.parametrize("kind", ["int", "float", "str", "path", "file", "bool", "strs", "callable"])
@given(data=st.data())
def test_python_refuses_hostile_values_naming_the_option(kind, data):
    cases = _cases(kind)
    if not cases:
        return
    function, name = data.draw(st.sampled_from(cases))
    value = data.draw(hostile_python(options.of_function(function)[name]))
    _check_python(function, name, value)


# --- finding 5, case by case --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["batch_size", "samples", "seed", "top", "confidence", "sign_zero", "tie",
                                  "interval", "correction"])
def test_none_for_a_sample_option_with_a_default(name):
    with pytest.raises(InputError, match=options.flag(name)):
        signsim.spb_from_samples(G, **{name: None})
    with pytest.raises(InputError, match="--delta"):
        signsim.diversity_from_samples(G, delta=None)
    assert signsim.spb_from_samples(G, workers=None)["verdict"]  # workers: None is "no vote"


def test_seed_beyond_two_to_the_64():
    with pytest.raises(InputError, match="--seed"):
        signsim.spb_from_samples(G, seed=2**64)
    with pytest.raises(InputError, match="--seed"):
        signsim.run(seed=2**64, iters=1)


def test_workers_whose_vote_cannot_fit_in_memory():
    with pytest.raises(InputError, match="--workers 2147483647.*memory"):
        signsim.spb_from_samples(G, workers=2**31 - 1)


@pytest.mark.parametrize("call", [
    lambda: signsim.run(out=123, iters=1),
    lambda: signsim.run(progress="x", iters=1),
    lambda: api.sweep(5),
    lambda: api.sweep(None),
    lambda: api.sweep("s.toml", out=5),
], ids=["run-out", "run-progress", "sweep-5", "sweep-None", "sweep-out"])
def test_wrong_types_are_input_errors(call):
    with pytest.raises(InputError):
        call()


def test_complex_values_are_refused_not_cut_to_their_real_part():
    with pytest.raises(InputError, match="--x0"):
        signsim.run(problem="quadratic", dim=2, x0=1 + 2j, iters=1)
    with pytest.raises(InputError, match="--x0.*complex"):
        signsim.run(problem="quadratic", dim=2, x0=np.array([1 + 1j, 2]), iters=1)
    with pytest.raises(InputError, match="--at.*complex"):
        signsim.check_spb(problem="quadratic", dim=2, at=np.array([1 + 1j, 2]))
    X = np.ones((6, 2)) * (1 + 1j)
    with pytest.raises(InputError, match="data: X.*complex"):
        signsim.run(problem="logistic", data=(X, np.array([0, 1] * 3)), iters=1)


def test_row_blocks_with_no_columns():
    with pytest.raises(InputError, match="0 columns"):
        signsim.spb_from_samples([np.zeros((3, 0))])
    with pytest.raises(InputError, match="0 columns"):
        signsim.diversity_from_samples(iter([np.zeros((2, 0)), np.zeros((2, 0))]))


# --- the command line ---------------------------------------------------------------------------------------

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Zs")), min_size=1,
               max_size=10).filter(lambda s: not s.startswith("-"))


def hostile_text(o: options.Option):
    """Text the option's class refuses (as typed on a command line)."""
    if o.kind == "int":
        return st.one_of(TEXT.filter(lambda s: not _int_text(s)), st.sampled_from(["1.5", "1e3", "1,2", "0x10"]),
                         *[s.map(str) for s in out_of_range(o)])
    if o.kind == "float":
        return st.one_of(TEXT.filter(lambda s: not _float_text(s)), st.sampled_from(["1e-2,1e-3", "nan", "inf"]),
                         *[s.map(repr) for s in out_of_range(o)])
    return TEXT.filter(lambda s: s not in o.choices)


def _cli_cases():
    out = []
    for command in ("run", "check-spb", "diversity", "bound", "sweep"):
        for name, o in options.of_command(command).items():
            if o.kind in ("int", "float") or (o.kind == "str" and o.choices):
                out.append((command, name))
    return sorted(out)


@given(data=st.data())
def test_cli_refuses_hostile_text_naming_the_option_and_the_value(cli, tmp_path_factory, data):
    command, name = data.draw(st.sampled_from(_cli_cases()))
    o = options.of_command(command)[name]
    text = data.draw(hostile_text(o))
    args = [command] + (["missing-sweep.toml"] if command == "sweep" else []) + [o.flag, text]
    r = cli(*args)
    assert_one_line_error(r, o.flag)
    line = r.err.strip()
    shown = {text, text.strip(), repr(text)}
    shown = shown | {"".join(c if c.isprintable() else repr(c)[1:-1] for c in s) for s in shown}  # one line
    try:
        shown |= {str(int(text)), str(float(text)), repr(float(text))}
    except (ValueError, OverflowError):
        pass
    assert any(s in line for s in shown), (args, line)


def test_a_list_of_values_names_the_value_and_the_sweep(cli):
    r = cli("run", "--lr", "1e-2,1e-3")
    assert_one_line_error(r, "--lr '1e-2,1e-3'", "[grid]")


def test_did_you_mean(cli):
    assert_one_line_error(cli("run", "--method", "signSGD"), "did you mean 'signsgd'")
    assert_one_line_error(cli("run", "--problem", "rosenbrok"), "did you mean 'rosenbrock'")
    assert_one_line_error(cli("run", "--noise", "gausian:1"), "did you mean 'gaussian'")
    assert_one_line_error(cli("run", "--lr-schedule", "sqr"), "did you mean 'sqrt'")
    assert_one_line_error(cli("check-spb", "--interval", "Wilson"), "did you mean 'wilson'")
    with pytest.raises(InputError, match="did you mean '--batch-size'"):
        signsim.run(batchsize=4)
    # one did-you-mean everywhere (signsim.suggest): case, hyphens and underscores ignored first
    assert_one_line_error(cli("run", "--votes", "perworker"), "did you mean 'per-worker'")
    with pytest.raises(InputError, match="did you mean '--workers'"):
        signsim.run(Workers=3)
    assert_one_line_error(cli("run", "--compressor", "TOP_K:3"), "did you mean 'top-k'")
    from signsim import methods, noise, problems

    for lookup in (problems.get, methods.get, noise.parse):  # a value that is no name: an InputError still
        with pytest.raises(InputError, match="unknown"):
            lookup(3)


def test_a_sweep_file_given_to_run_points_to_sweep(cli, tmp_path):
    p = tmp_path / "s.toml"
    p.write_text('problem = "quadratic"\nrepeats = 2\n[grid]\nlr = [0.1, 0.01]\n')
    assert_one_line_error(cli("run", "--config", p), "signsim sweep", str(p))


# --- finding 7: a derived default is never blamed on the user ----------------------------------------------


@pytest.mark.parametrize("iters", [10**11, 10**12, 10**15])
def test_huge_iters_keep_a_valid_derived_eval_every(iters):
    from signsim.interface import config

    cfg = config.resolve({"iters": iters})
    assert cfg.iters == iters and 1 <= cfg.eval_every <= options.MAX_SIZE
    assert config.resolve({"iters": 5000}).eval_every == 50  # unchanged where it fits


def test_bound_with_huge_iters(cli):
    r = cli("bound", "--iters", "1000000000000", "--json")
    assert r.code == 0, r.err
    assert "--eval-every" not in r.err and r.json()["config"]["iters"] == 10**12


# --- issue 34: options accepted without effect --------------------------------------------------------------


@pytest.mark.parametrize(("args", "words"), [
    (["run", "--problem", "quadratic", "--attack", "alie:1", "--iters", "3"], ["--attack alie:1", "--byzantine"]),
    (["check-spb", "--problem", "quadratic", "--attack", "invert", "--byzantine", "0"], ["--attack invert"]),
    (["bound", "--problem", "quadratic", "--attack", "random"], ["--attack random"]),
    (["diversity", "--problem", "logistic", "--estimator", "exact", "--small-batch", "4"],
     ["--small-batch 4", "--estimator exact"]),
    (["diversity", "--problem", "logistic", "--estimator", "exact", "--pairs", "40"], ["--pairs 40"]),
    (["check-spb", "--problem", "quadratic", "--estimator", "closed-form", "--samples", "100"],
     ["--samples 100", "closed-form"]),
], ids=["run-attack", "check-spb-attack", "bound-attack", "small-batch-exact", "pairs-exact", "samples-closed-form"])
def test_an_option_without_effect_is_refused(cli, args, words):
    r = cli(*args, "--quiet")
    lines = [line for line in r.err.splitlines() if line.strip()]
    assert r.code == 2 and len(lines) == 1 and "Traceback" not in r.err, (r.code, r.err)
    assert all(w in lines[0] for w in words), lines[0]


@pytest.mark.slow  # (the closed-form estimator's kernels: 2 s)
def test_an_option_the_auto_estimator_does_not_use_is_said(cli):
    r = cli("check-spb", "--problem", "quadratic", "--samples", "100", "--json")
    assert r.code == 0 and "--samples 100 is not used" in r.err, r.err
    assert any("--samples 100" in w for w in r.json()["warnings"])


# --- issue 34: --at names what the user wrote and the actual cause ---------------------------------------------


@pytest.mark.parametrize(("array", "says"), [
    (np.array(["a"] * 10), "holds strings, not numbers"),
    (np.ones(10, dtype=bool), "holds booleans, not numbers"),
    (np.float64(3.0), "holds a single number; expected a vector of length 10"),
    (np.zeros((3, 4)), "holds an array of shape (3, 4); expected a vector of length 10"),
    (np.zeros(7), "holds a vector of length 7; expected a vector of length 10"),
    (np.array([0.0, 1.0, np.inf, np.nan, *[0.0] * 6]), "entry 2 is inf (2 of 10 entries are not finite)"),
], ids=["strings", "booleans", "scalar", "matrix", "length", "non-finite"])
def test_an_at_file_names_the_actual_cause(cli, tmp_path, array, says):
    path = tmp_path / "x.npy"
    np.save(path, array)
    for command in ("check-spb", "diversity"):  # (refused before any estimate: milliseconds each)
        assert_one_line_error(cli(command, "--problem", "quadratic", "--at", str(path), "--quiet"),
                              f"--at {path}: {says}")


@pytest.mark.slow  # (a check-spb of its own: 1-2 s)
def test_check_spb_at_a_point_of_1e300_warns_in_one_line(cli, tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, np.full(10, 1e300))
    r = cli("check-spb", "--problem", "quadratic", "--at", str(path), "--quiet")
    lines = [line for line in r.err.splitlines() if line.strip()]
    assert r.code == 0 and len(lines) == 1 and "RuntimeWarning" not in r.err, r.err
    assert lines[0].startswith(f"warning: --at {path}: gradients this large overflow"), lines[0]


# --- issue 34: work at the documented maxima is estimated before it starts -----------------------------------


@pytest.mark.parametrize(("args", "words"), [
    (["run", "--problem", "quadratic", "--iters", "1000000000000000"],
     ["--iters 1000000000000000 with 8 workers", "years", "lower --iters"]),
    (["check-spb", "--problem", "quadratic", "--at", "run:1000000000000000"],
     ["--at run:1000000000000000", "years", "choose a smaller K"]),
], ids=["run-iters", "at-run-K"])
def test_absurd_work_is_refused_up_front(cli, args, words):
    assert_one_line_error(cli(*args, "--quiet"), *words)


def test_work_estimates():

    from signsim import resources

    assert resources.check_work(1e9, "x", "lower it") is None  # a second
    note = resources.check_work(1e14, "--pairs 5", "lower --pairs")
    assert note.startswith("--pairs 5: about 1e+14 operations, at least 1.16 days") and "Ctrl-C" in note
    with pytest.raises(InputError, match=r"^--pairs 5: about 1e\+17 operations, at least 3.17 years.*; lower --pairs$"):
        resources.check_work(1e17, "--pairs 5", "lower --pairs")
    from signsim.interface import config

    cfg = config.resolve(dict(iters=2000, workers=8, batch_size=2**31 - 1))
    # each round: 8 workers' gradients of 31 coordinates over the minibatch's rows, and the mean of 8 messages
    assert resources.run_work(cfg, 31, finite_sum=True) == 2000 * (8 * 31 * (2**31 - 1) + 8 * 31)
    assert resources.run_work(cfg, 10, finite_sum=False) == 2000 * (8 * 10 + 8 * 10)  # synthetic: one draw a call
    assert resources.run_work(config.resolve(dict(iters=2000, workers=8, stop_loss=0.1)), 10, False) == 0
