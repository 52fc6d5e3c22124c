"""What a new user meets (issue 34): the results' warnings, tables, suggestions, figures, docs, hostile input
classes and budget runs."""


import numpy as np
import pytest

import signsim

QUAD = ["--problem", "quadratic", "--dim", "4", "--iters", "20"]


# ----------------------------------------------------------------------------------------------------------
# item 7: result["warnings"] is a list for every command (docs/api.md)


@pytest.mark.parametrize("call", [
    lambda: signsim.check_spb(problem="quadratic", dim=3),
    lambda: signsim.spb_from_samples(np.random.default_rng(0).standard_normal((50, 3)) + 0.1, workers=3),
    lambda: signsim.diversity(problem="quadratic", dim=3),
    lambda: signsim.diversity_from_samples(np.random.default_rng(0).standard_normal((50, 3)) + 0.1),
    lambda: signsim.bound(problem="quadratic", dim=3),
], ids=["check_spb", "spb_from_samples", "diversity", "diversity_from_samples", "bound"])
def test_every_result_has_a_list_of_warnings(call):
    result = call()
    assert result["warnings"] == [] or all(isinstance(w, str) for w in result["warnings"])
    assert isinstance(result["warnings"], list)


def test_the_json_document_has_the_warnings_too(cli):
    r = cli("bound", *QUAD, "--json")
    assert r.code == 0 and r.json()["warnings"] == []


# ----------------------------------------------------------------------------------------------------------
# item 7: an unknown stage name gets the closest one


@pytest.mark.parametrize("args, close", [
    (["--compressor", "topk:10"], "top-k"), (["--compressor", "randk"], "rand-k"),
    (["--aggregate", "medain"], "median"), (["--error-feedback", "ef22"], "ef21"),
])
def test_an_unknown_stage_name_suggests_the_closest(cli, args, close):
    r = cli("run", *QUAD, *args)
    assert r.code == 2 and r.err.count("\n") == 1
    assert f"{' '.join(args)}: unknown value (did you mean '{close}'?)" in r.err


def test_check_stage_suggests_the_closest_stage_with_its_kind(cli):
    r = cli("check-stage", "topk:10")
    assert r.code == 2 and "(did you mean 'top-k', a stage of the kind compressor?)" in r.err
    assert "Traceback" not in r.err and r.err.count("\n") == 1


# ----------------------------------------------------------------------------------------------------------
# item 8: docs and messages


ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def test_theory_counts_the_elias_code_of_the_integer_level():
    section = (ROOT / "docs" / "theory.md").read_text().split("**QSGD's Elias code**", 1)[1].split("\n* **", 1)[0]
    assert "ω(s·ξ_i)" not in section and "s·ξ_i" not in section
    assert "Σ_{i: ξ_i ≠ 0} (ω(gap_i) + 1 + ω(ξ_i))" in section


def test_the_vote_fields_say_that_a_random_tie_splits_between_agree_and_disagree():
    ref = (ROOT / "docs" / "reference.md").read_text()
    row = next(line for line in ref.splitlines() if line.startswith("| `vote_agree`, `vote_disagree`, `vote_tie`"))
    assert "`--tie random`" in row and "half the ties" in row and "agree + disagree = 1" in row
    # what the sentence says, on a coordinate where ties happen (M = 2 workers, one sign each)
    G = np.array([[1.0], [1.0], [-1.0]])
    fair = signsim.spb_from_samples(G, workers=2, tie="random")
    zero = signsim.spb_from_samples(G, workers=2, tie="zero")
    tie = zero["vote_tie"][0]
    assert tie == pytest.approx(2 * (2 / 3) * (1 / 3)) and fair["vote_tie"][0] == pytest.approx(tie)
    assert fair["vote_agree"][0] == pytest.approx(zero["vote_agree"][0] + tie / 2)
    assert fair["vote_agree"][0] + fair["vote_disagree"][0] == pytest.approx(1.0)
    assert zero["vote_agree"][0] + zero["vote_disagree"][0] + tie == pytest.approx(1.0)


def test_list_shows_the_dither_constant_and_each_class_once(cli):
    r = cli("list")
    assert r.code == 0
    text = " ".join(r.out.split())
    assert "unbiased (unbiased)" not in text
    line = text.split("dither[:S]", 1)[1].split("default s = 8", 1)[0]
    assert "omega = 1/8 + t min(1, t), t = sqrt(d) 2^(1-s)" in line
    from signsim.render import stage_tables

    assert "(unbiased) (unbiased)" not in stage_tables.markdown() and "unbiased (unbiased)" not in \
        stage_tables.markdown()


@pytest.mark.parametrize("given, per_round", [(["--clients-per-round", "3"], "3 clients per round"),
                                              (["--participation", "0.5"], "3 clients per round")])
def test_krum_against_the_clients_of_a_round_names_what_the_user_wrote(cli, given, per_round):
    r = cli("run", *QUAD, "--aggregate", "krum:1", "--workers", "6", *given)
    assert r.code == 2 and r.err.count("\n") == 1
    assert "--workers 3" not in r.err and per_round in r.err and " ".join(given) in r.err


# ----------------------------------------------------------------------------------------------------------
# item 6: hostile classes, each with its generator: exit 2, one line naming what the user wrote, no traceback

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ..hostile.test_hostile_classes import cases, one_line_error  # noqa: E402


def _no_such_user(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
    except KeyError:
        return True
    return False


unknown_users = st.text("abcdefghijklmnopqrstuvwxyz0123456789_", min_size=1, max_size=12).map(
    lambda s: "nouser" + s).filter(_no_such_user)


@cases()
@given(unknown_users, st.sampled_from(["run", "sweep", "check-stage", "run-config"]))
def test_a_path_of_a_user_that_does_not_exist_is_one_line(cli, tmp_path_factory, user, command):
    path = f"~{user}/stage.py"
    if command == "run":
        r = cli("run", *QUAD, "--plugin", path)
    elif command == "check-stage":
        r = cli("check-stage", "qsgd", "--plugin", path)
    else:
        d = tmp_path_factory.mktemp("home")
        f = d / "sweep.toml"
        f.write_text(f'plugin = "{path}"\nproblem = "quadratic"\n[grid]\nmethod = ["signsgd"]\n' if command == "sweep"
                     else f'plugin = "{path}"\nproblem = "quadratic"\n')
        r = cli("sweep", f, "--out", d / "out") if command == "sweep" else cli("run", "--config", f)
    one_line_error(r, path, f"cannot expand '~{user}'")


tiny = st.floats(min_value=5e-324, max_value=1e-160)
huge = st.floats(min_value=1e160, max_value=1e300)


@cases()
@given(st.one_of(st.tuples(st.just("tiny"), tiny, tiny), st.tuples(st.just("huge"), huge, huge)))
def test_bound_with_step_sizes_whose_product_leaves_the_floats(cli, case):
    kind, server, local = case
    if 0 < server * local < float("inf"):  # a product that stays a positive float is an ordinary bound
        return
    r = cli("bound", *QUAD, "--server-lr", repr(server), "--local-lr", repr(local))
    one_line_error(r, f"--server-lr {server:g} x local step size {local:g}",
                   "underflows to 0" if kind == "tiny" else "overflows")


@cases()
@given(st.sampled_from(["F", "f0", "L1", "sigma1"]), st.floats(min_value=1e160, max_value=1.7e308))
def test_bound_with_constants_past_the_float_range(cli, name, value):
    r = cli("bound", *QUAD, "--constant", f"{name}={value!r}")
    if r.code == 0:  # small enough for every bound: a result, not an error
        return
    one_line_error(r, f"--constant {name}={value!r}")


@cases()
@given(st.integers(10**15 + 1, 2**1000))
def test_bound_K_is_bounded_as_iters_is(cli, K):
    one_line_error(cli("bound", *QUAD, "--constant", f"K={K}"), f"--constant K={K}", "10^15")


@cases()
@given(st.floats(min_value=1e160, max_value=1.7e308), st.booleans())
def test_diversity_where_the_gradients_overflow(cli, x0, negative):
    x0 = -x0 if negative else x0
    r = cli("diversity", "--problem", "least-squares", "--x0", repr(x0))
    if r.code == 0:
        return
    one_line_error(r, "--at init", "not finite")


@cases()
@given(st.floats(min_value=2.0**1000, max_value=1.7e308), st.integers(1, 4))
def test_diversity_of_samples_at_the_largest_floats(big, rows):
    G = np.ones((rows + 1, 2))
    G[0] = [big, -big]
    d = signsim.diversity_from_samples(G)
    assert d["B_S"] is not None and np.isfinite(d["B_S"]) and d["B_S"] >= 1


@cases()
@given(st.sampled_from(["replication", "dimension", "heuristics", "conflicts", "lower-bound"]),
       st.integers(10_001, 2**63 - 1))
def test_experiment_seeds_are_bounded(kind, seeds):
    from signsim.errors import InputError
    from signsim.interface.experiment_config import parse

    # parsed, not run: before the bound, 2^63 - 1 seeds ran forever
    with pytest.raises(InputError, match=f"'seeds' {seeds}: at most 10,000 seeds"):
        parse({"kind": kind, "seeds": seeds}, "[experiment]")
    assert parse({"kind": kind, "seeds": 10_000}, "[experiment]").options.seeds == 10_000


def test_experiment_seeds_past_the_bound_exit_2_on_the_command_line(cli, tmp_path):
    f = tmp_path / "e.toml"
    f.write_text('problem = "logistic"\n[experiment]\nkind = "replication"\nseeds = 9223372036854775807\n')
    one_line_error(cli("diversity", "--config", f), "'seeds' 9223372036854775807", "at most 10,000")


# ----------------------------------------------------------------------------------------------------------
# item 4: budget runs say when the budget was not reached and keep ~100 history rows up to where they stopped

SIGN = ["--problem", "quadratic", "--dim", "4", "--method", "signsgd", "--workers", "3"]  # 24 bits per iteration


@pytest.mark.parametrize("quiet", [[], ["--quiet"], ["--json"]])
def test_a_budget_not_reached_says_so(cli, quiet):
    r = cli("run", *SIGN, "--iters", "50", "--budget-bits", "240000", *quiet)
    lines = [line for line in r.err.splitlines() if "budget not reached" in line]
    assert r.code == 0 and len(lines) == 1
    assert "--iters 50" in lines[0] and "0.00015 MB of the 0.03 MB budget" in lines[0]
    if quiet == ["--json"]:
        doc = r.json()
        assert doc["status"] == "ok" and doc["note"] == lines[0].removeprefix("signsim: ")


def test_a_budget_reached_or_absent_has_no_note():
    reached = signsim.run(problem="quadratic", dim=4, method="signsgd", workers=3, iters=10**6, budget_bits=2400)
    plain = signsim.run(problem="quadratic", dim=4, method="signsgd", workers=3, iters=50)
    assert reached.status == "budget" and reached["note"] is None and plain["note"] is None


@pytest.mark.parametrize("iters", [10**5, 10**6])
def test_a_run_stopped_by_its_budget_keeps_about_100_rows(iters):
    r = signsim.run(problem="quadratic", dim=4, method="signsgd", workers=3, iters=iters, budget_bits=24 * 500)
    h = r.history
    assert r.status == "budget" and r["final"]["iters_done"] == 500
    assert 100 <= len(h["iter"]) <= 102 and h["iter"][-1] == 500 and r["config"]["eval_every"] == 5
    # the user's own --eval-every is kept, and the iterates do not depend on it
    given = signsim.run(problem="quadratic", dim=4, method="signsgd", workers=3, iters=iters, budget_bits=24 * 500,
                        eval_every=iters // 100)
    assert given["config"]["eval_every"] == iters // 100 and len(given.history["iter"]) == 2
    assert given["final"]["loss"] == r["final"]["loss"] and given["x_final"] == r["x_final"]


def test_budget_rows_stay_within_the_history_allocated_up_front():
    """K = 10^9 with the default --eval-every: the history (allocated for K / eval-every rows) stays within
    250,000 rows, so the run fits in memory; the rows up to the stop are then fewer."""
    r = signsim.run(problem="quadratic", dim=4, method="signsgd", workers=3, iters=10**9, budget_bits=24 * 500)
    assert r.status == "budget" and r["config"]["eval_every"] == 4000 and r["final"]["iters_done"] == 500


def test_a_sweep_of_budget_runs_keeps_about_100_rows_per_run(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('problem = "quadratic"\ndim = 4\nmethod = "signsgd"\nworkers = 3\niters = 1000000\n'
                 'budget-bits = 12000\n[grid]\nlr = [0.01, 0.02]\n')
    res = signsim.sweep(f, out=tmp_path / "out", jobs=1)
    h = res.history
    for lr in (0.01, 0.02):
        rows = h["iter"][h["lr"] == lr]
        assert res["statuses"] == {"budget": 2} and 100 <= rows.size <= 102 and rows.max() == 500


# ----------------------------------------------------------------------------------------------------------
# item 7: piped tables never split a number


@pytest.fixture(scope="module")
def spb_doc():
    return signsim.check_spb(problem="quadratic", dim=12, noise="skewed:1", x0=0.2, batch_size=1).to_dict()


@pytest.mark.parametrize("width", [24, 40, 50, 60, 80])
def test_a_piped_table_never_splits_a_number(spb_doc, width):
    import io
    import re

    from rich.console import Console

    from signsim.render import tables

    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=False, color_system=None)
    worst = next(t for t in tables.spb_report(spb_doc) if getattr(t, "title", None) and
                 str(t.title).startswith("worst"))
    tables.emit(console, worst)
    text = out.getvalue()
    for i in spb_doc["worst"]:
        row = next(line for line in text.splitlines() if re.match(rf"\s*{i}\s", line))
        for value in (spb_doc["grad"][i], spb_doc["sigma"][i], spb_doc["p_agree"][i]):
            assert tables.fmt(value) in row.split(), (tables.fmt(value), row)


# ----------------------------------------------------------------------------------------------------------
# item 7: the sweep summary has one line per configuration, not one per method


def test_the_sweep_summary_shows_each_configuration(cli, tmp_path):
    f = tmp_path / "g.toml"
    f.write_text('problem = "quadratic"\ndim = 4\niters = 30\nmethod = "signsgd"\n[grid]\n'
                 'compressor = ["sign", "noisy-sign:0.1", "sto-sign"]\nlr = [0.01, 0.1]\naggregate = ["majority", '
                 '"mean"]\n')
    r = cli("sweep", f, "--out", tmp_path / "out", "--jobs", "1")
    assert r.code == 0
    table = r.err.split("final loss per configuration", 1)[1]
    assert "the best lr of each" in table.splitlines()[0]
    rows = [line.split() for line in table.splitlines() if line.startswith("signsgd")]
    assert sorted((row[1], row[2]) for row in rows) == sorted(
        (c, a) for c in ("sign", "noisy-sign:0.1", "sto-sign") for a in ("majority", "mean"))
    doc = signsim.sweep(f, out=tmp_path / "out", jobs=1)  # every run finished: the summary from the files
    configs = doc["best_per_configuration"]
    assert len(configs) == 6 and all(set(c["tuned"]) == {"lr"} for c in configs)
    for c in configs:  # the best lr of its configuration
        same = [g for g in doc["groups"] if g["params"]["compressor"] == c["configuration"]["compressor"]
                and g["params"]["aggregate"] == c["configuration"]["aggregate"]]
        assert c["mean_final_loss"] == min(g["mean_final_loss"] for g in same)


# ----------------------------------------------------------------------------------------------------------
# item 7: figures name compositions, the problem and the budget, use log axes for geometric grids, never average
# over a swept option, and say what they leave out

FED = """problem = "quadratic"
dim = 6
workers = 8
clients-per-round = 4
aggregate = "mean"
budget-bits = 40000
iters = 100000
repeats = 2

[grid]
local-steps = [1, 5, 20]

[[zip]]
method = ["sgd", "signsgd", "sgd"]
compressor = ["identity", "sign", "top-k:2"]
error-feedback = ["none", "none", "ef"]
lr = [0.01, 0.01, 0.01]
"""


@pytest.fixture(scope="module")
def fed_sweep(tmp_path_factory):
    d = tmp_path_factory.mktemp("fed")
    (d / "fed.toml").write_text(FED)
    res = signsim.sweep(d / "fed.toml", out=d / "out", jobs=1)
    assert res["statuses"] == {"budget": 18}
    return res


def test_sweep_figures_name_the_composition_problem_and_budget(fed_sweep):
    fig = fed_sweep.figure(x="local-steps", y="loss", group_by="compressor")
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["FedAvg (sgd)", "signsgd, mean", "topk-ef (top-k:2)"]
    assert not any("compressor =" in label for label in labels)
    title = fig._suptitle.get_text()
    assert title.startswith("quadratic (d = 6), budget 0.005 MB (up + down)")
    ax = fig.get_axes()[0]
    assert ax.get_xscale() == "log" and [t.get_text() for t in ax.get_xticklabels()] == ["1", "5", "20"]


def test_geometric_grids_get_a_log_axis():
    from signsim.render.figures import _geometric

    assert _geometric([1, 5, 20]) and _geometric([1, 10, 100, 1000]) and _geometric([0.001, 0.01, 0.1])
    assert not _geometric([1, 2, 3, 4]) and not _geometric([1, 9]) and not _geometric([0, 5, 20])
    assert not _geometric([10, 20, 30, 40, 50])


def test_a_swept_option_is_never_averaged_into_one_band(fed_sweep):
    """ci-smoke.png averaged M = 1 and M = 9 into one band: lines are split by every swept option instead."""
    fig = fed_sweep.figure(y="loss", group_by="compressor")
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert len(labels) == 9 and sum("local-steps = 20" in label for label in labels) == 3
    assert "averaged over seed" in fig._suptitle.get_text() and "local_steps" not in fig._suptitle.get_text()
    ax = fig.get_axes()[0]
    assert len([line for line in ax.get_lines() if not line.get_label().startswith("_")]) == 9


def test_the_rho_figure_says_which_coordinates_it_leaves_out():
    G = np.array([[1.0, 1.0, 2.0], [1.0, -1.0, 1.0], [2.0, 0.0, -1.0]])  # g = (4/3, 0, 2/3): g_2 = 0
    spb = signsim.spb_from_samples(G)
    assert spb["rho"][1] is None
    texts = [t.get_text() for t in spb.figure().get_axes()[0].texts]
    assert "1 of 3 coordinates with g_i = 0 left out (no sign to agree with)" in texts
    full = signsim.spb_from_samples(G[:, [0, 2]])
    assert len(full.figure().get_axes()[0].texts) == 0


def test_a_run_figure_names_its_budget():
    r = signsim.run(problem="quadratic", dim=4, method="signsgd", workers=3, iters=10**5, budget_bits=24 * 200)
    assert r.figure()._suptitle.get_text() == "quadratic (d = 4), budget 0.0006 MB (up + down)"
    assert signsim.run(problem="quadratic", dim=4, iters=20).figure()._suptitle.get_text() == "quadratic (d = 4)"
