"""Every worker's gradient from one forward and one backward pass (``--model-gradients grouped``,
``signsim.torch.grouped``; docs/theory.md §13.2).

The oracle shares none of the grouped path's code: each worker's own gradient by ``torch.autograd.grad`` of the loss
of the model itself (``torch.func.functional_call``) on that worker's rows at that worker's parameters, one worker
at a time, in float64, so that the two agree to rounding. Models that cannot be grouped are refused (``grouped``) or
left to vmap (``auto``), never run wrong; a loss that is not a mean over its rows is summed per worker.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

if os.environ.get("SIGNSIM_REQUIRE_TORCH") == "1":
    import torch
else:
    torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402

from signsim.errors import InputError  # noqa: E402
from signsim.torch.oracle import ModelOracle  # noqa: E402


class Custom(nn.Module):
    """A forward of its own: functional calls, a view by the batch's size, a frozen layer, a layer without bias."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, stride=2, padding=1, dilation=1, bias=False)
        self.frozen = nn.Linear(12, 12)
        self.frozen.requires_grad_(False)
        self.head = nn.Linear(12, 4)

    def forward(self, x):
        h = torch.tanh(self.conv(x))
        h = h.view(h.size(0), -1)
        return self.head(torch.relu(self.frozen(h)) + 0.5 * h)


class HalfFrozen(nn.Module):
    """Layers with one of their two parameters frozen (the other each worker's own), a ``padding="same"``
    convolution, and a layer called with a keyword argument."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(2, 3, 3, padding="same")
        self.conv.bias.requires_grad_(False)
        self.mid = nn.Linear(3 * 5, 6)
        self.mid.weight.requires_grad_(False)
        self.head = nn.Linear(6, 3)

    def forward(self, x):
        h = torch.tanh(self.conv(x)).flatten(1)
        return self.head(input=torch.tanh(self.mid(h)))


#: (name, model maker, the shape of one sample): every kind of grouped layer, and layers run as they are
MODELS = {
    "mlp": (lambda: nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3)), (5,)),
    "one-linear": (lambda: nn.Linear(6, 3), (6,)),
    "cnn": (lambda: nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 6, 2, padding=1),
                                  nn.GELU(), nn.Flatten(), nn.Dropout(0.3), nn.Linear(6 * 4 * 4, 3)), (1, 8, 8)),
    "conv1d-groups": (lambda: nn.Sequential(nn.Conv1d(4, 6, 3, groups=2, dilation=2), nn.ELU(), nn.Flatten(),
                                            nn.Linear(6 * 5, 3)), (4, 9)),
    "conv3d": (lambda: nn.Sequential(nn.Conv3d(1, 2, 2), nn.Sigmoid(), nn.AdaptiveAvgPool3d(1), nn.Flatten(),
                                     nn.Linear(2, 3)), (1, 3, 3, 3)),
    "custom": (Custom, (2, 4, 4)),
    "half-frozen": (HalfFrozen, (2, 5)),
}


def oracle(name: str, gradients: str = "grouped", n: int = 40, loss=None, seed: int = 0) -> ModelOracle:
    make, shape = MODELS[name]
    torch.manual_seed(seed)
    module = make().double()
    g = torch.Generator().manual_seed(seed)
    X = torch.randn((n, *shape), generator=g, dtype=torch.float64)
    y = torch.randint(0, 3, (n,), generator=g)
    loss = loss or (lambda out, t: nn.functional.cross_entropy(out, t))
    return ModelOracle(module, loss, X, y, X[:4], y[:4], gradients=gradients)


def own_gradients(o: ModelOracle, Y: torch.Tensor, rows: np.ndarray) -> torch.Tensor:
    """Row j: worker j's gradient at Y[j] on its rows, by autograd through the model itself, one worker at a time."""
    out = []
    for j in range(Y.shape[0]):
        p = Y[j].clone().requires_grad_(True)
        r = torch.from_numpy(rows[j])
        part = o.loss_fn(o._output(p, o.X_train[r]), o.y_train[r])
        out.append(torch.autograd.grad(part, p)[0])
    return torch.stack(out)


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("S, tau", [(1, 1), (3, 5), (6, 2)])
def test_grouped_gradients_are_each_workers_own_at_its_own_parameters(name, S, tau):
    o = oracle(name)
    assert o.grouped is not None
    rng = np.random.default_rng(S * 10 + tau)
    rows = rng.integers(0, o.n, (S, tau))
    Y = o.flat().unsqueeze(0) + 0.3 * torch.from_numpy(rng.standard_normal((S, o.dim)))  # a different x per worker
    o.module.eval()  # (dropout off: the oracle draws no mask)
    got = o.grouped.gradients(Y, o.X_train[torch.from_numpy(rows.reshape(-1))],
                              o.y_train[torch.from_numpy(rows.reshape(-1))])
    want = own_gradients(o, Y, rows)
    assert got.shape == (S, o.dim)
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)
    assert float(want.abs().max()) > 1e-3  # the gradients compared are not all zero


@pytest.mark.parametrize("name", ["mlp", "conv1d-groups", "custom"])
@pytest.mark.parametrize("H", [1, 4])
def test_a_rounds_pseudo_gradients_equal_the_vmap_paths_to_rounding(name, H):
    """``worker_gradients`` with local steps: the sum of each worker's H steps' gradients, grouped and vmap."""
    a, b = oracle(name, "vmap"), oracle(name, "grouped")
    assert a.grouped is None and b.grouped is not None
    rows = np.random.default_rng(H).integers(0, a.n, (H, 5, 3))
    x = a.flat().numpy().copy()
    ga, gb = np.zeros((7, a.dim)), np.zeros((7, a.dim))
    a.worker_gradients(x, rows, 0.05, ga)
    b.worker_gradients(x, rows, 0.05, gb)
    np.testing.assert_allclose(gb, ga, rtol=1e-10, atol=1e-12)
    assert not np.any(gb[5:]) and np.abs(gb[:5]).max() > 1e-3  # rows past S untouched, the rest moved


def test_sample_and_group_gradients_equal_the_vmap_paths():
    a, b = oracle("mlp", "vmap"), oracle("mlp", "grouped")
    x = a.flat().numpy().copy()
    rows = np.arange(12)
    np.testing.assert_allclose(b.sample_gradients(x, rows), a.sample_gradients(x, rows), rtol=1e-10, atol=1e-13)
    groups = rows.reshape(3, 4)
    np.testing.assert_allclose(b.group_gradients(x, groups), a.group_gradients(x, groups), rtol=1e-10, atol=1e-13)


def test_a_loss_that_is_not_a_mean_is_summed_worker_by_worker():
    """A sum over the rows (not the contract's mean, yet a loss a user may write): the probe finds that S times the
    loss of all rows is not the workers' sum, and the grouped path calls the loss once per worker."""
    o = oracle("mlp", loss=lambda out, t: nn.functional.cross_entropy(out, t, reduction="sum"))
    assert o.grouped is not None and o.grouped.mean is False
    m = oracle("mlp")
    assert m.grouped.mean is True
    rows = np.random.default_rng(1).integers(0, o.n, (4, 3))
    Y = o.flat().unsqueeze(0).repeat(4, 1)
    flat = torch.from_numpy(rows.reshape(-1))
    torch.testing.assert_close(o.grouped.gradients(Y, o.X_train[flat], o.y_train[flat]), own_gradients(o, Y, rows),
                               rtol=1e-10, atol=1e-12)


class Mixing(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(5, 3)

    def forward(self, x):
        return self.lin(x - x.mean(0))  # every sample's output depends on the batch


class Branching(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(5, 3)

    def forward(self, x):
        return self.lin(x) if x.sum() > 0 else -self.lin(x)  # control flow on values: fx cannot trace it


class OwnParameter(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(5, 3))

    def forward(self, x):
        return x @ self.w


#: models that cannot be grouped, and the words their refusal has
REFUSED = {
    "batch-norm": (lambda: nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4, track_running_stats=False),
                                         nn.Linear(4, 3)), "mixes the samples"),
    "layer-norm": (lambda: nn.Sequential(nn.Linear(5, 4), nn.LayerNorm(4), nn.Linear(4, 3)), "only Linear and Conv"),
    "mixing": (Mixing, "differ from each worker's own"),
    "branching": (Branching, "torch.fx cannot trace"),
    "own-parameter": (OwnParameter, "parameter w outside a Linear or Conv"),
    "reflect-padding": (lambda: nn.Sequential(nn.Conv1d(5, 2, 1, padding=1, padding_mode="reflect"), nn.Flatten(),
                                              nn.Linear(2 * 5, 3)), "pads with 'reflect'"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_model_that_cannot_be_grouped_is_refused_or_left_to_vmap(name):
    make, words = REFUSED[name]
    shape = (5, 3) if name == "reflect-padding" else (5,)
    X, y = torch.randn((20, *shape), dtype=torch.float64), torch.randint(0, 3, (20,))

    def build(how):
        torch.manual_seed(0)
        return ModelOracle(make().double(), lambda o, t: nn.functional.cross_entropy(o, t), X, y, X[:2], y[:2],
                           where="--model m.py", gradients=how)

    with pytest.raises(InputError) as e:
        build("grouped")
    text = str(e.value)
    assert text.startswith("--model m.py: --model-gradients grouped: ") and words in text and "\n" not in text, text
    assert build("auto").grouped is None  # auto: the vmap path
    assert build("vmap").grouped is None


def write(tmp_path, text: str) -> str:
    p = tmp_path / "model.py"
    p.write_text(textwrap.dedent(text))
    return str(p)


def test_the_command_line_option_runs_grouped_records_it_and_refuses_in_one_line(tmp_path, cli):
    import json

    from ..torch.test_torch_model import SMALL_FILE

    path = write(tmp_path, SMALL_FILE)
    docs = {}
    for how in ("vmap", "grouped", "auto"):
        r = cli("run", "--model", path, "--workers", "3", "--iters", "20", "--method", "sgd", "--lr", "0.1",
                "--model-gradients", how, "--json")
        assert r.code == 0, r.err
        docs[how] = json.loads(r.out)
    assert [docs[h]["problem"]["model_gradients"] for h in docs] == ["vmap", "grouped", "grouped"]
    assert docs["vmap"]["config"].get("model_gradients", "vmap") == "vmap"
    assert docs["grouped"]["config"]["model_gradients"] == "grouped"
    loss = {h: [row["loss"] for row in d["history"]] for h, d in docs.items()}
    np.testing.assert_allclose(loss["grouped"], loss["vmap"], rtol=1e-5)  # float32: equal to rounding
    assert loss["grouped"] == loss["auto"]
    bad = write(tmp_path, SMALL_FILE.replace("nn.Tanh()", "nn.LayerNorm(4)"))
    r = cli("run", "--model", bad, "--workers", "3", "--iters", "2", "--model-gradients", "grouped")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and "LayerNorm" in r.err, r.err
    r = cli("run", "--model", bad, "--workers", "3", "--iters", "2", "--model-gradients", "auto", "--json")
    assert r.code == 0 and json.loads(r.out)["problem"]["model_gradients"] == "vmap", r.err


RUN = """
import sys, signsim
signsim.run(model=sys.argv[1], workers=3, iters=5, model_gradients=sys.argv[2], heterogeneity=True, split="iid")
print("torch._dynamo" in sys.modules, "sympy" in sys.modules)
"""


def test_a_grouped_run_imports_neither_torch_dynamo_nor_sympy(tmp_path):
    """torch.func.grad imports torch._dynamo (about a second), vmap's first call sympy: the grouped path needs
    neither, also for the heterogeneity at x0 (the vmap run shows the check can fail)."""
    from ..torch.test_torch_model import SMALL_FILE

    path = write(tmp_path, SMALL_FILE)
    seen = {}
    for how in ("grouped", "vmap"):
        done = subprocess.run([sys.executable, "-c", RUN, path, how], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        seen[how] = done.stdout.split()
    assert seen == {"grouped": ["False", "False"], "vmap": ["True", "True"]}


PROBE = """
import os, sys
import signsim.engine.dispatch
print(os.environ.get("OMP_WAIT_POLICY", "unset"))
"""


@pytest.mark.parametrize("given", [None, "active"])
def test_numbas_passive_wait_policy_is_not_left_for_torch(given):
    """OMP_WAIT_POLICY=passive is for Numba's own libgomp only, while it loads (libgomp says so itself, under
    OMP_DISPLAY_ENV), and is gone from the environment after; a value the user set stays, and libgomp takes it."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    env["OMP_DISPLAY_ENV"] = "VERBOSE"
    if given:
        env["OMP_WAIT_POLICY"] = given
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (given or "unset")
    shown = omp_settings(done.stderr)
    if given:
        assert shown["OMP_WAIT_POLICY"] == ["ACTIVE"], done.stderr
    else:  # passive: no spinning (libgomp's default spins 300,000 times, and shows 'PASSIVE' too)
        assert shown["GOMP_SPINCOUNT"] == ["0"], done.stderr


def omp_settings(stderr: str) -> dict[str, list[str]]:
    """What each libgomp loaded showed under OMP_DISPLAY_ENV=VERBOSE, by setting, in load order."""
    out: dict[str, list[str]] = {}
    for line in stderr.splitlines():
        name, eq, value = line.strip().partition(" = ")
        if eq:
            out.setdefault(name, []).append(value.strip("'"))
    return out


MAPS = """
import os, sys, signsim
signsim.run(model=sys.argv[1], workers=3, iters=2)
print(sorted({line.split()[-1].rsplit("/", 2)[-2] for line in open(f"/proc/{os.getpid()}/maps") if "libgomp" in line}))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="reads /proc/PID/maps (Linux)")
def test_a_model_run_has_torch_load_its_own_openmp_runtime(tmp_path):
    """Numba's libgomp (made to wait passively) would serve torch too, torch linking the runtime by the name it
    answers to: a model's run imports torch first, and torch's own copy is loaded beside the system's."""
    from ..torch.test_torch_model import SMALL_FILE

    done = subprocess.run([sys.executable, "-c", MAPS, write(tmp_path, SMALL_FILE)], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "OMP_DISPLAY_ENV": "VERBOSE"})
    assert done.returncode == 0, done.stderr
    folders = eval(done.stdout.strip().splitlines()[-1])  # the folders of the libgomp files mapped
    assert "lib" in folders, folders  # torch/lib/libgomp.so.1: torch's own
    if "OMP_WAIT_POLICY" not in os.environ:  # torch's spins as its default says, Numba's not at all
        assert omp_settings(done.stderr)["GOMP_SPINCOUNT"] == ["300000", "0"], done.stderr


@pytest.mark.parametrize("loss", [
    lambda out, t: nn.functional.cross_entropy(out, t, weight=torch.tensor([1.0, 5.0, 0.2], dtype=out.dtype)),
    lambda out, t: nn.functional.cross_entropy(out, torch.where(t == 2, -100, t)),  # ignore_index
    lambda out, t: 1e-6 * nn.functional.cross_entropy(out, t, reduction="sum"),  # small gradients, a sum
], ids=["weighted", "ignore-index", "tiny-sum"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_a_loss_that_is_not_the_plain_mean_of_its_rows_is_never_called_once_for_all(loss, dtype):
    """A weighted mean divides by the weights of the rows it is given, an ignored target by the rows it keeps, a sum
    by nothing: S times the loss of all rows is then not the workers' sum, whatever rows the probe draws. The
    grouped path calls the loss per worker, and each worker's gradient is its own (sorted data: the first rows
    share a class)."""
    make, shape = MODELS["mlp"]
    torch.manual_seed(0)
    X = torch.randn((60, *shape), dtype=dtype)
    y = torch.sort(torch.randint(0, 3, (60,))).values
    o = ModelOracle(make().to(dtype), loss, X, y, X[:2], y[:2], gradients="grouped")
    assert o.grouped is not None and o.grouped.mean is False
    rows = np.random.default_rng(0).integers(0, 60, (4, 6))
    Y = o.flat().unsqueeze(0).repeat(4, 1)
    flat = torch.from_numpy(rows.reshape(-1))
    got, want = o.grouped.gradients(Y, o.X_train[flat], o.y_train[flat]), own_gradients(o, Y, rows)
    tol = 1e3 * torch.finfo(dtype).eps * float(want.abs().max())
    assert float((got - want).abs().max()) <= tol and float(want.abs().max()) > 0


class Branch(nn.Module):
    """A forward that reads ``self.training`` (fx freezes it at trace time)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(5, 3)

    def forward(self, x):
        return self.lin(x * 3.0 if self.training else x)


def test_the_training_modes_forward_is_traced_in_training_mode():
    """model() returned in evaluation mode, with a branch for training: the rounds (training mode) follow the
    training branch, as vmap's do."""
    X, y = torch.randn((30, 5), dtype=torch.float64), torch.randint(0, 3, (30,))
    oracles = []
    for how in ("vmap", "grouped"):
        torch.manual_seed(0)
        m = Branch().double().eval()
        oracles.append(ModelOracle(m, lambda o, t: nn.functional.cross_entropy(o, t), X, y, X[:2], y[:2],
                                   gradients=how))
    rows = np.random.default_rng(2).integers(0, 30, (1, 4, 5))
    x = oracles[0].flat().numpy().copy()
    a, b = np.zeros((4, oracles[0].dim)), np.zeros((4, oracles[0].dim))
    oracles[0].worker_gradients(x, rows, 0.1, a)
    oracles[1].worker_gradients(x, rows, 0.1, b)
    np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)


def test_half_precision_and_duplicated_first_rows_do_not_fool_the_probe():
    """bf16 is too coarse for the probe (refused); a forward that mixes the batch is found even when the first
    rows of the data are all the same (the probe draws its rows from the whole training set)."""
    X, y = torch.randn((40, 5)), torch.randint(0, 3, (40,))
    with pytest.raises(InputError, match="bfloat16"):
        ModelOracle(nn.Linear(5, 3).bfloat16(), lambda o, t: nn.functional.cross_entropy(o.float(), t), X, y,
                    X[:2], y[:2], gradients="grouped")
    X[:10] = X[0]
    with pytest.raises(InputError, match="differ from each worker's own"):
        ModelOracle(Mixing().double(), lambda o, t: nn.functional.cross_entropy(o, t), X.double(), y, X[:2].double(),
                    y[:2], gradients="grouped")


def test_a_broken_loss_is_reported_as_such_and_never_ends_python(tmp_path, cli):
    """The loss's own faults are checked before the grouped path is chosen: its message names them, as vmap's does;
    sys.exit() in the loss is one line, exit 2."""
    from ..torch.test_torch_model import SMALL_FILE

    cases = {
        "sys.exit": ("    return nn.functional.cross_entropy(output, target)",
                     "    import sys; sys.exit('bye')", "SystemExit"),
        "not a scalar": ("    return nn.functional.cross_entropy(output, target)",
                         "    return nn.functional.cross_entropy(output, target, reduction='none')",
                         "must return a scalar tensor"),
    }
    for name, (old, new, words) in cases.items():
        path = tmp_path / f"{name.replace(' ', '_').replace('.', '_')}.py"
        path.write_text(SMALL_FILE.replace(old, new))
        for how in ("grouped", "auto"):
            r = cli("run", "--model", str(path), "--workers", "3", "--iters", "2", "--model-gradients", how)
            assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and words in r.err, (name, how, r.err)
