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


def test_check_stage_suggests_the_closest_compressor(cli):
    r = cli("check-stage", "topk:10")
    assert r.code == 2 and "(did you mean 'top-k'?)" in r.err and "Traceback" not in r.err


# ----------------------------------------------------------------------------------------------------------
# item 8: docs and messages


ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent


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
    line = text.split("dither:S", 1)[1].split("default s = 8", 1)[0]
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
