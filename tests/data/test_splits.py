"""Worker splits: partitions, label concentration, split-batch frequencies."""

import hashlib
import json
from fractions import Fraction

import numpy as np
import pytest
from numba import njit

from signsim.data.splits import SHARD, SHARED, check_syntax, make_split, power_law_sizes, report
from signsim.errors import InputError
from signsim.problems.sampling import minibatch_group

LABELS = np.repeat(np.arange(10), 100).astype(float)


@pytest.mark.parametrize("spec", ["iid", "sorted", "label-skew:0.1", "label-skew:100"])
@pytest.mark.parametrize("workers", [1, 3, 8])
def test_shards_partition_the_data(spec, workers):
    s = make_split(spec, LABELS, workers, np.random.default_rng(0))
    assert s.mode == SHARD and s.groups == workers
    assert np.array_equal(np.sort(s.idx), np.arange(LABELS.size))
    assert all(s.group(m).size > 0 for m in range(workers))


def label_entropy(s, workers):
    ent = []
    for m in range(workers):
        counts = np.bincount(LABELS[s.group(m)].astype(int), minlength=10) / s.group(m).size
        counts = counts[counts > 0]
        ent.append(-(counts * np.log(counts)).sum())
    return np.mean(ent)


def test_label_skew_interpolates_between_iid_and_concentrated():
    M = 8
    iid = label_entropy(make_split("iid", LABELS, M, np.random.default_rng(1)), M)
    big = label_entropy(make_split("label-skew:1000", LABELS, M, np.random.default_rng(1)), M)
    small = label_entropy(make_split("label-skew:0.05", LABELS, M, np.random.default_rng(1)), M)
    assert abs(big - iid) < 0.05 and iid > np.log(10) - 0.1
    assert small < 0.5 * iid


def test_sorted_shards_hold_few_labels():
    s = make_split("sorted", LABELS, 10, np.random.default_rng(0))
    assert all(np.unique(LABELS[s.group(m)]).size == 1 for m in range(10))


@njit
def group_counts(mode, gen, n):
    c = np.zeros(2, dtype=np.int64)
    for _ in range(n):
        c[minibatch_group(mode, 0, gen)] += 1
    return c


def test_split_batch_draws_each_half_about_half_the_time():
    s = make_split("split-batch", LABELS, 4, np.random.default_rng(0))
    assert set(np.unique(LABELS[s.group(0)])) == {0, 1, 2, 3, 4}
    assert set(np.unique(LABELS[s.group(1)])) == {5, 6, 7, 8, 9}
    n = 100_000
    c = group_counts(s.mode, np.random.default_rng(3), n)
    assert abs(c[0] / n - 0.5) < 5 * np.sqrt(0.25 / n)


def one_at_a_time(split, workers, gens, H, tau):
    """The oracle of a model run's minibatch rows: participant j's H minibatches from its own generator, in order;
    under split-batch one uniform picks the half (< 1/2: the first), then each index one ``gen.integers`` call."""
    out = np.empty((H, len(workers), tau), dtype=np.int64)
    for j, (m, gen) in enumerate(zip(workers, gens, strict=True)):
        for h in range(H):
            g = {SHARED: 0, SHARD: m}.get(split.mode)
            if g is None:
                g = 0 if gen.random() < 0.5 else 1
            group = split.group(g)
            out[h, j] = [group[gen.integers(0, group.size)] for _ in range(tau)]
    return out


@pytest.mark.parametrize("spec", ["shared", "iid", "split-batch", "power-law:1.5"])
@pytest.mark.parametrize("H, tau", [(1, 1), (1, 7), (3, 4)])
def test_a_model_runs_rows_drawn_in_compiled_code_are_those_of_one_draw_at_a_time(spec, H, tau):
    """``Gradients.rows`` with the engine's typed list of generators (``sampling.minibatch_rows``) against the draws
    one at a time, and against its own NumPy path (a plain list: ``minibatch_ref``), participants in any order."""
    from signsim.engine.participants import typed_list
    from signsim.problems.model import Gradients

    labels = np.repeat(np.arange(4), [1, 5, 30, 64]).astype(float)  # a group of one row under power-law
    M = 6
    split = make_split(spec, labels, M, np.random.default_rng(4))
    workers = np.array([4, 0, 5, 2], dtype=np.int64)
    grads = Gradients.__new__(Gradients)
    grads.split, grads.tau, grads.H = split, tau, H

    def streams():
        return [np.random.default_rng([9, int(m)]) for m in workers]

    want = one_at_a_time(split, workers, streams(), H, tau)
    listed = streams()
    got = grads.rows(workers, typed_list(listed))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(grads.rows(workers, streams()), want)
    np.testing.assert_array_equal(grads.rows(workers, tuple(streams())), want)  # (any other sequence: NumPy's path)
    with pytest.raises(ValueError):
        grads.rows(workers, typed_list(streams()[:3]))
    # the generators moved on as the draws one at a time did
    after = streams()
    one_at_a_time(split, workers, after, H, tau)
    assert [g.random() for g in listed] == [g.random() for g in after]


# --- the federated partitioners (issue #32 item 4): shards:K, power-law:A, label-skew:ALPHA:MIN ---------------------
# Each against an oracle written with plain Python loops that replays the documented algorithm (docs/theory.md
# §9.8) from the same generator, plus the properties the sources state.

#: 0..9 with unequal class sizes (n = 450), so that shards straddle labels
UNEVEN = np.concatenate([np.full(10 + 10 * c, c) for c in range(10)]).astype(float)


def groups_of(s):
    return [sorted(int(i) for i in s.group(m)) for m in range(s.groups)]


def shards_oracle(labels, M, K, rng):
    n = len(labels)
    perm = [int(v) for v in rng.permutation(n)]
    order = sorted(range(n), key=lambda pos: (labels[perm[pos]], pos))  # stable sort of the permuted samples
    order = [perm[pos] for pos in order]
    S, shards, start = M * K, [], 0
    for s in range(S):
        size = n // S + (1 if s < n % S else 0)
        shards.append(order[start: start + size])
        start += size
    assign = [int(v) for v in rng.permutation(S)]
    out = []
    for m in range(M):
        rows = []
        for s in assign[m * K: (m + 1) * K]:
            rows += shards[s]
        out.append(sorted(rows))
    return out


@pytest.mark.parametrize(("labels", "M", "K"), [(LABELS, 10, 2), (LABELS, 8, 3), (UNEVEN, 7, 2), (UNEVEN, 45, 10)])
def test_shards_equal_the_loop_oracle(labels, M, K):
    s = make_split(f"shards:{K}", labels, M, np.random.default_rng(5))
    assert s.mode == SHARD and s.heterogeneous and s.groups == M
    assert groups_of(s) == shards_oracle(labels, M, K, np.random.default_rng(5))
    assert np.array_equal(np.sort(s.idx), np.arange(labels.size))  # every sample once


def test_shards_that_do_not_straddle_labels_give_each_worker_k_labels_at_most():
    """1000 samples, 100 per label, M K = 20 shards of 50: every shard one label, so K labels at most, and each
    worker exactly K n / (M K) samples."""
    for M, K in [(10, 2), (5, 4), (20, 1)]:
        s = make_split(f"shards:{K}", LABELS, M, np.random.default_rng(M))
        for m in range(M):
            rows = s.group(m)
            assert rows.size == K * LABELS.size // (M * K)
            assert len({LABELS[i] for i in rows}) <= K
        r = report(s)
        assert r["labels_max"] <= K and r["sizes"] == [LABELS.size // M] * M


def test_shards_degenerate_cases():
    one = make_split("shards:1", LABELS, 10, np.random.default_rng(0))  # K = 1: the sorted split's shards, shuffled
    assert sorted(map(tuple, groups_of(one))) == sorted(map(tuple, groups_of(make_split("sorted", LABELS, 10, None))))
    tiny = np.array([2.0, 0.0, 1.0, 0.0, 2.0])
    each = make_split("shards:1", tiny, 5, np.random.default_rng(1))  # M = n: one sample each
    assert sorted(int(each.group(m)[0]) for m in range(5)) == list(range(5))
    flat = make_split("shards:3", np.zeros(30), 4, np.random.default_rng(2))  # one class
    assert report(flat)["labels_max"] == 1 and np.array_equal(np.sort(flat.idx), np.arange(30))


def power_law_oracle(n, M, a):
    """Largest remainders in exact rationals (a an integer): q_r = (n - M) r^-a / sum_j j^-a."""
    w = [Fraction(1, r**a) for r in range(1, M + 1)]
    q = [(n - M) * x / sum(w) for x in w]
    base = [int(x) for x in q]  # floor (q >= 0)
    left = (n - M) - sum(base)
    by_remainder = sorted(range(M), key=lambda r: (-(q[r] - base[r]), r))
    for r in by_remainder[:left]:
        base[r] += 1
    return [1 + b for b in base]


@pytest.mark.parametrize(("n", "M", "a"), [(1000, 10, 1), (1437, 10, 2), (450, 45, 1), (100, 7, 0), (12, 10, 3)])
def test_power_law_sizes_follow_the_stated_law(n, M, a):
    sizes = power_law_sizes(n, M, float(a))
    assert sizes.tolist() == power_law_oracle(n, M, a)
    w = np.arange(1, M + 1) ** -float(a)
    q = (n - M) * w / w.sum()
    assert sizes.sum() == n and sizes.min() >= 1 and np.all(np.abs(sizes - 1 - q) < 1)
    s = make_split(f"power-law:{a}", np.zeros(n), M, np.random.default_rng(3))
    assert sorted(np.diff(s.ptr).tolist(), reverse=True) == sizes.tolist()
    assert np.array_equal(np.sort(s.idx), np.arange(n))


def test_power_law_degenerate_cases_and_iid_content():
    assert power_law_sizes(103, 10, 0.0).tolist() == [11, 11, 11] + [10] * 7  # a = 0: equal sizes up to one
    assert power_law_sizes(10, 10, 5.0).tolist() == [1] * 10  # M = n: one sample each, whatever a
    assert power_law_sizes(5, 1, 1.0).tolist() == [5]
    s = make_split("power-law:1.5", LABELS, 5, np.random.default_rng(4))
    assert groups_of(s) == groups_of(make_split("power-law:1.5", LABELS, 5, np.random.default_rng(4)))
    # the samples are a uniformly random partition: the largest worker's label counts are hypergeometric
    big = max(range(5), key=lambda m: s.group(m).size)
    k, N = s.group(big).size, LABELS.size
    counts = np.bincount(LABELS[s.group(big)].astype(int), minlength=10)
    mean, var = k * 0.1, k * 0.1 * 0.9 * (N - k) / (N - 1)
    chi2 = float(np.sum((counts - mean) ** 2) / var * 0.9)  # ~ chi^2 with 9 degrees of freedom
    assert chi2 < 27.9  # its 0.999 quantile


def label_skew_oracle(labels, M, alpha, minimum, rng, draws=1000):
    for _ in range(draws):
        shards = [[] for _ in range(M)]
        for c in sorted(set(labels.tolist())):
            members = [int(v) for v in rng.permutation([i for i in range(len(labels)) if labels[i] == c])]
            p = rng.dirichlet([alpha] * M)
            cuts, acc = [], 0.0
            for m in range(M - 1):
                acc += p[m]
                cuts.append(int(acc * len(members)))
            bounds = [0, *cuts, len(members)]
            for m in range(M):
                shards[m] += members[bounds[m]: bounds[m + 1]]
        if min(len(x) for x in shards) >= minimum:
            return [sorted(x) for x in shards]
    return None


@pytest.mark.parametrize(("alpha", "M", "minimum"), [(0.1, 10, 20), (0.5, 6, 40), (0.05, 4, 30)])
def test_label_skew_min_equals_the_loop_oracle(alpha, M, minimum):
    spec = f"label-skew:{alpha}:{minimum}"
    s = make_split(spec, UNEVEN, M, np.random.default_rng(6))
    assert groups_of(s) == label_skew_oracle(UNEVEN, M, alpha, minimum, np.random.default_rng(6))
    assert min(np.diff(s.ptr)) >= minimum and np.array_equal(np.sort(s.idx), np.arange(UNEVEN.size))
    assert groups_of(make_split(spec, UNEVEN, M, np.random.default_rng(6))) == groups_of(s)  # same seed, same split


def test_label_skew_min_near_uniform_for_large_alpha_and_one_class():
    s = make_split("label-skew:1e4:90", LABELS, 10, np.random.default_rng(7))
    r = report(s)
    assert r["size_min"] >= 90 and r["labels_min"] == 10
    assert np.abs(np.array(r["label_counts"]) - 10).max() <= 4  # Dirichlet(1e4) proportions: sd ~ 0.3 sample
    one = make_split("label-skew:0.5:3", np.zeros(40), 4, np.random.default_rng(8))
    assert min(np.diff(one.ptr)) >= 3


def test_label_skew_min_whose_first_draw_suffices_is_label_skews_split():
    plain = make_split("label-skew:100", LABELS, 8, np.random.default_rng(9))
    assert groups_of(make_split("label-skew:100:1", LABELS, 8, np.random.default_rng(9))) == groups_of(plain)


def test_label_skew_without_min_is_unchanged():
    """SHA-256 prefixes of (ptr, idx) recorded with the code before the new splits: existing results stay the same."""
    labels = np.random.default_rng(7).integers(0, 5, size=300).astype(float)
    for (spec, M), want in {("label-skew:0.1", 7): "e294c62d67b1cf66", ("label-skew:0.5", 4): "fd8423c1c3c840a1",
                            ("label-skew:100", 10): "1e920a787e4c726b",
                            ("label-skew:0.01", 20): "8d680a738d4861ab"}.items():
        s = make_split(spec, labels, M, np.random.default_rng(3))
        assert hashlib.sha256(s.ptr.tobytes() + s.idx.tobytes()).hexdigest()[:16] == want, spec


def test_label_skew_min_fails_in_one_line_when_it_cannot():
    with pytest.raises(InputError, match=r"in 1000 Dirichlet\(0.01\) draws .* lower MIN or raise ALPHA") as e:
        make_split("label-skew:0.01:9", np.repeat([0.0, 1.0], 20), 4, np.random.default_rng(0))
    assert "\n" not in str(e.value)
    with pytest.raises(InputError, match="4 workers x 11 samples = 44 but only 40"):
        make_split("label-skew:1:11", np.repeat([0.0, 1.0], 20), 4, np.random.default_rng(0))


@pytest.mark.parametrize(("spec", "words"), [
    ("shards:0", "integer >= 1"), ("shards:x", "integer >= 1"), ("shards:1.5", "integer >= 1"),
    ("shards:", "integer >= 1"), ("shards:1000000", "only 1000 training samples"),
    ("shards:101", "at most shards:100"), ("power-law:-1", "A >= 0"), ("power-law:nan", "A >= 0"),
    ("power-law:inf", "A >= 0"), ("power-law:", "A >= 0"), ("label-skew:0.5:0", "MIN an integer >= 1"),
    ("label-skew:0.5:x", "MIN an integer >= 1"), ("label-skew:0.5:2.5", "MIN an integer >= 1"),
    ("label-skew:0:5", "ALPHA > 0"), ("label-skew:0.5:200", "but only 1000"), ("power-law:1:2", "A >= 0"),
])
def test_bad_specs_fail_in_one_line(spec, words):
    with pytest.raises(InputError) as e:
        make_split(spec, LABELS, 10, np.random.default_rng(0))
    assert words in str(e.value) and str(e.value).startswith(f"--split {spec}") and "\n" not in str(e.value)


def test_bad_specs_exit_2_from_the_command_line(cli):
    from tests.cli.test_cli import assert_one_line_error

    for ok in ("shards:2", "power-law:0", "power-law:1.5", "label-skew:0.5:10", "label-skew:0.5"):
        check_syntax(ok)
    for spec in ("shards:0", "power-law:-1", "label-skew:0.5:0"):
        assert_one_line_error(cli("run", "--problem", "logistic", "--split", spec), f"--split {spec}")
    assert_one_line_error(cli("run", "--problem", "logistic", "--split", "shards:1000000"), "training samples")


def test_run_reports_the_split(cli, tmp_path):
    """The brief's run: the results' heterogeneity.split against the problem's own shard sizes, the label counts
    against a count of the training labels, and the one line under the summary."""
    out = tmp_path / "r.json"
    r = cli("run", "--problem", "logistic", "--split", "shards:2", "--workers", "10", "--iters", "20",
            "--out", out)
    assert r.code == 0, r.err
    doc = json.loads(out.read_text())
    h, p = doc["heterogeneity"], doc["problem"]
    sp = h["split"]
    assert sp["name"] == "shards:2" and sp["groups"] == 10 and sp["sizes"] == p["shard_sizes"]
    assert sum(sp["sizes"]) == p["n_train"] and max(sp["sizes"]) - min(sp["sizes"]) <= 2
    counts = np.array(sp["label_counts"])
    assert counts.shape == (10, 2) and counts.sum(axis=1).tolist() == sp["sizes"]
    assert sp["labels_max"] <= 2 and h["zeta_sq"] > 0
    line = " ".join(r.err.split())
    assert "split shards:2: samples per worker" in line and "zeta^2 at x_0 = " in line


def test_a_worker_s_share_of_a_label_is_beta_as_theory_9_8_says():
    """Issue 50 (the oracle audit's citation finding): under ``label-skew:α`` worker m's share of label c's rows is
    Beta(α, (M - 1) α) (NIID-Bench's law over the workers for each label), which §9.8 states; Hsu et al. 2019's
    per-client Dir(α p) law would give a variance p_c (1 - p_c) / (α + 1) instead. 600 independent splits of two
    labels of 10,000 rows each: a Kolmogorov-Smirnov test against the Beta law, and the Hsu variance far off."""
    from scipy import stats

    M, alpha, n = 5, 0.5, 10_000
    labels = np.repeat([0.0, 1.0], n)
    shares = []
    for seed in range(600):
        s = make_split(f"label-skew:{alpha}", labels, M, np.random.default_rng(seed))
        shares.append(np.count_nonzero(labels[s.group(0)] == 0.0) / n)
    shares = np.asarray(shares)
    assert stats.kstest(shares, stats.beta(alpha, (M - 1) * alpha).cdf).pvalue > 1e-3
    beta_var = (M - 1) / (M**2 * (M * alpha + 1))  # 0.0457
    hsu_var = 0.5 * 0.5 / (alpha + 1)  # 0.167 (p_c = 1/2)
    assert abs(shares.var() - beta_var) < 0.25 * beta_var and shares.var() < 0.5 * hsu_var
