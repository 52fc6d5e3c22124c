"""``run --track-diversity``: a tracked row never shows an estimate outside its possible range as a plain number
(docs/theory.md §6, §10). At Rosenbrock's optimum with the term oracle the true ||G||^2 is 0, so the two-batch
estimate of it (a difference of noisy averages) falls below 0 about half the time: those rows are null with a
note, and the run warns once, naming the iterations."""

import re
from contextlib import nullcontext

import pytest

import signsim


def rows_and_warnings(**options):
    with pytest.warns(UserWarning) if options.pop("warns", False) else nullcontext():
        r = signsim.run(**options)
    return r["tracks"]["diversity"], r["warnings"]


def test_negative_two_batch_estimates_are_null_with_a_note_and_one_warning():
    rows, warnings = rows_and_warnings(problem="rosenbrock", oracle="term", noise="gaussian:1", x0=1.0,
                                       method="sgd", lr=1e-9, track_diversity=10, iters=100, seed=0, warns=True)
    flagged = [r["iter"] for r in rows if r["note"]]
    assert flagged, "at the optimum some estimates of ||G||^2 = 0 must fall below 0"
    for r in rows:
        numbers = [r[k] for k in ("B_S", "inv_B_S", "B_simple") if r[k] is not None]
        if r["note"] and "||G||^2 is negative" in r["note"]:
            assert numbers == [], r
        else:
            assert all(v >= 0 for v in numbers) or r["note"], r
    (warning,) = [w for w in warnings if w.startswith("tracked diversity")]
    named = [int(k) for k in re.findall(r"\d+", warning.split("iterations", 1)[1].split("fall")[0])]
    assert named == flagged[:5]


def test_no_finite_variance_gives_null_rows_naming_why():
    rows, _ = rows_and_warnings(problem="rosenbrock", oracle="term", noise="cauchy:1", track_diversity=50,
                                iters=100)
    for r in rows:
        assert r["B_S"] is None and r["B_simple"] is None and "variance" in r["note"], r


def test_the_diversity_function_issues_its_warnings_as_user_warnings():
    """signsim.diversity issued none before: the out-of-range warning was only in result["warnings"]."""
    with pytest.warns(UserWarning, match="outside its range"):
        r = signsim.diversity(problem="rosenbrock", oracle="term", noise="gaussian:1", x0=1.0, pairs=20, seed=1)
    assert r["B_S"] is None and r["warnings"]


def test_plotting_a_tracked_quantity_that_is_null_throughout_says_why(cli, tmp_path):
    """It said "track it with --track-diversity" of a run that had tracked it under Cauchy noise."""
    out = tmp_path / "heavy.json"
    assert cli("run", "--problem", "rosenbrock", "--oracle", "term", "--noise", "cauchy:1", "--track-diversity", "50",
               "--iters", "100", "--out", out, "-q").code == 0
    r = cli("plot", out, "--y", "B_S", "--out", tmp_path / "h.png")
    lines = r.err.strip().splitlines()
    assert r.code == 2 and len(lines) == 1, r.err
    assert "it was tracked, but every value is null" in lines[0] and "no finite variance" in lines[0]
