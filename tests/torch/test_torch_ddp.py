"""signsim's stages in real distributed training (signsim.torch.ddp; docs/theory.md §13.1): two processes on
127.0.0.1 (torchrun, gloo) train a model file with the DDP communication hook, and must follow the simulated run of
``signsim run --model`` with the same seed step for step: the same split, start, minibatch rows, compressor draws and
tie-breaks, so the same final parameters, and the bits each rank counted are the simulated run's per worker."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

if os.environ.get("SIGNSIM_REQUIRE_TORCH") == "1":
    import torch  # noqa: F401 - CI: a torch test is never skipped
else:
    pytest.importorskip("torch")

from signsim import history  # noqa: E402
from signsim.engine.driver import simulate  # noqa: E402
from tests.conftest import make_engine  # noqa: E402

# tanh: no gradient coordinate is exactly 0 by construction (a ReLU's dead units are, and sign(0)'s random draws then
# follow the coordinates' order, which the hook keeps for a one-bucket model anyway)
MODEL = """
import numpy as np
from torch import nn

def model():
    return nn.Sequential(nn.Linear(5, 6), nn.Tanh(), nn.Linear(6, 3)).double()

def loss(output, target):
    return nn.functional.cross_entropy(output, target)

def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 5))
    return X, (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 0)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow  # two torchrun processes, ~10 s each case; .ci/run's slow step runs it
@pytest.mark.parametrize("compressor, aggregate", [("sign", "majority"), ("top-k:12", "median"), ("top-k:3", "mean")])
def test_ddp_hook_follows_the_simulated_run(tmp_path, compressor, aggregate):
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    out = tmp_path / "x.npy"
    steps, lr, tau, seed = 15, 0.02, 4, 7
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    logs = tmp_path / "logs"
    p = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--master-addr",
                        "127.0.0.1", "--master-port", str(free_port()), "--redirects", "2", "--log-dir", str(logs),
                        str(Path(__file__).resolve().parents[2] / "examples" / "ddp_train.py"),
                        "--model", str(path), "--steps", str(steps), "--lr", str(lr), "--batch-size", str(tau),
                        "--seed", str(seed), "--compressor", compressor, "--aggregate", aggregate, "--split", "iid",
                        "--out", str(out)], capture_output=True, text=True, env=env, timeout=300)
    ranks = "".join(f"\n== {f}\n{f.read_text()[-2000:]}" for f in sorted(logs.rglob("stderr.log")))
    assert p.returncode == 0, p.stderr[-1500:] + ranks
    report = json.loads([line for line in p.stdout.splitlines() if line.startswith("{")][-1])
    engine, problem, *_ = make_engine(model=str(path), method="sgd", compressor=compressor, aggregate=aggregate,
                                      workers=2, iters=steps, lr=lr, batch_size=tau, seed=seed, split="iid",
                                      test_fraction=0.0)
    r = simulate(engine)
    x = np.load(out)
    assert np.abs(r.x - problem.x0).max() > 0.5 * lr  # the runs compared moved
    np.testing.assert_allclose(x, r.x, rtol=1e-12, atol=1e-14)
    assert report["bits_up_per_rank"] * 2 == r.history[-1, history.index("bits_up")]
    assert report["bits_down_per_rank"] * 2 == r.history[-1, history.index("bits_down")]


def test_the_hooks_sparse_broadcast_is_counted_as_encoded():
    """top-k with the mean: the broadcast is sent as (index, float) pairs when that is cheaper, 1 + min(32 d,
    n (32 + ceil(log2 d))) bits for n nonzero entries, as the simulated run counts it (not the dense 32 d + 1)."""
    from signsim.torch.ddp import HookState

    d, k = 1000, 3
    state = HookState(compressor=f"top-k:{k}", aggregate="mean", rank=0, world_size=2)
    msgs = np.zeros((2, d))
    msgs[0, [1, 5, 9]] = [1.0, -2.0, 3.0]
    msgs[1, [5, 9, 700]] = [2.0, 1.0, -1.0]
    out = state.aggregate_of(0, msgs)
    nonzero = int(np.count_nonzero(out))
    assert nonzero == 3  # (coordinate 5 cancels: 0.5 (-2 + 2) = 0)
    assert state.bits_down == 1 + min(32 * d, nonzero * (32 + 10))


@pytest.mark.parametrize("compressor, aggregate, says", [
    ("sign", "majority", "contractive"), ("scaled-sign", "majority", "aggregate='mean'"),
    ("qsgd:4", "mean", "contractive"), ("rand-k:3", "mean", "contractive")])
def test_the_hook_refuses_error_feedback_where_run_does(compressor, aggregate, says, cli):
    from signsim.errors import InputError
    from signsim.torch.ddp import HookState

    with pytest.raises(InputError, match=says):
        HookState(compressor=compressor, aggregate=aggregate, error_feedback="ef", rank=0, world_size=2)
    r = cli("run", "--compressor", compressor, "--aggregate", aggregate, "--error-feedback", "ef", "--iters", "2")
    assert r.code == 2
