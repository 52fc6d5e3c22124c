"""``--dtype float32`` (issue #17): the engine's state vectors and the data matrix in float32, the kernels'
arithmetic in float64 (every read widened, one rounding to float32 per store).

What is compared, and why each tolerance:

* Where every value a run produces is representable in float32 (dyadic step sizes and starting points, sign
  messages, votes), a float32 run is the float64 run, bit for bit: storing rounds nothing, and the arithmetic is
  the same float64 arithmetic. No tolerance.
* In general a sign method's float32 and float64 runs take the same broadcast at every iteration until some
  worker's value is within float32 rounding of zero (about 6e-8 relative to the terms that make it up) and
  its sign flips. Until then the only difference is the rounding of x to float32 after each step, at most
  2^-24 |x_k| per step, so |x32_k - x64_k| <= sum_j 2^-24 |x_j| coordinate by coordinate (checked exactly, step
  by step, on a logistic and an MLP problem), and any worker sign that differs belongs to a coordinate whose
  float64 value is tiny.
* Over longer runs (the paper configs, capped) a few flipped signs move single coordinates by 2 gamma; the final
  losses stay within the tolerances stated at each test.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from signsim.resources import run_bytes

from ..cli.test_cli import assert_one_line_error
from ..conftest import make_engine, run_engine, run_subprocess

#: one rounding to float32: half an ulp, relative
U32 = 2.0**-24


# ------------------------------------------------------------------------------------------ the option


@pytest.mark.parametrize("args, words", [
    (("--dtype", "float16"), ("--dtype float16", "float64, float32")),
    (("--dtype", "float32", "--votes", "binomial", "--method", "signsgd", "--problem", "quadratic", "--momentum",
      "0", "--aggregate", "majority"), ("--dtype float32", "--votes binomial")),
    (("--dtype", "float32", "--problem", "logistic", "--track-spb", "5"), ("--dtype float32", "--track-spb")),
])
def test_bad_dtype_values_exit_2(cli, args, words):
    assert_one_line_error(cli("run", *args, "--iters", "5"), *words)


def test_the_diagnostics_refuse_float32(cli):
    assert_one_line_error(cli("check-spb", "--problem", "quadratic", "--dtype", "float32", "--samples", "64"),
                          "--dtype float32", "float64")
    assert_one_line_error(cli("diversity", "--dtype", "float32"), "--dtype float32")


def test_config_files_check_the_dtype(cli, tmp_path):
    p = tmp_path / "c.toml"
    p.write_text("dtype = 32\n")
    assert_one_line_error(cli("run", "--config", p), "'dtype'", "string")
    p.write_text('dtype = "double"\n')
    assert_one_line_error(cli("run", "--config", p), "'dtype'", "double")


def test_state_arrays_are_float32_and_float64_stays_the_default():
    e, p, *_ = make_engine(problem="logistic", method="ef-signsgd", workers=3, iters=5, momentum=0.5)
    assert p.A.dtype == np.float64 and all(a.dtype == np.float64 for a in (e.x, e.mom, e.err, e.G, e.msg, e.agg))
    e, p, *_ = make_engine(problem="logistic", method="ef-signsgd", workers=3, iters=5, momentum=0.5,
                           dtype="float32")
    for name in ("x", "mom", "err", "srv", "G", "msg", "agg"):
        assert getattr(e, name).dtype == np.float32, name
    assert e.mom.shape == e.err.shape == e.G.shape == (3, p.dim)  # the real arrays, not placeholders
    assert p.A.dtype == np.float32 and p.A.flags.c_contiguous
    assert p.b.dtype == np.float64 and e.gbuf.dtype == np.float64 and e.hist.dtype == np.float64  # as stated
    e, *_ = make_engine(problem="quadratic", method="ef21", dtype="float32", iters=5)
    assert e.srv.dtype == e.err.dtype == np.float32 and e.err.shape[0] == 8


def test_memory_estimate_halves_for_the_state():
    d, M = 100_000, 64
    for momentum, ef in ((False, False), (True, True)):
        f64 = run_bytes(M, d, momentum, ef, 10) - run_bytes(0, d, momentum, ef, 10)  # the workers' part
        f32 = run_bytes(M, d, momentum, ef, 10, dtype="float32") - run_bytes(0, d, momentum, ef, 10,
                                                                             dtype="float32")
        # exactly half of the vectors; the per-worker generator and bookkeeping (4 kB) do not shrink
        assert f32 == pytest.approx(f64 / 2, rel=0.01)
    # the data while it is packed: two float64 copies and the packed matrix (8 + 8 + 4 instead of 8 + 8 + 8)
    assert run_bytes(0, 1, False, False, 0, 10**6, dtype="float32") - run_bytes(0, 1, False, False, 0) \
        < run_bytes(0, 1, False, False, 0, 10**6)
    from signsim.resources import data_bytes

    assert data_bytes(10**6, "float32") == 20 * 10**6 and data_bytes(10**6) == 24 * 10**6


@pytest.mark.slow  # allocates the state of 8 workers x d = 10^6 twice (float64 refused, float32 run)
def test_a_run_that_needs_too_much_memory_in_float64_fits_in_float32(cli, monkeypatch):
    # 8 workers x d = 10^6, gradients and messages: 128 MB in float64, 64 MB in float32; server vectors 64 MB
    # in float64, 52 MB with x, EF21's g and the aggregate in float32. Estimates 192 MB and 116 MB; a limit
    # of 190 MB leaves 152 MB after the 20% headroom: float32 fits, float64 does not
    monkeypatch.setenv("SIGNSIM_MEMORY_LIMIT", str(int(190e6)))
    base = ("run", "--problem", "quadratic", "--method", "signsgd", "--dim", "1000000", "--workers", "8",
            "--iters", "0", "--quiet")
    assert_one_line_error(cli(*base), "memory", "--dtype float32")
    r = cli(*base, "--dtype", "float32")
    assert r.code == 0, r.err


def test_results_and_sweeps_record_the_dtype(cli, tmp_path):
    r = cli("run", "--problem", "quadratic", "--iters", "5", "--dtype", "float32", "--json")
    assert r.code == 0, r.err
    assert r.json()["config"]["dtype"] == "float32"
    assert cli("run", "--problem", "quadratic", "--iters", "5", "--json").json()["config"]["dtype"] == "float64"
    p = tmp_path / "s.toml"
    p.write_text('problem = "quadratic"\niters = 5\n[grid]\ndtype = ["float64", "float32"]\n')
    r = cli("sweep", p, "--out", tmp_path / "out", "--jobs", "1", "--quiet")
    assert r.code == 0, r.err
    header, *rows = (tmp_path / "out" / "results.csv").read_text().splitlines()
    assert "dtype" in header.split(",")
    assert {row.split(",")[header.split(",").index("dtype")] for row in rows} == {"float64", "float32"}


def test_the_python_api_takes_the_dtype():
    import signsim

    r = signsim.run(problem="quadratic", iters=5, dtype="float32")
    assert r["config"]["dtype"] == "float32"


# ------------------------------------------------------------------------------------------ agreement


@pytest.mark.parametrize("options", [
    dict(problem="quadratic", dim=50, noise="gaussian:2", method="signsgd", aggregate="majority", workers=7,
         lr=2.0**-7, x0=1.0),
    dict(problem="rosenbrock", dim=10, noise="skewed:3", method="signsgd", aggregate="majority", workers=4,
         lr=2.0**-10, byzantine=1, attack="random"),
])
def test_float32_is_float64_when_every_value_is_representable(options):
    """x0 and every step are multiples of a power of two and the messages and votes are +-1: every stored value
    is exact in float32, and the gradient (float64 arithmetic on the same x) rounds to float32 keeping its sign
    (it could only lose it below 1e-45). So the two runs are identical, not merely close."""
    a = run_engine(**options, iters=400, eval_every=1)
    b = run_engine(**options, iters=400, eval_every=1, dtype="float32")
    assert np.array_equal(a.history, b.history, equal_nan=True)
    assert np.array_equal(a.x, b.x.astype(np.float64))
    assert b.x.dtype == np.float32


def lockstep(options: dict, K: int, flip_tol: float) -> int:
    """Run the float64 and float32 engines of ``options`` one iteration at a time; return the number of
    iterations before their broadcasts first differ. While they agree, x32 stays within the accumulated
    rounding bound of x64; every worker sign that differs on the way (whether or not it changes the vote) is
    on a coordinate whose float64 value (gradient, or momentum for Signum) is within ``flip_tol`` of zero,
    relative to that worker's largest."""
    e64, *_ = make_engine(**options, iters=K, eval_every=K)
    e32, *_ = make_engine(**options, iters=K, eval_every=K, dtype="float32")
    bound = U32 * np.abs(e32.x.astype(np.float64))  # x0 rounded to float32 (the MLP's random start)
    for k in range(K):
        e64.advance(1)
        e32.advance(1)
        signed = (e64.mom, e32.mom) if e64.mom.shape == e64.G.shape else (e64.G, e32.G)  # Signum: the momentum
        differ = np.sign(e64.msg) != np.sign(e32.msg)
        for m, i in zip(*np.nonzero(differ), strict=True):
            g = signed[0][m]
            assert abs(g[i]) <= flip_tol * np.max(np.abs(g)), (k, m, i, g[i], signed[1][m, i])
        if not np.array_equal(e64.agg, e32.agg):
            return k
        # x32_k = fl32(x32_{k-1} - gamma s_k), x64_k = x64_{k-1} - gamma s_k: one rounding of at most 2^-24 |x|
        # per step (the float64 roundings, 2^-53, are covered by the factor)
        bound += U32 * np.abs(e32.x.astype(np.float64))
        assert np.all(np.abs(e32.x - e64.x) <= bound * (1 + 1e-6)), k
    return K


@pytest.mark.parametrize("options, K, least", [
    # lr = 2^-7 from x0 = 0: the float64 iterates are dyadic, so x32 == x64 exactly while the votes agree
    (dict(problem="logistic", method="signsgd", aggregate="majority", workers=5, batch_size=4, lr=2.0**-7), 150,
     150),
    (dict(problem="mlp", method="signsgd", aggregate="majority", workers=4, batch_size=16, lr=0.003), 60, 40),
    (dict(problem="mlp", method="signum", aggregate="majority", workers=4, batch_size=16, lr=0.003), 60, 40),
])
def test_sign_method_iterates_agree_until_a_sign_flips_near_zero(options, K, least):
    """``least``: this seed's float32 and float64 runs agree for at least this many iterations (at the time of
    writing: every one of the K checked). A float32 gradient differs from the float64 one by the rounding of
    the data (2^-24 relative per entry) and of x (at most K 2^-24 relative), a few hundred times 6e-8 after
    cancellation in the sums at most; a sign that flips must therefore belong to a coordinate below 1e-4 of
    the worker's largest (a margin of about 10 over that)."""
    assert lockstep(options, K, flip_tol=1e-4) >= least


def test_logistic_iterates_are_identical_while_the_votes_agree():
    """With a dyadic step from 0 every float64 iterate is representable, so agreement is exact, not bounded."""
    options = dict(problem="logistic", method="signsgd", aggregate="majority", workers=5, batch_size=4,
                   lr=2.0**-7, iters=100, eval_every=1)
    a, b = run_engine(**options), run_engine(**options, dtype="float32")
    assert np.array_equal(a.x, b.x)
    # the losses are float64 sums over the float32-rounded data: 2^-24 relative per entry, averaged
    assert np.allclose(a.history[:, 1], b.history[:, 1], rtol=1e-6, atol=0)


# paper configs run for at most this many iterations (each variant), float64 and float32 from the same seed
PAPER_ITERS = "300"


@pytest.mark.parametrize("name", ["rosenbrock-majority", "byzantine", "heavy-tails", "sign-trap", "vote-trap"])
def test_paper_configs_float32_final_losses(name, monkeypatch):
    """Final loss of every variant within 1e-3 relative. Rounding x after each step alone moves it by at most
    K 2^-24 (2e-5 relative at K = 300), and the loss by a small multiple of that; a worker sign flipped near
    zero that changes a vote moves one coordinate by 2 gamma (gamma <= 0.05 here, on losses of order 1 to
    100). Measured at the time of writing: at most 5e-5 (byzantine, 45% inverting, where votes did flip);
    1e-3 leaves a factor of 20. Losses below 1e-9 (EF-signSGD on the sign trap reaches 1e-14) are compared
    in absolute terms instead."""
    import signsim

    monkeypatch.setenv("SIGNSIM_MAX_ITERS", PAPER_ITERS)
    path = f"configs/paper/{name}.toml"
    runs64 = signsim.run(config=path)["runs"]
    runs32 = signsim.run(config=path, dtype="float32")["runs"]
    assert len(runs64) == len(runs32) >= 2
    for a, b in zip(runs64, runs32, strict=True):
        assert b["config"]["dtype"] == "float32" and a["config"]["dtype"] == "float64"
        assert a["status"] == b["status"] == "ok"
        l64, l32 = a["final"]["loss"], b["final"]["loss"]
        assert abs(l32 - l64) <= max(1e-3 * abs(l64), 1e-9), (a["label"], l64, l32)


def test_paper_digits_mlp_float32(monkeypatch):
    """The MLP paper config (signum against SGD on digits), 100 iterations: no broadcast differs that early
    at this seed (the lockstep test above sees the first flips after ~100 iterations), so only rounding
    separates the runs: K 2^-24 = 6e-6 relative in x at most; final losses within 1e-4 relative (measured:
    3.5e-7), test accuracies equal."""
    import signsim

    monkeypatch.setenv("SIGNSIM_MAX_ITERS", "100")
    path = "configs/paper/digits-mlp.toml"
    for a, b in zip(signsim.run(config=path)["runs"], signsim.run(config=path, dtype="float32")["runs"],
                    strict=True):
        l64, l32 = a["final"]["loss"], b["final"]["loss"]
        assert abs(l32 - l64) <= 1e-4 * l64, (a["label"], l64, l32)
        assert a["final"]["test_acc"] == b["final"]["test_acc"]


# ------------------------------------------------------------------------------------------ threads


@pytest.mark.parametrize("args", [
    ("--problem", "quadratic", "--dim", "2000", "--workers", "32", "--method", "ssdm", "--iters", "20"),
    ("--problem", "logistic", "--workers", "32", "--batch-size", "64", "--method", "signum", "--iters", "20"),
])
def test_float32_runs_are_identical_with_1_and_2_threads(args):
    docs = []
    for threads in ("1", "2"):
        r = run_subprocess("run", *args, "--dtype", "float32", "--eval-every", "1", "--json",
                           env={"NUMBA_NUM_THREADS": threads})
        assert r.code == 0, r.err
        docs.append(json.loads(r.out))
    assert docs[0]["config"]["dtype"] == "float32"
    assert docs[0]["history"] == docs[1]["history"]
    assert docs[0].get("x_final") == docs[1].get("x_final")


def test_parallel_threshold_is_reached_by_the_thread_tests():
    """The thread tests above run the threaded loop (else they would test nothing about threads)."""
    for opts in (dict(problem="quadratic", dim=2000, workers=32, method="ssdm"),
                 dict(problem="logistic", workers=32, batch_size=64, method="signum")):
        e, *_ = make_engine(**opts, iters=1, dtype="float32")
        from signsim.engine import loop

        assert e.icfg[loop.I_PARALLEL] == 1, opts


def test_a_row_written_between_chunks_compiles_nothing():
    """On Ctrl-C between chunks the driver records the current iterate with the family's copy of
    ``loop.record``, already compiled with the float32 loop (the generic one would compile every family's
    kernels for float32 first: 13 s measured)."""
    from signsim.engine import loop

    e, *_ = make_engine(problem="logistic", iters=10, dtype="float32")
    e.advance(3)
    partial = e.recorder()
    assert partial.func is loop.record and partial.args[0].family == "glm"  # (loop.record for the run's plan)
    record = partial.func
    misses = sum(record.stats.cache_misses.values())
    e.record_now()
    assert e.history()[-1, 0] == 3
    assert any("float32" in str(sig[2]) for sig in record.signatures)
    # compiled with the loop in this process, or loaded from Numba's cache where the loop was: not compiled now
    assert sum(record.stats.cache_misses.values()) == misses


def test_heterogeneity_of_a_float32_run_is_measured_on_its_data(cli):
    """Split data: the run reports the workers' biases at x0 (commands/run.py) from its float32 data matrix.
    zeta^2 is a mean of squared gradient differences: the data's rounding (2^-24 relative per entry) moves it
    by a few 1e-8 relative (measured 5e-9); 1e-6 leaves a wide margin."""
    docs = []
    for dtype in ("float64", "float32"):
        r = cli("run", "--problem", "logistic", "--split", "iid", "--iters", "5", "--dtype", dtype, "--json")
        assert r.code == 0, r.err
        docs.append(r.json())
    z64, z32 = (d["heterogeneity"]["zeta_sq"] for d in docs)
    assert z32 == pytest.approx(z64, rel=1e-6)
