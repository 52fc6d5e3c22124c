"""``--lr theory`` (docs/theory.md §3.6): each rule against its theorem's closed form written out here, the constants
against independent computations (finite differences of the gradients, singular values), the option's paths
(flags, config files, sweeps, Python) and its refusals."""

import math
from dataclasses import replace

import numpy as np
import pytest

from signsim import problems
from signsim.errors import InputError
from signsim.interface import config
from signsim.interface import step_sizes as S
from signsim.interface.options import RECORD, value

from ..conftest import run_subprocess

# ---------------------------------------------------------------------------------------------------------------------
# the rules: numbers by hand


def test_gd_and_compressed_gd_by_hand():
    assert S.gd(4.0) == 0.25
    assert S.cgd(2.0, 3.0) == pytest.approx(1 / 8)  # 1/((1 + 3) 2)
    assert S.cgd(5.0, 0.0) == S.gd(5.0)


def test_diana_meets_the_corollary_conditions():
    """Corollary A.11: alpha <= 1/(omega + 1), gamma <= 1/((1 + 2 omega/n) L + M L alpha), M > 2 omega/(n alpha);
    its own choice alpha = 1/(omega + 1), M = 4 omega (omega + 1)/n gives gamma = 1/((1 + 6 omega/n) L)."""
    assert S.diana(10.0, 0.5, 3) == pytest.approx(0.05)  # 1/((1 + 1) 10)
    for L, omega, n in ((1.0, 0.125, 8), (7.5, 9.0, 3), (100.0, 2.0, 1)):
        gamma = S.diana(L, omega, n)
        alpha = 1 / (omega + 1)
        M = 4 * omega * (omega + 1) / n
        assert gamma == pytest.approx(1 / ((1 + 2 * omega / n) * L + M * L * alpha))
        for a in (alpha, alpha / 2, alpha / 10):  # a smaller alpha: some M > 2 omega/(n a) still admits gamma
            M_least = 2 * omega / (n * a)
            assert gamma < 1 / ((1 + 2 * omega / n) * L + M_least * L * a)


def test_ef21_by_hand():
    # alpha = 3/4: sqrt(1 - alpha) = 1/2, theta = 1/2, beta = (1/4)/(1/2) = 1/2, sqrt(beta/theta) = 1
    assert S.ef21(2.0, 3.0, 0.75) == pytest.approx(1 / 5)
    # top-k, alpha = k/d: sqrt(beta/theta) = (1 + sqrt(1 - alpha))/alpha - 1, another form of the same constant
    for alpha in (0.01, 0.1, 0.5, 0.9):
        ratio = (1 + math.sqrt(1 - alpha)) / alpha - 1
        assert S.ef21(1.0, 2.0, alpha) == pytest.approx(1 / (1 + 2 * ratio))
    assert S.ef21(4.0, 9.0, 1.0) == 0.25  # no compression: beta = 0


def test_marina_by_hand():
    # p = 1/2, omega = 3, M = 3: (1 - p) omega/(p M) = 1
    assert S.marina(1.0, 2.0, 3.0, 0.5, 3) == pytest.approx(1 / 3)
    assert S.marina(5.0, 9.0, 4.0, 1.0, 2) == 0.2  # p = 1: a full gradient every round


def test_unchecked_rules_are_not_used():
    assert {k for k, r in S.RULES.items() if not r.checked} == {"ef21", "marina"}


# ---------------------------------------------------------------------------------------------------------------------
# the constants: independent computations


def _cfg(**options):
    values = {"lr": 0.1, **options}
    return config.resolve(values)


def _fd_hessian(grad, x, h=1e-5):
    d = x.size
    H = np.zeros((d, d))
    for i in range(d):
        e = np.zeros(d)
        e[i] = h
        H[:, i] = (grad(x + e) - grad(x - e)) / (2 * h)
    return (H + H.T) / 2


@pytest.mark.parametrize("options", [{"problem": "quadratic", "dim": 5, "kappa": 30.0},
                                     {"problem": "sign-trap", "trap_eps": 0.3}])
def test_shared_problems_L_is_the_hessians_top_eigenvalue(options):
    cfg = _cfg(**options)
    p = problems.build(cfg)
    s = S.smoothness(p, 4)
    x = np.random.default_rng(1).normal(size=p.dim)
    assert s.L == pytest.approx(np.linalg.eigvalsh(_fd_hessian(p.grad_ref, x))[-1], rel=1e-6)
    assert np.allclose(s.workers, s.L) and s.L_tilde == pytest.approx(s.L)


def test_vote_trap_workers():
    p = problems.build(_cfg(problem="vote-trap", trap_lambda=6.0, workers=6))
    s = S.smoothness(p, 6)
    assert s.workers.tolist() == [1.0, 1.0, 6.0, 1.0, 1.0, 6.0]  # worker m holds f_{m mod 3}
    assert s.L == pytest.approx(_fd_hessian(p.grad_ref, np.array([0.3]))[0, 0])
    assert s.L_max == 6.0 and s.L_tilde == pytest.approx(math.sqrt((1 + 1 + 36) / 3))


def _shard_grad(p, rows):
    return lambda x: p.finite_sum.per_sample_grads(x, rows).mean(axis=0)


def test_least_squares_shards_are_exact():
    cfg = _cfg(problem="least-squares", split="iid", workers=3, l2=0.1)
    p = problems.build(cfg)
    s = S.smoothness(p, 3)
    x = np.random.default_rng(2).normal(size=p.dim)
    hessians = [_fd_hessian(_shard_grad(p, p.finite_sum.split.group(m)), x) for m in range(3)]
    for m in range(3):
        assert s.workers[m] == pytest.approx(np.linalg.eigvalsh(hessians[m])[-1], rel=1e-6)
    # f = (1/M) sum_m f_m (the shards differ in size by one sample: not quite the mean over the data)
    assert s.L == pytest.approx(np.linalg.eigvalsh(np.mean(hessians, axis=0))[-1], rel=1e-6)


def test_logistic_shards_bound_the_hessian():
    cfg = _cfg(problem="logistic", split="label-skew:0.5", workers=4, l2=0.01)
    p = problems.build(cfg)
    s = S.smoothness(p, 4)
    n = p.finite_sum.n
    rng = np.random.default_rng(3)
    for m in range(4):
        rows = p.finite_sum.split.group(m)
        A = np.asarray(p.A[:n], dtype=np.float64)[rows]
        sigma = np.linalg.svd(A, compute_uv=False)[0]
        assert s.workers[m] == pytest.approx(sigma**2 / (4 * rows.size) + 0.01, rel=1e-9)
        for _ in range(2):  # the bound holds where we look: the Hessian's top eigenvalue is at most L_m
            top = np.linalg.eigvalsh(_fd_hessian(_shard_grad(p, rows), rng.normal(size=p.dim) * 0.1))[-1]
            assert top <= s.workers[m] * (1 + 1e-6)
        # at w = 0 every phi'' is exactly 1/4: the bound is attained
        assert np.linalg.eigvalsh(_fd_hessian(_shard_grad(p, rows), np.zeros(p.dim)))[-1] == \
            pytest.approx(s.workers[m], rel=1e-5)


def test_problems_without_L_are_refused():
    p = problems.build(_cfg(problem="rosenbrock"))
    with pytest.raises(InputError, match="problem 'rosenbrock'"):
        S.smoothness(p, 2)


# ---------------------------------------------------------------------------------------------------------------------
# the option and its resolution


def test_the_option_takes_the_word():
    assert value(RECORD["lr"], "theory") == "theory"
    assert value(RECORD["lr"], " 0.5 ") == 0.5
    with pytest.raises(InputError, match="not a valid number or 'theory' .*did you mean 'theory'"):
        value(RECORD["lr"], "theroy")


def test_resolve_puts_the_step_in_lr_and_records_it():
    cfg = config.resolve({"problem": "quadratic", "method": "diana", "lr": "theory", "noise": "none", "dim": 4,
                          "kappa": 10.0, "workers": 2})
    omega = 1 / 8  # natural compression
    assert cfg.lr == pytest.approx(1 / ((1 + 6 * omega / 2) * 10.0))
    theory = config.lr_theory(cfg)
    rec = theory["record"]
    assert rec["rule"] == "diana" and rec["gamma"] == cfg.lr and theory["warnings"] == []
    assert {c["name"]: c["value"] for c in rec["constants"]} == pytest.approx(
        {"L_max": 10.0, "omega": omega, "M": 2, "alpha": 0.5})
    assert rec["line"].startswith("lr theory: DIANA, Gorbunov, Hanzely and Richtárik 2020, Corollary A.11")
    assert cfg.to_dict()["lr"] == cfg.lr  # the config records the number


def test_gd_and_compressed_gd_rules():
    cfg = config.resolve({"problem": "quadratic", "method": "sgd", "lr": "theory", "kappa": 40.0})
    assert cfg.lr == pytest.approx(1 / 40)
    assert "stochastic (--noise gaussian:1)" in config.lr_theory(cfg)["warnings"][0]
    cfg = config.resolve({"problem": "quadratic", "method": "randk", "compressor": "rand-k:2", "lr": "theory",
                          "noise": "none", "dim": 8, "kappa": 40.0, "workers": 1})
    assert cfg.lr == pytest.approx(1 / ((1 + (8 / 2 - 1)) * 40))  # omega = d/k - 1
    assert config.lr_theory(cfg)["warnings"] == []
    cfg = config.resolve({"problem": "quadratic", "method": "diana", "compressor": "identity", "lr": "theory",
                          "kappa": 40.0})  # DIANA with the identity is GD
    assert cfg.lr == pytest.approx(1 / 40) and config.lr_theory(cfg)["record"]["rule"] == "gd"


def test_vote_trap_takes_a_constant_step_with_theory():
    cfg = config.resolve({"problem": "vote-trap", "method": "diana", "lr": "theory"})
    assert cfg.lr_schedule == "constant"
    assert cfg.lr == pytest.approx(1 / ((1 + 6 * (1 / 8) / 3) * 6.0))  # L_max = lambda = 6


@pytest.mark.parametrize("options, message", [
    ({"method": "ef21"}, "method 'ef21' .*not yet checked against its paper's text; rules: sgd"),
    ({"method": "ef21-hb"}, "no theorem rule for method 'ef21-hb' .*server optimizer fedavgm:0.9"),
    ({"method": "ef21-bc"}, "no theorem rule for method 'ef21-bc' .*downlink compressor top-k"),
    ({"method": "signsgd"}, "no theorem rule for method 'signsgd'"),
    ({"method": "topk-ef"}, "no theorem rule for method 'topk-ef' .*error feedback ef"),
    ({"method": "qsgd"}, "with --workers 8: the compressed-GD theorem .* is for one worker"),
    ({"method": "diana", "grad_estimator": "diana:0.95"}, r"needs alpha <= 1/\(omega \+ 1\) = 0.8889"),
    ({"method": "sgd", "lr_schedule": "sqrt"}, "--lr-schedule sqrt: the theorems take a constant step"),
    ({"method": "sgd", "local_steps": 2}, "--local-steps 2"),
    ({"method": "sgd", "participation": 0.5}, "--participation 0.5: the theorems take every worker"),
    ({"method": "sgd", "byzantine": 1}, "--byzantine 1"),
    ({"method": "sgd", "server_lr": 2.0}, "--server-lr 2"),
    ({"method": "sgd", "problem": "rosenbrock"}, "problem 'rosenbrock': no global smoothness constant"),
])
def test_refusals_name_what_the_user_wrote(options, message):
    with pytest.raises(InputError, match=message):
        config.resolve({"problem": "quadratic", "lr": "theory", **options})


def test_marina_is_keyed_by_its_estimator():
    """MARINA's rule hooks up by the estimator's name (``--grad-estimator marina:P``) once the estimator exists and
    its rule is checked; until then nothing else changes."""
    assert S.RULES["marina"].key == "marina" and not S.RULES["marina"].checked
    cfg = replace(config.resolve({"problem": "quadratic", "method": "diana", "lr": 0.1}), grad_estimator="marina:0.1")
    with pytest.raises(InputError, match="MARINA's step-size condition .* not yet checked"):
        S.choose(cfg, 10)


def test_sweep_runs_carry_the_record(tmp_path):
    from signsim.sweep.spec import expand, load

    f = tmp_path / "s.toml"
    f.write_text('problem = "quadratic"\nmethod = "diana"\nnoise = "none"\niters = 3\n'
                 '[grid]\nlr = ["theory", 0.001]\nworkers = [2, 4]\n')
    tasks = expand(load(f))
    theory = [t for t in tasks if t.params["lr"] == "theory"]
    assert len(theory) == 2 and all(t.extra["lr_theory"]["record"]["rule"] == "diana" for t in theory)
    assert sorted(t.config["lr"] for t in theory) == pytest.approx(
        sorted(1 / ((1 + 6 * (1 / 8) / M) * 100.0) for M in (2, 4)))
    assert all("lr_theory" not in t.extra for t in tasks if t.params["lr"] == 0.001)


def test_bad_combinations_exit_2_with_one_line(cli):
    r = run_subprocess("run", "--problem", "quadratic", "--method", "ef21", "--lr", "theory", "--iters", "3", "-q")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err, r.err
    for args in (["--problem", "rosenbrock", "--method", "sgd", "--lr", "theory"],
                 ["--problem", "quadratic", "--method", "sgd", "--lr", "theroy"]):
        r = cli("run", *args, "--iters", "3", "-q")
        lines = r.err.strip().splitlines()
        assert r.code == 2 and len(lines) == 1 and "Traceback" not in r.err, (args, r.err)


# ---------------------------------------------------------------------------------------------------------------------
# runs


@pytest.mark.slow
def test_a_run_records_the_step_and_its_constants(cli, tmp_path):
    out = tmp_path / "r.json"
    r = cli("run", "--problem", "quadratic", "--method", "diana", "--lr", "theory", "--noise", "none", "--dim", "4",
            "--kappa", "10", "--workers", "2", "--iters", "5", "--out", out)
    assert r.code == 0, r.err
    import json

    doc = json.loads(out.read_text())
    assert doc["config"]["lr"] == pytest.approx(1 / ((1 + 6 * (1 / 8) / 2) * 10.0))
    assert doc["lr_theory"]["gamma"] == doc["config"]["lr"] and doc["lr_theory"]["rule"] == "diana"
    assert "lr theory: DIANA" in r.err and "L_max = 10" in r.err


@pytest.mark.slow
@pytest.mark.parametrize("method", ["diana", "sgd"])
def test_the_theory_step_converges_on_the_quadratic(method):
    import signsim

    res = signsim.run(problem="quadratic", method=method, lr="theory", noise="none", dim=10, kappa=20.0, workers=4,
                      iters=3000, eval_every=3000)
    doc = res.to_dict()
    assert doc["lr_theory"]["rule"] == ("diana" if method == "diana" else "gd")
    assert doc["final"]["loss"] < 1e-8 * doc["history"][0]["loss"]
