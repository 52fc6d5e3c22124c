"""Diagnostics of the user's own per-sample gradients: spb_from_samples and diversity_from_samples against
brute force, block-wise input equal to whole-array input, the same numbers as check-spb / diversity for a
built-in finite sum, and ``--grads`` on a memory-mapped file."""

import json
from fractions import Fraction
from itertools import product

import numpy as np
import pytest

import signsim
from signsim.errors import InputError

from ..cli.test_cli import assert_one_line_error


def random_grads(n=301, d=7, seed=0):
    """Gaussian rows with a mean, some exact zeros, and one coordinate whose mean is exactly zero."""
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((n, d)) + np.linspace(-0.4, 0.6, d)
    G[rng.random((n, d)) < 0.1] = 0.0
    G[:, 3] = np.where(np.arange(n) % 2, 1.0, -1.0)
    G[-1, 3] = 0.0  # n is odd: the column sums to zero
    return G


#: a small G with exact zeros (rows: samples). Columns: g > 0 with zeros; g < 0 with zeros (violated under
#: plus only); g > 0 with P(agree) = P(disagree) (violated unless plus); g = 0; g < 0 mostly zeros; no zeros.
SMALL = np.array([
    [1.0, -2.0, 5.0, 1.0, 0.0, 1.0],
    [2.0, 1.0, -1.0, -1.0, 0.0, 1.0],
    [-1.0, 0.0, 0.0, 0.0, 0.0, -0.5],
    [0.0, -1.0, 1.0, 2.0, 0.0, 2.0],
    [0.0, 0.0, -1.0, -2.0, 0.0, -1.0],
    [3.0, 0.0, 0.0, 0.0, -3.0, 1.0],
])


def message_outcomes(batches, sign_zero, i):
    """One worker's message on coordinate i, enumerated: (probability, message) for every equally likely
    minibatch (a list of rows) and, for a zero under the 'random' policy, each face of the fair coin."""
    out = []
    p = Fraction(1, len(batches))
    for rows in batches:
        v = float(np.mean([row[i] for row in rows]))
        if v != 0:
            out.append((p, int(np.sign(v))))
        elif sign_zero == "random":
            out += [(p / 2, 1), (p / 2, -1)]
        else:
            out.append((p, {"plus": 1, "zero": 0}[sign_zero]))
    return out


def brute_force(G, sign_zero, M, tie, tau=1):
    """Everything by enumeration over the n^tau minibatches one worker can draw (uniformly, with replacement)
    and over the M-tuples of workers' messages, in exact arithmetic."""
    n, d = G.shape
    g = G.mean(axis=0)
    batches = [[G[j] for j in js] for js in product(range(n), repeat=tau)]
    r = {k: [None] * d for k in ("p_agree", "p_zero", "p_disagree", "rho", "message_disagree", "vote_agree",
                                 "vote_disagree", "vote_tie")}
    r["status"] = ["zero"] * d
    rho_norm = rho_M_norm = 0.0
    for i in range(d):
        if g[i] == 0:
            continue
        s = int(np.sign(g[i]))
        raw = [int(np.sign(np.mean([row[i] for row in rows]))) for rows in batches]
        r["p_agree"][i], r["p_zero"][i], r["p_disagree"][i] = (Fraction(raw.count(v), len(raw)) for v in (s, 0, -s))
        msg = message_outcomes(batches, sign_zero, i)
        agree = sum(p for p, m in msg if m == s)
        disagree = sum(p for p, m in msg if m == -s)
        r["rho"][i], r["message_disagree"][i] = agree, disagree
        r["status"][i] = "holds" if agree > disagree else "violated"
        rho_norm += float(agree - disagree) * abs(g[i])
        v_agree = v_disagree = v_tie = Fraction(0)
        for combo in product(msg, repeat=M):
            p = Fraction(1)
            for q, _ in combo:
                p *= q
            total = sum(m for _, m in combo) * s  # > 0: the vote agrees with sign g_i
            if total > 0:
                v_agree += p
            elif total < 0:
                v_disagree += p
            else:
                v_tie += p
                if tie == "random":
                    v_agree += p / 2
                    v_disagree += p / 2
        r["vote_agree"][i], r["vote_disagree"][i], r["vote_tie"][i] = v_agree, v_disagree, v_tie
        rho_M_norm += float(v_agree - v_disagree) * abs(g[i])
    r["grad"], r["rho_norm"], r["rho_M_norm"] = g, rho_norm, rho_M_norm
    tested = [st for st in r["status"] if st != "zero"]
    r["verdict"] = "holds" if all(st == "holds" for st in tested) else "violated"
    return r


def as_float(values):
    return np.array([np.nan if v is None else float(v) for v in values])


PER_COORDINATE = ("p_agree", "p_zero", "p_disagree", "rho", "message_disagree", "vote_agree", "vote_disagree",
                  "vote_tie")


@pytest.mark.parametrize(("sign_zero", "M", "tie"),
                         [(z, M, t) for z in ("random", "plus", "zero") for M in (1, 2, 3, 4)
                          for t in ("random", "zero")])
def test_spb_against_brute_force(sign_zero, M, tie):
    G = SMALL
    doc = signsim.spb_from_samples(G, workers=M, sign_zero=sign_zero, tie=tie).to_dict()
    ref = brute_force(G, sign_zero, M, tie)
    assert doc["method_of_estimate"] == "exact" and doc["n"] == G.shape[0] and doc["sign_zero"] == sign_zero
    assert doc["sampling"]["scheme"] == "shared" and doc["workers"] == M and not doc["workers_differ"]
    assert np.allclose(doc["grad"], ref["grad"])
    for k in PER_COORDINATE:
        assert np.allclose(as_float(doc[k]), as_float(ref[k]), rtol=0, atol=1e-12, equal_nan=True), k
    assert doc["status"] == ref["status"] and doc["verdict"] == ref["verdict"]
    assert doc["zero_coordinates"] == 1 and doc["status"][3] == "zero"
    assert doc["rho_norm"] == pytest.approx(ref["rho_norm"], abs=1e-12)
    assert doc["rho_norm_low"] == doc["rho_norm_high"] == doc["rho_norm"]  # exact: no interval
    assert doc["rho_M_norm"] == pytest.approx(ref["rho_M_norm"], abs=1e-12)
    assert doc["n_with_zeros"] == 4
    # the identical-worker bound needs rho_min > 1/2 and no zero messages: never here
    assert doc["rho_M_lower_bound"] is None
    assert np.allclose(doc["sigma"], G.std(axis=0)) and doc["l1_norm"] == pytest.approx(np.abs(ref["grad"]).sum())
    assert doc["sufficient"]["unimodal_bound"] is None and not doc["l12_is_bound"]  # the noise is unknown


def test_the_policies_differ_where_expected():
    docs = {z: signsim.spb_from_samples(SMALL, sign_zero=z).to_dict() for z in ("random", "plus", "zero")}
    # coordinate 2: P(agree) = P(disagree), 'plus' breaks the tie in favour of g_2 > 0
    assert [docs[z]["status"][2] for z in ("random", "plus", "zero")] == ["violated", "holds", "violated"]
    # coordinates 1 and 4 (g < 0, zeros): 'plus' turns the zeros into disagreement
    assert [docs[z]["status"][4] for z in ("random", "plus", "zero")] == ["holds", "violated", "holds"]
    assert docs["random"]["rho_norm"] == pytest.approx(docs["zero"]["rho_norm"])  # zeros count nothing
    assert "rho_M_norm" not in docs["random"] and "workers" not in docs["random"]


@pytest.mark.slow  # enumeration of every minibatch (7 s); .ci/run runs it
def test_minibatch_monte_carlo_against_enumeration():
    tau = 2
    for sign_zero, tie in (("random", "random"), ("plus", "zero"), ("zero", "zero")):
        doc = signsim.spb_from_samples(SMALL, batch_size=tau, samples=40000, seed=3, workers=3, sign_zero=sign_zero,
                                       tie=tie).to_dict()
        ref = brute_force(SMALL, sign_zero, 3, tie, tau=tau)
        assert doc["method_of_estimate"] == "monte-carlo" and doc["tau"] == tau
        assert doc["samples"] == doc["samples_per_oracle"] == 40000
        for k in PER_COORDINATE:  # standard errors below 0.0025
            assert np.allclose(as_float(doc[k]), as_float(ref[k]), rtol=0, atol=0.015, equal_nan=True), k
        l1 = float(np.abs(ref["grad"]).sum())
        assert doc["rho_norm"] == pytest.approx(ref["rho_norm"], abs=0.02 * l1)
        assert doc["rho_M_norm"] == pytest.approx(ref["rho_M_norm"], abs=0.03 * l1)
        assert doc["rho_norm_low"] <= doc["rho_norm"] <= doc["rho_norm_high"]
        lo, hi = as_float(doc["rho_low"]), as_float(doc["rho_high"])
        nz = ref["grad"] != 0
        assert np.all(lo[nz] <= as_float(doc["rho"])[nz]) and np.all(as_float(doc["rho"])[nz] <= hi[nz])
        # sigma: the per-sample standard deviation (tau times the minibatch variance)
        assert np.allclose(doc["sigma"], SMALL.std(axis=0), rtol=0.05)
        decided = [i for i, st in enumerate(doc["status"]) if st in ("holds", "violated")]
        assert all(doc["status"][i] == ref["status"][i] for i in decided)


@pytest.mark.parametrize(("sign_zero", "tie"), [("random", "random"), ("zero", "zero"), ("plus", "random")])
def test_blocks_equal_whole_array(sign_zero, tie):
    G = random_grads(n=500, d=9, seed=4)
    whole = signsim.spb_from_samples(G, workers=4, sign_zero=sign_zero, tie=tie).to_dict()
    assert whole["n_with_zeros"] > 0 and whole["zero_coordinates"] == 0
    div = signsim.diversity_from_samples(G).to_dict()
    for given in ([G[:100], G[100:333], G[333:]], (G[i:i + 7] for i in range(0, 500, 7)), list(G),
                  iter([G[:1], G[1:]])):
        given = list(given)
        assert_docs_equal(signsim.spb_from_samples(iter(given), workers=4, sign_zero=sign_zero, tie=tie).to_dict(),
                          whole)
        assert_docs_equal(signsim.diversity_from_samples(iter(given)).to_dict(), div)


def assert_docs_equal(a, b):
    a, b = dict(a), dict(b)
    for doc in (a, b):
        doc["problem"] = {k: v for k, v in doc["problem"].items() if k != "given_as"}
    assert set(a) == set(b)
    for k in a:
        if isinstance(a[k], list) and a[k] and isinstance(a[k][0], float | None):
            assert np.allclose(np.array(a[k], dtype=float), np.array(b[k], dtype=float), equal_nan=True), k
        elif isinstance(a[k], float):
            assert a[k] == pytest.approx(b[k], rel=1e-12), k
        elif k in ("speedup", "sufficient"):
            assert json.dumps(a[k])[:0] == "" and _close(a[k], b[k]), k
        else:
            assert a[k] == b[k], k


def _close(x, y):
    if isinstance(x, dict):
        return all(_close(x[k], y[k]) for k in x)
    if isinstance(x, list):
        return len(x) == len(y) and all(_close(u, v) for u, v in zip(x, y, strict=True))
    if isinstance(x, float) and isinstance(y, float):
        return x == pytest.approx(y, rel=1e-12)
    return x == y


def test_diversity_against_brute_force():
    G = random_grads(n=200, d=5, seed=2)
    doc = signsim.diversity_from_samples(G, delta=0.5).to_dict()
    n = G.shape[0]
    A = sum(float(row @ row) for row in G)
    total = G.sum(axis=0)
    delta_S = A / float(total @ total)
    assert doc["n"] == n and doc["delta_S"] == pytest.approx(delta_S)
    assert doc["B_S"] == pytest.approx(n * delta_S) and doc["B_simple"] == pytest.approx(n * delta_S - 1)
    B_S = n * delta_S
    assert [r["B"] for r in doc["speedup"]] == [1, 2, 4, 8, 16, 32, 64, 128]
    assert [r["predicted"] for r in doc["speedup"]] == pytest.approx([b * B_S / (b + B_S - 1)
                                                                      for b in (1, 2, 4, 8, 16, 32, 64, 128)])
    assert doc["largest_batch"] == int(np.floor(0.5 * B_S + 1))
    stationary = signsim.diversity_from_samples(np.array([[1.0, -2.0], [-1.0, 2.0]])).to_dict()
    assert stationary["stationary"] and stationary["B_S"] is None  # infinite: null in JSON


#: the keys of check-spb's document that describe the problem and the run rather than the estimate
#: "round": check-spb's federated round (local steps, sampled workers), which per-sample gradients do not have
NOT_COMPARED = {"config", "options", "problem", "point", "grads", "round"}


def assert_same_as_check_spb(mine, ref):
    """Every field of check-spb's document (except the problem's description) with the same value."""
    assert set(mine) - NOT_COMPARED == (set(ref) - NOT_COMPARED) | {"source", "n"}
    for k in set(ref) - NOT_COMPARED:
        if isinstance(ref[k], list) and ref[k] and isinstance(ref[k][0], float | None):
            assert np.allclose(as_float(mine[k]), as_float(ref[k]), rtol=1e-9, atol=1e-12, equal_nan=True), k
        elif isinstance(ref[k], float):
            assert mine[k] == pytest.approx(ref[k], rel=1e-9, abs=1e-12), k
        elif k == "sufficient":
            assert set(mine[k]) == set(ref[k]) and mine[k]["unimodal_bound"] is ref[k]["unimodal_bound"] is None
            for c in ("c", "variance_bound"):
                assert np.allclose(as_float(mine[k][c]), as_float(ref[k][c]), rtol=1e-9, equal_nan=True), c
            assert mine[k]["tau_condition"] == ref[k]["tau_condition"] and mine[k]["cantelli"] == ref[k]["cantelli"]
        else:
            assert mine[k] == ref[k], k


@pytest.mark.parametrize("sign_zero", ["random", "zero"])
def test_same_numbers_as_check_spb_for_a_finite_sum(cli, tmp_path, sign_zero):
    from signsim import problems
    from signsim.interface import config

    cfg = config.resolve({"problem": "logistic", "workers": 5})
    problem = problems.build(cfg)
    x = problem.x0 + 0.05
    np.save(tmp_path / "x.npy", x)
    G = problem.finite_sum.per_sample_grads(x, np.arange(problem.finite_sum.n))
    np.save(tmp_path / "g.npy", G)
    r = cli("check-spb", "--problem", "logistic", "--workers", "5", "--at", tmp_path / "x.npy", "--sign-zero",
            sign_zero, "--json")
    assert r.code in (0, 1), r.err
    ref = r.json()
    r = cli("check-spb", "--grads", tmp_path / "g.npy", "--workers", "5", "--sign-zero", sign_zero, "--json")
    assert r.code in (0, 1), r.err
    mine = r.json()
    assert ref["method_of_estimate"] == mine["method_of_estimate"] == "exact"
    assert ref["sign_zero"] == mine["sign_zero"] == sign_zero and "rho_M_norm" in mine
    assert_same_as_check_spb(mine, ref)
    api = signsim.spb_from_samples(G, workers=5, sign_zero=sign_zero).to_dict()
    assert_same_as_check_spb(json.loads(json.dumps(api, default=float)), ref)
    ref = signsim.diversity(problem="logistic", at=str(tmp_path / "x.npy")).to_dict()
    mine = signsim.diversity_from_samples(G).to_dict()
    for k in ("n", "delta_S", "B_S", "B_simple", "largest_batch"):
        assert mine[k] == pytest.approx(ref[k], rel=1e-9), k


@pytest.mark.parametrize(("sign_zero", "tie"), [("random", "random"), ("plus", "zero"), ("zero", "zero")])
def test_same_numbers_as_check_spb_with_zero_gradients(tmp_path, sign_zero, tie):
    """ReLU network at initialization: about half of the per-sample entries are exactly 0."""
    from signsim import problems
    from signsim.interface import config

    problem = problems.build(config.resolve({"problem": "mlp", "workers": 4}))
    np.save(tmp_path / "x.npy", problem.x0)
    G = problem.finite_sum.per_sample_grads(problem.x0, np.arange(problem.finite_sum.n))
    assert np.mean(G == 0) > 0.2
    ref = signsim.check_spb(problem="mlp", workers=4, sign_zero=sign_zero, tie=tie,
                            at=str(tmp_path / "x.npy")).to_dict()
    mine = signsim.spb_from_samples(G, workers=4, sign_zero=sign_zero, tie=tie).to_dict()
    assert ref["n_with_zeros"] > 0
    assert_same_as_check_spb(mine, ref)


def test_same_fields_as_check_spb_by_monte_carlo():
    G = random_grads(n=200, d=31, seed=6)
    ref = signsim.check_spb(problem="logistic", batch_size=4, samples=300, workers=3, sign_zero="zero").to_dict()
    mine = signsim.spb_from_samples(G, batch_size=4, samples=300, workers=3, sign_zero="zero").to_dict()
    assert set(mine) - {"source", "n"} == set(ref) - {"config", "round"}
    assert mine["samples"] == mine["samples_per_oracle"] == 300 and "p_holds_corrected" in mine


def test_minibatch_monte_carlo():
    G = random_grads(n=400, d=6, seed=5)
    doc = signsim.spb_from_samples(G, batch_size=4, samples=4000, seed=1).to_dict()
    assert doc["method_of_estimate"] == "monte-carlo" and doc["tau"] == 4 and doc["samples"] == 4000
    # brute force by enumeration is out of reach; check against a direct simulation with another seed
    rng = np.random.default_rng(99)
    g = G.mean(axis=0)
    batches = G[rng.integers(400, size=(20000, 4))].mean(axis=1)
    rho = np.mean(np.sign(batches) == np.sign(g), axis=0) + 0.5 * np.mean(batches == 0, axis=0)
    nz = g != 0
    assert np.allclose(np.array(doc["rho"], dtype=float)[nz], rho[nz], atol=0.04)
    lo, hi = np.array(doc["rho_low"], dtype=float)[nz], np.array(doc["rho_high"], dtype=float)[nz]
    assert np.all(lo <= np.array(doc["rho"], dtype=float)[nz]) and np.all(hi >= lo)
    with pytest.raises(InputError, match="--batch-size"):
        signsim.spb_from_samples(iter([G]), batch_size=4)


@pytest.mark.parametrize(("G", "needle"), [
    (np.ones(5), "shape"),
    (np.zeros((0, 3)), "no gradients"),
    (np.array([[1.0, np.inf]]), "non-finite value in sample 0"),
    ([np.ones((2, 3)), np.ones((2, 4))], "different widths"),
    (iter([]), "no gradients"),
    (3.0, "iterable"),
    (np.array([["a", "b"]]), "real numbers"),
])
def test_bad_gradients(G, needle):
    with pytest.raises(InputError, match=needle):
        signsim.spb_from_samples(G)


def test_bad_options():
    G = random_grads(n=20, d=5)
    with pytest.raises(InputError, match="--sign-zero"):
        signsim.spb_from_samples(G, sign_zero="minus")
    with pytest.raises(InputError, match="--workers"):
        signsim.spb_from_samples(G, workers="many")
    with pytest.raises(InputError, match="--tie"):
        signsim.spb_from_samples(G, workers=3, tie="plus")
    with pytest.raises(InputError, match="--delta"):
        signsim.diversity_from_samples(G, delta=-1)


def test_grads_file_is_memory_mapped(cli, tmp_path, monkeypatch):
    from signsim.commands import grads
    from signsim.diagnostics import samples

    G = random_grads(n=1000, d=6, seed=7).astype(np.float32)
    path = tmp_path / "g.npy"
    np.save(path, G)
    seen = []
    real_load = grads.load
    monkeypatch.setattr(grads, "load", lambda p: seen.append(real_load(p)) or seen[-1])
    monkeypatch.setattr(samples, "BLOCK_BYTES", 8 * 6 * 64)  # 64 rows a block: many blocks
    r = cli("check-spb", "--grads", path, "--workers", "5", "--json")
    assert r.code in (0, 1), r.err
    assert isinstance(seen[0], np.memmap)
    api = signsim.spb_from_samples(G.astype(np.float64), workers=5).to_dict()
    doc = r.json()
    assert doc["grads"] == str(path) and doc["verdict"] == api["verdict"]
    assert np.allclose(np.array(doc["rho"], dtype=float), np.array(api["rho"], dtype=float), equal_nan=True)
    assert doc["rho_M_norm"] == pytest.approx(api["rho_M_norm"])
    assert r.code == (0 if doc["verdict"] == "holds" else 1)
    r = cli("diversity", "--grads", path, "--json")
    assert r.code == 0, r.err
    assert r.json()["B_S"] == pytest.approx(signsim.diversity_from_samples(G.astype(np.float64))["B_S"])
    fig = tmp_path / "rho.png"
    out = tmp_path / "spb.json"
    assert cli("check-spb", "--grads", path, "--out", out, "--quiet").code in (0, 1)
    assert cli("plot", out, "--out", fig).code == 0 and fig.stat().st_size > 0


def test_grads_errors(cli, tmp_path):
    np.save(tmp_path / "v.npy", np.ones(4))
    (tmp_path / "g.txt").write_text("1 2\n")
    np.save(tmp_path / "g.npy", np.ones((3, 2)))
    assert_one_line_error(cli("check-spb", "--grads", tmp_path / "missing.npy"), "--grads", "no such file")
    assert_one_line_error(cli("check-spb", "--grads", tmp_path / "v.npy"), "--grads", "shape")
    assert_one_line_error(cli("diversity", "--grads", tmp_path / "g.txt"), "--grads", ".npy")
    assert_one_line_error(cli("check-spb", "--grads", tmp_path / "g.npy", "--problem", "mlp"), "--problem")
    assert_one_line_error(cli("check-spb", "--grads", tmp_path / "g.npy", "--at", "init"), "--at")
    assert_one_line_error(cli("diversity", "--grads", tmp_path / "g.npy", "--workers", "3"), "--workers")


def test_sparse_and_float32_inputs():
    from scipy import sparse

    G = random_grads(n=120, d=6, seed=8)
    ref = signsim.spb_from_samples(G, workers=3).to_dict()
    assert_docs_equal(signsim.spb_from_samples(sparse.csr_matrix(G), workers=3).to_dict(), ref)
    assert_docs_equal(signsim.spb_from_samples([sparse.csr_matrix(G[:50]), G[50:]], workers=3).to_dict(), ref)
    G32 = G.astype(np.float32)
    assert signsim.diversity_from_samples(G32)["B_S"] == pytest.approx(
        signsim.diversity_from_samples(G32.astype(np.float64))["B_S"])


def test_grads_file_takes_sign_zero_and_tie(cli, tmp_path):
    np.save(tmp_path / "g.npy", SMALL)
    r = cli("check-spb", "--grads", tmp_path / "g.npy", "--workers", "4", "--sign-zero", "zero", "--tie", "zero",
            "--json")
    assert r.code == 1, r.err  # coordinate 2: P(agree) = P(disagree)
    doc = r.json()
    ref = brute_force(SMALL, "zero", 4, "zero")
    assert doc["options"]["tie"] == "zero" and doc["sign_zero"] == "zero" and doc["status"] == ref["status"]
    assert doc["rho_M_norm"] == pytest.approx(ref["rho_M_norm"], abs=1e-12)
    assert np.allclose(as_float(doc["vote_tie"]), as_float(ref["vote_tie"]), atol=1e-12, equal_nan=True)
