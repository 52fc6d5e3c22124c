"""A user's PyTorch model (``--model FILE.py``, signsim.torch; docs/theory.md §13).

The oracle that shares none of the model path's code is the built-in ``--problem mlp``: a torch network of the same
architecture and starting point, on the same prepared digits, with the minibatch rows drawn from the same workers'
streams, must give the same run to float rounding: history, bits, and the final x, with momentum, sampled clients,
local steps and a budget. Gradients are checked against finite differences of the model's loss, and every way a
model file can break its contract is one error line (exit 2).

Torch is an optional extra: without it these tests are skipped, except under ``SIGNSIM_REQUIRE_TORCH=1`` (.ci/run),
where a missing torch fails them.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import numpy as np
import pytest

if os.environ.get("SIGNSIM_REQUIRE_TORCH") == "1":
    import torch  # noqa: F401 - CI: a torch test is never skipped
else:
    torch = pytest.importorskip("torch")

from signsim.engine.driver import simulate  # noqa: E402
from signsim.engine.loop import HIST  # noqa: E402
from tests.conftest import make_engine  # noqa: E402

#: the model file docs/api.md shows (a file of the repository, not of the package)
EXAMPLE_MODEL = Path(__file__).resolve().parents[2] / "examples" / "digits_mlp.py"

# the digits MLP of ``--problem mlp`` (x = [W1 (H x p), b1, W2 (C x H), b2]), as a model file: same architecture,
# parameters set from the built-in problem's x0, the same prepared data (standardized, the same held-out rows)
MLP_FILE = """
import numpy as np
import torch
from torch import nn
from signsim.interface import config
from signsim.problems import build

_cfg = config.resolve(dict(problem="mlp", hidden={hidden}, workers={workers}, seed={seed}, split="{split}"))
_p = build(_cfg)
_n = int(_p.pi[1])

def model():
    net = nn.Sequential(nn.Linear(64, {hidden}), nn.ReLU(), nn.Linear({hidden}, 10)).double()
    with torch.no_grad():
        torch.nn.utils.vector_to_parameters(torch.from_numpy(_p.x0.copy()), net.parameters())
    return net

def loss(output, target):
    return nn.functional.cross_entropy(output, target)

def data():
    return _p.A[:_n], _p.b[:_n].astype(np.int64), _p.A[_n:], _p.b[_n:].astype(np.int64)
"""

SMALL_FILE = """
import numpy as np
import torch
from torch import nn

def model():
    return nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3))

def loss(output, target):
    return nn.functional.cross_entropy(output, target)

def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 5)).astype(np.float32)
    return X, (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 0)
"""


def write(tmp_path, text: str, name: str = "model.py") -> str:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return str(p)


def both(tmp_path, hidden=8, workers=4, seed=3, split="shared", model_gradients="vmap", **options):
    """(history, final x) of the built-in MLP and of the same network as a torch model file."""
    path = write(tmp_path, MLP_FILE.format(hidden=hidden, workers=workers, seed=seed, split=split))
    common = dict(workers=workers, seed=seed, split=split, **options)
    out = []
    for problem in (dict(problem="mlp", hidden=hidden), dict(model=path, model_gradients=model_gradients)):
        engine, *_ = make_engine(**problem, **common)
        r = simulate(engine)
        assert r.status in ("ok", "budget"), r.status
        out.append((r.history, r.x))
    return out


@pytest.mark.parametrize("options", [  # (the fast suite keeps two; the slow step runs all four)
    dict(method="sgd", iters=30, lr=0.1),
    pytest.param(dict(method="signum", iters=30, lr=0.01, batch_size=4), marks=pytest.mark.slow),
    dict(method="sgd", iters=12, lr=0.05, clients_per_round=2, local_steps=3, batch_size=5, split="iid"),
    pytest.param(dict(method="ef-signsgd", iters=200, lr=0.05, budget_mb=0.2, batch_size=3), marks=pytest.mark.slow),
    dict(method="sgd", iters=12, lr=0.05, clients_per_round=2, local_steps=3, batch_size=5, split="iid",
         model_gradients="grouped"),
], ids=["sgd", "signum", "rounds", "budget", "rounds-grouped"])
def test_model_file_runs_the_builtin_mlp(tmp_path, options):
    (h_mlp, x_mlp), (h_torch, x_torch) = both(tmp_path, **options)
    assert h_mlp.shape == h_torch.shape
    for c, name in enumerate(HIST):
        a, b = h_mlp[:, c], h_torch[:, c]
        if name == "distance" or np.all(np.isnan(a)):
            continue
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(x_torch, x_mlp, rtol=1e-9, atol=1e-12)
    assert h_mlp[-1, HIST.index("loss")] < h_mlp[0, HIST.index("loss")]  # the runs compared went somewhere


def test_model_moves_and_is_reproducible(tmp_path):
    path = write(tmp_path, SMALL_FILE)
    runs = []
    for _ in range(2):
        engine, problem, *_ = make_engine(model=path, method="signum", workers=5, iters=40, lr=0.01, batch_size=4,
                                          clients_per_round=3, seed=11)
        r = simulate(engine)
        runs.append((r.history, r.x, problem.x0))
    (h1, x1, x0), (h2, x2, _) = runs
    np.testing.assert_array_equal(h1, h2)
    np.testing.assert_array_equal(x1, x2)
    assert np.all(np.sign(x1 - x0) != 0)  # signum moves every coordinate by the step
    assert h1[-1, HIST.index("loss")] < h1[0, HIST.index("loss")]


def test_gradients_against_finite_differences(tmp_path):
    from signsim.interface import config
    from signsim.problems import build as build_problem

    path = write(tmp_path, SMALL_FILE.replace("np.float32", "np.float64").replace(
        "nn.Linear(4, 3))", "nn.Linear(4, 3)).double()").replace("nn.Linear(5, 4), ", "nn.Linear(5, 4).double(), "))
    p = build_problem(config.resolve(dict(model=path, workers=3, seed=2)))
    ext = p.external
    rng = np.random.default_rng(5)
    x = p.x0 + 0.1 * rng.standard_normal(p.dim)
    ext.evaluate(x)
    g = p.b.copy()
    eps = 1e-6
    fd = np.array([(p.loss_ref(x + eps * e) - p.loss_ref(x - eps * e)) / (2 * eps) for e in np.eye(p.dim)])
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    assert p.pf[0] == pytest.approx(p.loss_ref(x), rel=1e-12)
    # one worker's minibatch gradient = the mean of the per-sample gradients of the rows it drew
    gens = [np.random.default_rng(s) for s in (1, 2)]
    out = np.zeros((2, p.dim))
    ext.round(x, np.array([0, 1]), gens, 0.1, out)
    rows = ext.rows(np.array([0, 1]), [np.random.default_rng(s) for s in (1, 2)])
    for j in range(2):
        np.testing.assert_allclose(out[j], p.finite_sum.per_sample_grads(x, rows[0, j]).mean(axis=0), rtol=1e-10,
                                   atol=1e-12)


def test_cli_model_run(tmp_path, cli):
    path = write(tmp_path, SMALL_FILE)
    out = tmp_path / "r.json"
    r = cli("run", "--model", path, "--method", "signum", "--workers", "4", "--iters", "20", "--out", str(out),
            "--quiet")
    assert r.code == 0, r.err
    import json

    doc = json.loads(out.read_text())
    assert doc["config"]["problem"] == "model" and doc["config"]["model"] == path
    assert len(doc["problem"]["model_sha256"]) == 64 and doc["problem"]["parameters"] == 5 * 4 + 4 + 4 * 3 + 3
    assert doc["final"]["grad_calls"] == 20 * 4 and doc["final"]["test_acc"] is not None


BAD = {
    "no model": ("def loss(o, t):\n    return o.sum()\ndef data():\n    return [[1.0]], [0]\n", "defines no model()"),
    "loss arity": (SMALL_FILE.replace("def loss(output, target):", "def loss(output):"), "must take 2 arguments"),
    "raises on load": ("import sys\nsys.exit(0)\n", "failed to load: SystemExit"),
    "not a module": (SMALL_FILE.replace("return nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3))",
                                        "return 3"), "must return a torch.nn.Module"),
    "mixed dtypes": (SMALL_FILE.replace(
                           "return nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3))",
                           "m = nn.Linear(5, 3)\n    m.weight = nn.Parameter(torch.ones(3, 5, dtype=torch.float64))\n"
                           "    return m"), "share one floating-point dtype"),
    "rows differ": (SMALL_FILE.replace("return X, (X[:, 0] > 0)", "return X[:10], (X[:, 0] > 0)"), "has 10 rows"),
    "nan data": (SMALL_FILE.replace("return X, (", "X[3, 2] = np.nan\n    return X, ("), "NaN or infinite"),
    "vector loss": (SMALL_FILE.replace("return nn.functional.cross_entropy(output, target)",
                                       "return nn.functional.cross_entropy(output, target, reduction='none')"),
                    "must return a scalar tensor"),
    "data raises": (SMALL_FILE.replace("rng = np.random.default_rng(0)", "1 / 0"), "data() raised ZeroDivisionError"),
    "wrong data": (SMALL_FILE.replace("return X, (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 0)", "return X"),
                   "data() must return (X, y)"),
    # a layer that updates running statistics in place: named, with what to write instead
    "batch norm": (SMALL_FILE.replace("nn.Tanh()", "nn.BatchNorm1d(4)"),
                   "layer 1 (BatchNorm1d) keeps running statistics that every training step updates in place"),
    "instance norm tracking": (SMALL_FILE.replace("nn.Linear(5, 4), nn.Tanh()",
                                                  "nn.Linear(5, 4), nn.Unflatten(1, (1, 4)), "
                                                  "nn.InstanceNorm1d(1, track_running_stats=True), nn.Flatten()"),
                               "layer 2 (InstanceNorm1d) keeps running statistics"),
    # torch's own refusal of an in-place update in a transformed function: said once, its first sentence
    "in-place update": (SMALL_FILE.replace(
        "return nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3))",
        "class M(nn.Module):\n        def __init__(self):\n            super().__init__()\n"
        "            self.l = nn.Linear(5, 3)\n            self.register_buffer('seen', torch.zeros(()))\n"
        "        def forward(self, x):\n            self.seen.add_(1)\n            return self.l(x)\n    return M()"),
        "the loss cannot be differentiated per worker with torch.func (the workers' gradients failed: RuntimeError: "
        "During a grad"),
    "test labels out of range": (SMALL_FILE.replace("return X, (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 0)",
                                 "y = (X[:, 0] > 0).astype(np.int64)\n    return X[:40], y[:40], X[40:], y[40:] + 5"),
                                 "the evaluation on the whole data set (loss, gradient, accuracy) failed: IndexError"),
    "loss raises on the whole set": (SMALL_FILE.replace("def loss(output, target):",
                                                        "def loss(output, target):\n    assert len(output) < 40"),
                                     "the evaluation on the whole data set (loss, gradient, accuracy) failed"),
    "tuple output": (SMALL_FILE.replace("return nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3))",
                                        "class M(nn.Module):\n        def __init__(self):\n"
                                        "            super().__init__()\n            self.l = nn.Linear(5, 3)\n"
                                        "        def forward(self, x):\n"
                                        "            return self.l(x), 0\n    return M()"),
                     "the model's forward must return one tensor"),
    "shape mismatch": (SMALL_FILE.replace("nn.Linear(5, 4), nn.Tanh()", "nn.Linear(7, 4), nn.Tanh()"),
                       "model and loss fail on a minibatch"),
    # issue 50: a forward pass that ends Python exited 0 having done nothing
    "forward exits": (SMALL_FILE.replace("return nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3))",
                                         "class M(nn.Module):\n        def __init__(self):\n"
                                         "            super().__init__()\n            self.l = nn.Linear(5, 3)\n"
                                         "        def forward(self, x):\n"
                                         "            import sys\n            sys.exit(0)\n    return M()"),
                      "model and loss fail on a minibatch of data(): SystemExit"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_model_files_are_one_line(tmp_path, cli, case):
    text, expected = BAD[case]
    path = write(tmp_path, text, f"m_{abs(hash(case))}.py")
    r = cli("run", "--model", path, "--iters", "2", "--workers", "2")
    assert r.code == 2, (r.code, r.err)
    assert len(r.err.strip().splitlines()) == 1, r.err
    assert path in r.err and expected in r.err, r.err


@pytest.mark.parametrize("given, expected", [
    (["--model", "nowhere.py"], "no such file"),
    (["--model", "{dir}"], "not a regular file"),
    (["--problem", "model"], "give the model file with --model"),
    (["--model", "{small}", "--monotone"], "--monotone: not with --model"),
    (["--model", "{small}", "--hidden", "4"], "--hidden does not apply to problem 'model'"),
    (["--model", "{small}", "--noise", "gaussian:1"], "--noise does not apply to problem 'model'"),
])
def test_model_option_errors(tmp_path, cli, given, expected):
    small = write(tmp_path, SMALL_FILE)
    args = [a.format(dir=tmp_path, small=small) for a in given]
    r = cli("run", *args, "--iters", "2", "--workers", "2")
    assert r.code == 2 and expected in r.err and len(r.err.strip().splitlines()) == 1, r.err


def test_docs_show_the_example_model_file_as_it_is():
    import re

    (block,) = [b for b in re.findall(r"```python\n(.*?)```", Path("docs/api.md").read_text(), flags=re.S)
                if b.startswith("# examples/digits_mlp.py")]
    code = EXAMPLE_MODEL.read_text().split('"""', 2)[2].lstrip("\n")
    assert block.split("\n", 1)[1] == code


def test_the_example_model_runs_from_the_command_line(cli):
    r = cli("run", "--model", EXAMPLE_MODEL, "--method", "signum", "--workers", "4", "--iters", "30", "--lr", "0.001",
            "--json")
    assert r.code == 0, r.err
    doc = r.json()
    assert doc["problem"]["parameters"] == 64 * 32 + 32 + 32 * 10 + 10
    assert doc["final"]["loss"] < doc["history"][0]["loss"] and doc["final"]["test_acc"] > 0.3


@pytest.mark.filterwarnings("ignore:ssdm on")  # (the runs warn that SSDM's proof needs unbiased workers: expected)
def test_heterogeneity_of_a_model_equals_the_builtin_mlps(tmp_path):
    """zeta^2 and each worker's bias at x0 under a label-skewed split: the model's per-sample gradients (torch.func)
    against the built-in MLP's compiled kernels (docs/theory.md §9)."""
    import signsim

    split = "label-skew:0.5"
    path = write(tmp_path, MLP_FILE.format(hidden=6, workers=5, seed=4, split=split))
    docs = [signsim.run(**problem, workers=5, seed=4, split=split, iters=1, method="ssdm").to_dict()
            for problem in (dict(problem="mlp", hidden=6), dict(model=path))]
    h_mlp, h_torch = (d["heterogeneity"] for d in docs)
    assert h_mlp["zeta_sq"] > 0.01 and not h_mlp["unbiased"]
    assert h_torch["zeta_sq"] == pytest.approx(h_mlp["zeta_sq"], rel=1e-9)
    np.testing.assert_allclose(h_torch["bias"], h_mlp["bias"], rtol=1e-9)


@pytest.mark.slow
def test_a_sweep_of_a_model_file_with_two_processes(tmp_path):
    """A sweep key ``model``: two local worker processes load the file, and each run equals the same run alone."""
    import json

    import signsim

    path = write(tmp_path, SMALL_FILE)
    sweep = tmp_path / "s.toml"
    sweep.write_text(f'model = "{path}"\nworkers = 3\niters = 15\nlr = 0.01\n[grid]\nmethod = ["signum", "sgd"]\n')
    signsim.sweep(sweep, out=tmp_path / "o", jobs=2)
    runs = {(d := json.loads(f.read_text()))["config"]["method"]: d for f in (tmp_path / "o" / "runs").glob("*.json")}
    assert set(runs) == {"signum", "sgd"}
    for method, doc in runs.items():
        alone = signsim.run(model=path, workers=3, iters=15, lr=0.01, method=method, seed=doc["config"]["seed"])
        alone = alone.to_dict()
        assert doc["history"] == alone["history"] and doc["problem"]["model_sha256"] == alone["problem"]["model_sha256"]


def test_dropout_draws_do_not_depend_on_what_ran_before(tmp_path):
    """Each run keeps its own state of torch's generator: a run after another in the same process (a [[compare]],
    a sweep worker) draws the dropout masks it draws alone; a different seed draws others."""
    import signsim

    path = write(tmp_path, SMALL_FILE.replace("nn.Tanh(),", "nn.Tanh(), nn.Dropout(0.5),"))
    options = dict(model=path, method="sgd", workers=3, iters=10, lr=0.1, eval_every=1)
    alone = signsim.run(**options, seed=1).history["loss"]
    signsim.run(**options, seed=2)
    after = signsim.run(**options, seed=1).history["loss"]
    np.testing.assert_array_equal(after, alone)
    assert not np.array_equal(signsim.run(**options, seed=2).history["loss"], alone)


def test_tracked_spb_and_diversity_of_a_model_equal_the_builtin_mlps(tmp_path):
    """--track-spb (Monte Carlo over minibatches of 4) and --track-diversity (exact, per-sample gradients) along a
    run: the model's batched torch oracle against the built-in MLP's compiled kernels, the same draws from the same
    diagnostic streams (docs/theory.md §1, §6, §13)."""
    import signsim

    path = write(tmp_path, MLP_FILE.format(hidden=5, workers=3, seed=2, split="shared"))
    common = dict(workers=3, seed=2, split="shared", iters=20, lr=0.01, method="signum", batch_size=4,
                  track_spb=10, track_diversity=10)
    tracks = [signsim.run(**problem, **common).to_dict()["tracks"]
              for problem in (dict(problem="mlp", hidden=5), dict(model=path))]
    (spb_mlp, spb_torch), (div_mlp, div_torch) = ([t[k] for t in tracks] for k in ("spb", "diversity"))
    assert len(spb_mlp) == len(spb_torch) == 3 and spb_mlp[1]["rho_norm"] > 0
    for a, b in zip(spb_mlp, spb_torch, strict=True):
        assert b["verdict"] == a["verdict"] and b["method_of_estimate"] == a["method_of_estimate"] == "monte-carlo"
        for key in ("spb_fraction", "rho_min", "rho_norm", "rho_M_norm", "l1_norm", "l2_norm"):
            assert b[key] == pytest.approx(a[key], rel=1e-6, abs=1e-9), key
    for a, b in zip(div_mlp, div_torch, strict=True):
        for key in ("B_S", "delta_S", "B_simple"):
            assert b[key] == pytest.approx(a[key], rel=1e-8), key


def test_check_spb_and_diversity_of_a_model_equal_the_builtin_mlps(tmp_path):
    """check-spb (Monte Carlo, at run:K) and diversity (exact, at the start) with --model: the same numbers as
    --problem mlp's compiled kernels for the same network; what is not implemented for a model is one line."""
    import signsim
    from signsim.errors import InputError

    path = write(tmp_path, MLP_FILE.format(hidden=5, workers=4, seed=1, split="shared"))
    common = dict(workers=4, seed=1, split="shared", batch_size=4, samples=300, at="run:15", lr=0.01, method="signum")
    spb = [signsim.check_spb(**p, **common).to_dict() for p in (dict(problem="mlp", hidden=5), dict(model=path))]
    assert spb[0]["method_of_estimate"] == spb[1]["method_of_estimate"] == "monte-carlo"
    assert spb[1]["verdict"] == spb[0]["verdict"] and spb[1]["n_violated"] == spb[0]["n_violated"]
    for key in ("rho", "grad"):  # (null where a coordinate's gradient is 0)
        a, b = (np.array(d[key], dtype=float) for d in spb)
        assert np.isfinite(a).sum() > 100
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-14, equal_nan=True)
    div = [signsim.diversity(**p, workers=4, seed=1, split="shared").to_dict()
           for p in (dict(problem="mlp", hidden=5), dict(model=path))]
    assert div[1]["method_of_estimate"] == "exact" and div[1]["B_S"] == pytest.approx(div[0]["B_S"], rel=1e-9)
    with pytest.raises(InputError, match="two-batch"):
        signsim.diversity(model=path, estimator="two-batch")
    with pytest.raises(InputError, match="--local-steps 2"):
        signsim.check_spb(model=path, local_steps=2, workers=2)


def test_nan_minibatch_gradient_frozen_layers_and_multilabel_targets(tmp_path, cli):
    """A minibatch gradient that turns NaN mid-run stops a sign method with one line (a sign would hide it); frozen
    parameters are not part of x and stay put; integer targets with columns are multi-label, not a classifier."""
    nan = write(tmp_path, SMALL_FILE.replace("def loss(output, target):", "N = [0]\n\ndef loss(output, target):\n"
                                             "    N[0] += 1\n    if N[0] > 6 and output.shape[0] == 4:\n"
                                             "        return float('nan') * nn.functional.cross_entropy(output,"
                                             " target)"),
                "nan.py")
    r = cli("run", "--model", nan, "--method", "signum", "--workers", "3", "--iters", "20", "--batch-size", "4")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and "minibatch gradient is not finite" in r.err, r.err
    frozen = write(tmp_path, SMALL_FILE.replace("return nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3))",
                                                "m = nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3))\n"
                                                "    m[0].requires_grad_(False)\n    return m"), "frozen.py")
    engine, problem, *_ = make_engine(model=frozen, method="signum", workers=3, iters=5)
    assert problem.dim == 4 * 3 + 3
    simulate(engine)
    assert np.all(engine.x != problem.x0)
    multi = write(tmp_path, SMALL_FILE.replace("nn.Linear(4, 3))", "nn.Linear(4, 2))").replace(
        "return nn.functional.cross_entropy(output, target)",
        "return nn.functional.binary_cross_entropy_with_logits(output, target.float())").replace(
        "return X, (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 0)", "return X, (X[:, :2] > 0).astype(np.int64)"),
        "multi.py")
    r = cli("run", "--model", multi, "--workers", "3", "--iters", "5", "--json")
    assert r.code == 0, r.err
    final = r.json()["final"]  # (no accuracy for a model that is not a classifier)
    assert final.get("test_acc") is None and final.get("train_acc") is None and np.isfinite(final["loss"])


# --- your model as objects of this process: signsim.torch.Model ---------------------------------------------------


def _small_module(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("small_model_for_test", write(tmp_path, SMALL_FILE))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_model_given_as_objects_runs_as_its_file_does(tmp_path):
    import signsim
    from signsim.torch import Model

    mod = _small_module(tmp_path)
    common = dict(method="signum", workers=5, iters=30, lr=0.01, batch_size=4, clients_per_round=3, seed=11)
    from_file = signsim.run(model=write(tmp_path, SMALL_FILE, "same.py"), **common).to_dict()
    X, y = mod.data()
    as_objects = signsim.run(model=Model(mod.model, mod.loss, (X, y), name="small"), **common).to_dict()
    assert as_objects["history"] == from_file["history"]  # model() made under the same seed, the same rows
    assert as_objects["config"]["model"].startswith("python:small:")
    # a Dataset of (x, y) pairs and a TensorDataset give the arrays' run
    t = torch.utils.data.TensorDataset(torch.from_numpy(X), torch.from_numpy(y))

    class Pairs(torch.utils.data.Dataset):
        def __len__(self):
            return len(X)

        def __getitem__(self, i):
            return torch.from_numpy(X[i]), int(y[i])

    for data in (t, Pairs(), lambda: (X, y)):
        again = signsim.run(model=Model(mod.model, mod.loss, data, name="small"), **common).to_dict()
        assert again["history"] == from_file["history"], type(data).__name__


def test_a_module_given_itself_is_copied_for_each_run(tmp_path):
    import signsim
    from signsim.torch import Model

    mod = _small_module(tmp_path)
    torch.manual_seed(5)
    net = mod.model()
    before = [p.detach().clone() for p in net.parameters()]
    m = Model(net, mod.loss, mod.data, name="net")
    runs = [signsim.run(model=m, method="sgd", workers=3, iters=20, lr=0.1).to_dict() for _ in range(2)]
    assert runs[0]["history"] == runs[1]["history"] and runs[0]["final"]["loss"] < runs[0]["history"][0]["loss"]
    assert runs[0]["config"]["model"] == runs[1]["config"]["model"]  # the same object: one name
    assert all(torch.equal(a, b) for a, b in zip(before, net.parameters(), strict=True))  # the user's net untouched


def test_bad_model_objects_are_one_line(cli):
    import signsim
    from signsim.errors import InputError

    with pytest.raises(InputError, match="model: a model file's name or a signsim.torch.Model, got int"):
        signsim.run(model=5, iters=2)
    r = cli("run", "--model", "python:mine:1", "--iters", "2")
    assert r.code == 2 and "--model python:mine:1: no model of that name was given in this Python process" in r.err
    assert len(r.err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", [("run", "--iters", "3"), ("check-spb", "--samples", "20"),
                                     ("diversity",)])
def test_a_models_print_goes_to_stderr_and_json_stays_a_document(tmp_path, cli, command):
    import json

    path = write(tmp_path, SMALL_FILE.replace("def loss(output, target):",
                                              "def loss(output, target):\n    print('from the model')"))
    r = cli(command[0], "--model", path, "--workers", "2", *command[1:], "--json")
    assert r.code in (0, 1), r
    doc = json.loads(r.out)
    assert isinstance(doc, dict) and "from the model" in r.err


def test_a_call_leaves_the_callers_torch_thread_count_as_it_found_it(tmp_path):
    """Whatever changes the count during a call (Numba's threading layer shares OpenMP's with torch; here the model
    file itself), the call ends with the caller's."""
    import signsim

    path = write(tmp_path, SMALL_FILE.replace("def model():", "def model():\n    torch.set_num_threads(2)"))
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        signsim.run(model=path, workers=2, iters=2)
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_a_batch_norm_without_running_statistics_normalizes_each_workers_minibatch_by_its_own(tmp_path):
    """vmap's gradients of a model with ``BatchNorm1d(track_running_stats=False)``: worker j's is autograd's gradient
    of j's minibatch through a copy of the model alone (its batch statistics, not the round's), H = 1 and the first
    of H = 2 steps; the gradient of all workers' rows in one batch differs (so the check can tell them apart)."""
    import copy

    from signsim.interface import config
    from signsim.problems import build as build_problem

    path = write(tmp_path, SMALL_FILE.replace("np.float32", "np.float64").replace(
        "nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3))",
        "nn.Linear(5, 4), nn.BatchNorm1d(4, track_running_stats=False), nn.Tanh(), nn.Linear(4, 3)).double()"))
    p = build_problem(config.resolve(dict(model=path, workers=3, seed=1, test_fraction=0.0)))
    oracle = p.external.oracle
    x = p.x0 + 0.1 * np.random.default_rng(3).standard_normal(p.dim)

    def own(rows):
        net = copy.deepcopy(oracle.module).train()
        torch.nn.utils.vector_to_parameters(torch.from_numpy(x.copy()), net.parameters())
        r = torch.as_tensor(rows)
        oracle.loss_fn(net(oracle.X_train[r]), oracle.y_train[r]).backward()
        return torch.cat([q.grad.reshape(-1) for q in net.parameters()]).numpy()

    rows = np.arange(24, dtype=np.int64).reshape(1, 3, 8)
    for H in (1, 2):
        g = np.zeros((3, p.dim))
        oracle.worker_gradients(x, np.concatenate([rows] * H), 0.0, g)  # lr 0: each step's gradient at x
        for j in range(3):
            np.testing.assert_allclose(g[j], H * own(rows[0, j]), rtol=1e-10, atol=1e-12)
    assert not np.allclose(g.mean(axis=0) / 2, own(rows.reshape(-1)), rtol=1e-3)


def test_a_model_that_keeps_its_batch_norm_in_evaluation_mode_runs(tmp_path, cli):
    """Fine-tuning with frozen batch norm (``train()`` overridden to keep the layer in evaluation mode) updates no
    statistics: it runs, where a batch norm that trains is one line naming it (the BAD cases above)."""
    frozen = SMALL_FILE.replace(
        "return nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3))",
        "class M(nn.Sequential):\n        def train(self, mode=True):\n            super().train(mode)\n"
        "            self[1].eval()\n            return self\n"
        "    return M(nn.Linear(5, 4), nn.BatchNorm1d(4), nn.Tanh(), nn.Linear(4, 3))")
    r = cli("run", "--model", write(tmp_path, frozen), "--workers", "2", "--iters", "3", "--json", "--quiet")
    assert r.code == 0, r.err
    assert r.json()["status"] == "ok"

def test_the_shards_mean_gradients_in_one_batched_pass_are_each_shards_own(tmp_path):
    """``ModelProblem.group_means`` (the heterogeneity at x0 of a run with a split, batched over the shards of one
    size): each shard's mean gradient, checked against the mean of that shard's per-sample gradients and against
    central differences of its mean loss; shards of unequal sizes (60 rows over 7 workers)."""
    from signsim.interface import config
    from signsim.problems import build as build_problem

    path = write(tmp_path, SMALL_FILE.replace("np.float32", "np.float64").replace(
        "nn.Linear(4, 3))", "nn.Linear(4, 3)).double()").replace("nn.Linear(5, 4), ", "nn.Linear(5, 4).double(), "))
    p = build_problem(config.resolve(dict(model=path, workers=7, seed=2, split="shards:2")))
    split = p.finite_sum.split
    groups = [split.group(m) for m in range(split.groups)]
    assert len({len(g) for g in groups}) > 1  # unequal sizes: several batched calls
    x = p.x0 + 0.1 * np.random.default_rng(5).standard_normal(p.dim)
    means = p.external.group_means(x, groups)
    for m, g in enumerate(groups):
        np.testing.assert_allclose(means[m], p.finite_sum.per_sample_grads(x, g).mean(axis=0), rtol=1e-10,
                                   atol=1e-13)
    oracle = p.external.oracle
    rows = groups[3]
    X, y = oracle.X_train[torch.as_tensor(rows)], oracle.y_train[torch.as_tensor(rows)]

    def shard_loss(v):
        with torch.no_grad():
            return float(oracle.loss_fn(oracle._output(torch.from_numpy(v), X), y))

    eps = 1e-6
    fd = np.array([(shard_loss(x + eps * e) - shard_loss(x - eps * e)) / (2 * eps) for e in np.eye(p.dim)])
    np.testing.assert_allclose(means[3], fd, rtol=1e-6, atol=1e-8)


def test_a_models_rounds_run_in_the_main_thread_only_while_rounds_and_evaluations_are_short(tmp_path, monkeypatch):
    """After the first chunk (which loads the loop in a helper thread), a model's chunks run in the main thread,
    a signal held to the end of the piece of the round in progress, unless a piece's latest time (here an
    evaluation of the history) was HERE_SECONDS or more there, HELPER_SLOWDOWN times that in a helper thread (a
    signal would then wait for it), or the process's SIGINT handler is neither signsim's own nor Python's default
    (a sweep's pool worker); with SIGINT ignored (a job a non-interactive shell started with &) there is nothing to
    hold."""
    import time

    from signsim.engine import driver
    from signsim.interface import interrupts
    from signsim.problems.model import Gradients

    seen = []
    advance = driver._advance
    monkeypatch.setattr(driver, "_advance", lambda engine, step, here=False: (seen.append(here),
                                                                              advance(engine, step, here))[1])
    path = write(tmp_path, SMALL_FILE)

    def heres(install=True, iters=40):
        seen.clear()
        engine, *_ = make_engine(model=path, workers=3, iters=iters, eval_every=5)
        previous = interrupts.install() if install else None
        try:
            simulate(engine, hooks=[(5, lambda k, x: None)])  # (chunks end at every evaluation)
        finally:
            if install:
                interrupts.restore(previous)
        return list(seen)

    quick = heres()
    assert quick[0] is False and quick[-1] is True, quick  # (the first chunk's round loads the loop: long)
    import signal

    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert heres(install=False)[-1] is True  # Python's default handler (the API in a script): held too
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # and given back
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a job a script or a non-interactive shell started with &
    try:
        assert heres(install=False)[-1] is True
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # still ignored
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    monkeypatch.setattr(driver, "can_hold", lambda: False)
    assert not any(heres())  # another SIGINT handler (a pool worker's, a notebook's): the helper thread throughout
    monkeypatch.undo()
    monkeypatch.setattr(driver, "_advance", lambda engine, step, here=False: (seen.append(here),
                                                                              advance(engine, step, here))[1])
    evaluate = Gradients.evaluate
    monkeypatch.setattr(driver, "HERE_SECONDS", 0.1)  # (a round of this model: about a millisecond)
    slow = driver.HERE_SECONDS * driver.HELPER_SLOWDOWN
    monkeypatch.setattr(Gradients, "evaluate", lambda self, x: (time.sleep(slow), evaluate(self, x)))
    assert not any(heres(iters=20))  # a slow evaluation: the helper thread throughout
    import threading

    calls = {"main": 0}

    def sometimes(self, x):  # slow at the second evaluation in the main thread only: back to it after one chunk
        if threading.current_thread() is threading.main_thread():
            calls["main"] += 1
            time.sleep(driver.HERE_SECONDS if calls["main"] == 2 else 0.0)
        evaluate(self, x)

    monkeypatch.setattr(Gradients, "evaluate", sometimes)
    seen_here = heres()
    after = "".join("T" if h else "F" for h in seen_here[seen_here.index(True):])
    assert after.strip("T").strip("F") == "" and "F" in after and after.endswith("T"), seen_here  # (one stretch)


@pytest.mark.parametrize("local_steps, gradients, name", [(2, "grouped", "SIGINT"), (2, "vmap", "SIGTERM"),
                                                          (1, "grouped", "SIGINT")])
def test_a_signal_during_a_rounds_gradient_pass_drops_that_round_and_keeps_the_rounds_before(
        tmp_path, monkeypatch, local_steps, gradients, name):
    """A real signal that arrives while the main thread computes a model's round's first gradient pass stops the run
    at that pass's end (``Engine.checkpoint``, between local steps and after the round's passes): the round is
    dropped before its loop call, and the results are those of the rounds before it, as a run of that many rounds
    gives them (x bit for bit, the last row); SIGTERM as SIGINT."""
    import signal
    import threading

    from signsim.interface import interrupts
    from signsim.torch.oracle import ModelOracle

    path = write(tmp_path, SMALL_FILE)
    opts = dict(model=path, workers=3, local_steps=local_steps, batch_size=4, iters=40, eval_every=5, method="sgd",
                lr=0.05, model_gradients=gradients)
    engine, *_ = make_engine(**opts)
    passes, hits = ModelOracle.worker_gradients, []

    def signalled(self, x, rows, lr, out, checkpoint=None):
        if engine.k == 12 and not hits and threading.current_thread() is threading.main_thread():
            hits.append(engine.k)
            os.kill(os.getpid(), getattr(signal, name))  # (its handler runs here, in the main thread, and holds it)
        return passes(self, x, rows, lr, out, checkpoint)

    monkeypatch.setattr(ModelOracle, "worker_gradients", signalled)
    previous = interrupts.install()
    try:
        r = simulate(engine, hooks=[(5, lambda k, x: None)])
    finally:
        interrupts.restore(previous)
    assert hits == [12] and r.status == "interrupted" and r.iters_done == 12, (hits, r.status, r.iters_done)
    assert interrupts.received() == getattr(signal, name)
    monkeypatch.undo()
    ref = simulate(make_engine(**{**opts, "iters": 12})[0])
    np.testing.assert_array_equal(r.x, ref.x)
    np.testing.assert_array_equal(r.history[-1], ref.history[-1])


def test_the_engines_checkpoint_passes_through_the_guard_of_the_users_code(tmp_path):
    """``RoundAbandoned``, raised by the checkpoint between two local steps, reaches the engine as itself: the guard
    that turns the user's model's errors into one line (``oracle.guarded``) does not catch it."""
    from signsim.engine.driver import RoundAbandoned

    engine, *_ = make_engine(model=write(tmp_path, SMALL_FILE), workers=3, local_steps=2, batch_size=4, iters=5)
    oracle = engine.external.oracle

    def abandon():
        raise RoundAbandoned

    rows = np.zeros((2, 3, 4), dtype=np.int64)
    with pytest.raises(RoundAbandoned):
        oracle.worker_gradients(engine.x, rows, 0.05, np.zeros((3, engine.x.size)), abandon)


def test_with_nothing_held_out_the_training_rows_are_the_datas_whatever_its_memory_order(tmp_path):
    """--test-fraction 0 keeps the data's rows as given (no copy of them): a run on a column-major copy of the data
    gives the run on the row-major data bit for bit, with no test rows."""
    runs = []
    for order in ("C", "F"):
        path = write(tmp_path, SMALL_FILE.replace("return X, (X[:, 0] > 0)", f"X = np.asarray(X, order='{order}')\n"
                                                  "    return X, (X[:, 0] > 0)"), f"model_{order}.py")
        engine, problem, *_ = make_engine(model=path, workers=3, iters=20, batch_size=4, test_fraction=0.0)
        assert engine.external.oracle.X_train.is_contiguous() and problem.extra_facts["n_test"] == 0
        r = simulate(engine)
        runs.append((r.history, r.x))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_the_data_check_finds_every_non_finite_value_whatever_the_dtype(dtype):
    """``oracle._all_finite`` (NumPy's check, torch's for bfloat16) against ``torch.isfinite``, on contiguous and
    strided tensors, one bad value anywhere."""
    from signsim.torch.oracle import _all_finite

    dt = getattr(torch, dtype)
    base = torch.linspace(-3, 3, 60, dtype=torch.float64).reshape(6, 10).to(dt)
    cases = [base, base.t(), base[:, ::3]]
    for i, v in enumerate((float("nan"), float("inf"), -float("inf"))):
        bad = base.clone()
        bad[(2 * i + 1) % 6, (3 * i + 2) % 10] = v
        cases += [bad, bad.t(), bad[:, 2::3]]
    expected = [True] * 3 + [False] * 9  # (each strided view keeps the bad value's column)
    assert [_all_finite(t) for t in cases] == expected
    assert [bool(torch.isfinite(t).all()) for t in cases] == expected
