"""Binomial vote counts against simulating every worker: same distribution of the summed messages."""

import numpy as np
import pytest
from scipy import stats

from signsim import noise
from signsim.codes import SignZero
from signsim.engine import binomial
from signsim.stages import registry

CASES = [("gaussian:1", 1), ("gaussian:1", 4), ("skewed:1", 1), ("bimodal:1", 1), ("laplace:0.5", 1),
         ("uniform:2", 1), ("cauchy:0.3", 3), ("none", 1)]
G = np.array([0.8, -0.3, 0.05, 0.0, -2.0])


def simulate_sums(model, p, tau, g, M, byz, attack, sign_zero, rng, reps):
    """Every worker drawn: sign(g + mean of tau noise draws), sign(0) policy, attack, then the sum."""
    out = np.empty((reps, g.size))
    for r in range(reps):
        xi = model.sample(rng, (M, g.size, tau), p).mean(axis=2)
        s = np.sign(g + xi)
        zeros = s == 0
        if sign_zero == SignZero.RANDOM:
            s[zeros] = np.where(rng.random(zeros.sum()) < 0.5, -1.0, 1.0)
        elif sign_zero == SignZero.PLUS:
            s[zeros] = 1.0
        if attack == "invert":
            s[:byz] = -s[:byz]
        else:
            s[:byz] = np.abs(s[:byz]) * np.where(rng.random((byz, g.size)) < 0.5, -1.0, 1.0)
        out[r] = s.sum(axis=0)
    return out


def binomial_sums(model, p, tau, g, M, byz, attack, sign_zero, seed, reps):
    """The engine's vote sums, with the law of the attack module of that name (the registry's ``sign_law``)."""
    gen = np.random.default_rng(seed)
    det = binomial.is_deterministic(model, p)
    out = np.empty((reps, g.size))
    buf = np.empty(g.size)
    law = np.array(registry.stages("attack")[attack].sign_law(()), dtype=float)
    for r in range(reps):
        binomial.vote_sum(g, model.code, p, tau, det, M, byz, law, int(sign_zero), gen, buf)
        out[r] = buf
    return out


@pytest.mark.parametrize("spec,tau", CASES)
@pytest.mark.parametrize("M,byz,attack", [(7, 0, "invert"), (8, 3, "invert"), (9, 2, "random")])
def test_vote_sums_have_the_per_worker_distribution(spec, tau, M, byz, attack):
    model, p = noise.parse(spec)
    reps = 3000
    sign_zero = SignZero.RANDOM
    a = simulate_sums(model, p, tau, G, M, byz, attack, sign_zero, np.random.default_rng(1), reps)
    b = binomial_sums(model, p, tau, G, M, byz, attack, sign_zero, 2, reps)
    for i in range(G.size):
        # chi-square two-sample test on the counts of each possible sum; level 1e-4 per coordinate
        values = np.union1d(a[:, i], b[:, i])
        table = np.array([[np.sum(a[:, i] == v) for v in values], [np.sum(b[:, i] == v) for v in values]])
        if len(values) == 1:
            continue
        assert stats.chi2_contingency(table)[1] > 1e-4, (spec, i)


@pytest.mark.parametrize("sign_zero", [SignZero.RANDOM, SignZero.PLUS, SignZero.ZERO])
def test_zero_gradient_without_noise_follows_the_sign_zero_policy(sign_zero):
    model, p = noise.parse("none")
    g = np.array([0.0, 1.0, -1.0])
    out = binomial_sums(model, p, 1, g, 5, 0, "invert", sign_zero, 0, 2000)
    assert np.all(out[:, 1] == 5) and np.all(out[:, 2] == -5)
    if sign_zero == SignZero.ZERO:
        assert np.all(out[:, 0] == 0)
    elif sign_zero == SignZero.PLUS:
        assert np.all(out[:, 0] == 5)
    else:  # sum of 5 fair coins: mean 0, variance 5
        assert abs(out[:, 0].mean()) < 5 * np.sqrt(5 / 2000)
        assert abs(out[:, 0].var() - 5) < 5 * np.sqrt(2 * 25 / 2000)


def test_a_million_workers_mean_matches_closed_form():
    model, p = noise.parse("gaussian:1")
    M = 10**6
    out = binomial_sums(model, p, 1, G, M, 0, "invert", SignZero.RANDOM, 3, 400)
    rho = stats.norm.cdf(np.abs(G))  # P(correct sign); the zero coordinate has rho = 1/2
    expected = M * np.sign(G) * (2 * rho - 1)
    sd = np.sqrt(M * 4 * rho * (1 - rho))
    assert np.all(np.abs(out.mean(axis=0) - expected) < 5 * sd / np.sqrt(400))


def test_every_registered_noise_model_is_either_supported_or_refused():
    for name in noise.registry():
        if name in binomial.CLOSED_FORM_TAU:
            continue
        assert name in ("student-t", "stable")


# ---- the whole run: --votes binomial against the per-worker engine, in distribution --------------------------

RUNS = [  # (noise, M, byzantine, attack, aggregate); the random attack's loop is compiled for it alone: slow step
    # (with it the only bimodal-noise case; the random attack's vote sums are checked in the fast suite above); the
    # mean's loops too (9 s on 2 cores: the mean of signs is the vote count, checked above)
    ("gaussian:1", 5, 0, "invert", "majority"),
    ("skewed:1", 6, 2, "invert", "majority"),
    pytest.param("bimodal:1", 7, 1, "random", "majority", marks=pytest.mark.slow),
    pytest.param("gaussian:2", 4, 0, "invert", "mean", marks=pytest.mark.slow),
]


def _runs(votes, noise_spec, M, byz, attack, aggregate, seeds, iters):
    from signsim.engine.build import build
    from signsim.engine.driver import simulate
    from signsim.interface import config

    x1, loss = [], []
    for seed in range(seeds):
        cfg = config.resolve({"problem": "quadratic", "dim": 4, "kappa": 4.0, "x0": 0.3, "noise": noise_spec,
                              "method": "signsgd", "workers": M, "byzantine": byz, "attack": attack,
                              "aggregate": aggregate, "lr": 0.05, "iters": iters, "eval_every": 1, "seed": seed,
                              "votes": votes})
        out = simulate(build(cfg).engine)
        from signsim.engine import loop

        x1.append(out.history[1, loop.H_DIST])
        loss.append(out.history[-1, loop.H_LOSS])
    return np.array(x1), np.array(loss)


@pytest.mark.parametrize("noise_spec,M,byz,attack,aggregate", RUNS)
def test_binomial_runs_have_the_per_worker_distribution(noise_spec, M, byz, attack, aggregate):
    """Over 300 seeds each: the distance to x* after one step takes finitely many values, compared by a
    chi-square test; the loss after 15 steps by a two-sample Kolmogorov-Smirnov test; both at level 1e-3."""
    a1, aK = _runs("per-worker", noise_spec, M, byz, attack, aggregate, 300, 15)
    b1, bK = _runs("binomial", noise_spec, M, byz, attack, aggregate, 300, 15)
    values = np.union1d(np.round(a1, 12), np.round(b1, 12))
    if len(values) > 1:
        table = np.array([[np.sum(np.round(a1, 12) == v) for v in values],
                          [np.sum(np.round(b1, 12) == v) for v in values]])
        assert stats.chi2_contingency(table)[1] > 1e-3
    assert stats.ks_2samp(aK, bK).pvalue > 1e-3


def test_binomial_run_is_reproducible_and_counts_every_worker_bits():
    from signsim.commands.run import run
    from signsim.interface import config

    opts = {"problem": "quadratic", "dim": 50, "noise": "gaussian:1", "method": "signsgd", "workers": 100_001,
            "iters": 30, "votes": "binomial", "seed": 4}
    a, b = run(config.resolve(opts)), run(config.resolve(opts))
    assert a["history"][-1]["loss"] == b["history"][-1]["loss"]
    assert a["history"][-1]["bits_up"] == 30 * 100_001 * 50  # one bit per coordinate per worker, as if sent


@pytest.mark.parametrize("args", [
    ["--method", "signum"], ["--method", "ssdm"], ["--method", "ef-signsgd"], ["--method", "qsgd"],
    ["--method", "signsgd", "--aggregate", "median"], ["--method", "signsgd", "--byzantine", "1", "--attack", "alie:1"],
    ["--method", "signsgd", "--noise", "student-t:3:1"], ["--method", "signsgd", "--noise", "laplace:1",
                                                          "--batch-size", "2"],
    ["--method", "signsgd", "--problem", "logistic"], ["--method", "signsgd", "--problem", "vote-trap"],
    ["--method", "signsgd", "--problem", "rosenbrock", "--oracle", "term"],
])
def test_every_refused_configuration_exits_2(cli, args):
    r = cli("run", "--votes", "binomial", "--iters", "5", *args)
    assert r.code == 2, r.err
    assert "--votes binomial" in r.err and "Traceback" not in r.err


# ---- the attacks' laws: declared by the attack modules, drawn generically ---------------------------------------

def test_attacked_counts_draw_what_the_attacks_drew():
    """invert's law is sure: no draw; random's pools +1 and -1 (equal rows): one Bin(nonzero, 1/2), nothing else."""
    attacks = registry.stages("attack")
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    law = np.array(attacks["invert"].sign_law(()), dtype=float)
    assert binomial.attacked_counts(a, 3, 1, 2, law) == (2, 1, 3)
    assert a.random() == b.random()  # nothing drawn
    law = np.array(attacks["random"].sign_law(()), dtype=float)
    up = b.binomial(5, 0.5)
    assert binomial.attacked_counts(a, 3, 1, 2, law) == (up, 1, 5 - up)
    assert a.random() == b.random()
    assert binomial.attacked_counts(a, 0, 4, 0, law) == (0, 4, 0)  # no nonzero sign: no draw
    assert a.random() == b.random()
    # a law of three distinct rows (no pooling): a multinomial per own sign, in order +1, 0, -1
    law = np.array([[0.5, 0.25, 0.25], [0.0, 1.0, 0.0], [0.2, 0.0, 0.8]])
    u1 = b.binomial(3, 0.5)
    z1 = b.binomial(3 - u1, 0.5)
    u3 = b.binomial(2, 0.2)
    assert binomial.attacked_counts(a, 3, 1, 2, law) == (u1 + u3, z1 + 1, 3 - u1 - z1 + 2 - u3)
    assert a.random() == b.random()


@pytest.mark.parametrize("name", [n for n, m in registry.stages("attack").items() if hasattr(m, "sign_law")])
def test_each_declared_sign_law_is_the_attack_itself(name):
    """The law against the attack's own NumPy reference applied to sign messages: within 5 standard errors."""
    mod = registry.stages("attack")[name]
    law = np.array(mod.sign_law(()), dtype=float)
    assert law.shape == (3, 3) and np.allclose(law.sum(axis=1), 1.0) and np.all(law >= 0)
    gen = np.random.default_rng(0)
    n = 20000
    for row, own in enumerate((1.0, 0.0, -1.0)):
        sent = np.asarray(mod.reference(np.full(n, own), (), gen))
        freq = np.array([np.mean(sent == 1.0), np.mean(sent == 0.0), np.mean(sent == -1.0)])
        assert np.all(np.abs(freq - law[row]) <= 5 * np.sqrt(law[row] * (1 - law[row]) / n) + 1e-12), (name, own)
