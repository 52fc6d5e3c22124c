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
