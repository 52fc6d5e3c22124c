"""pfl-research's CIFAR-10 shape, scaled to this machine: its ``simple_cnn``, 50 clients a round (issue 49, item 4).

    python benchmarks/bench_cifar.py              # 5 rounds, 3 processes each
    python benchmarks/bench_cifar.py --quick      # 1 round, 1 process each

The model is pfl-research's ``simple_cnn`` for 32 x 32 x 3 images (Conv 3->32, ReLU, Conv 32->64, ReLU, max-pool 2,
dropout 0.25, Linear 12,544->128, ReLU, dropout 0.5, Linear 128->10: d = 1,626,442) with softmax cross-entropy,
trained by FedAvg: each round 50 of 100 clients (each holding 10 images), sampled without replacement, take
``--local-steps`` SGD steps (minibatches of 10 of their own images, step 0.05) from the server's model; the server
averages their models. The loss and its gradient over all the data are computed at the start and the end (the
history's two rows in signsim; the hand loops do the same). Synthetic data of CIFAR-10's shapes (pixels uniform in
[0, 1), labels from a fixed random linear teacher); nothing is downloaded. Scaled to a 2-core machine: 1,000
images, 5 rounds, 2 local steps (pfl-research runs 1,500 rounds of 5 local epochs over CIFAR-10's 50,000 images;
one pass over them forward and backward takes minutes here).

The same work four ways, each in a process of its own:
- signsim grouped: ``signsim run --model FILE --method sgd --local-steps H --model-gradients grouped ...`` (the
  50 clients' minibatch gradients of each local step from one forward and backward pass);
- signsim vmap: the same with ``--model-gradients vmap`` (``torch.func.vmap`` over the clients);
- a vmap loop: what one writes knowing ``torch.func``: the 50 clients' parameters stacked, each local step one
  ``vmap(grad(functional_call))`` call, the models averaged;
- a plain loop: per client, a copy of the model, ``torch.optim.SGD`` and autograd (as pfl-research's own PyTorch
  backend trains each client), the models averaged.
Each prints the process's wall time (imports, data, everything) and the training loop's; medians over the
processes, run in turn. Ratios are the contender's time over signsim grouped's (above 1: signsim grouped faster).
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from pathlib import Path

from bench_flute import _timed, race, table, written

CLIENTS, PER_ROUND, PER_CLIENT, BATCH, LR = 100, 50, 10, 10, 0.05

#: the data every contender trains on, generated in its own process from seed 0, and the model
COMMON = f"""
import numpy as np
import torch
from torch import nn
def make_data():
    rng = np.random.default_rng(0)
    X = rng.random(({CLIENTS * PER_CLIENT}, 3, 32, 32), dtype=np.float32)
    teacher = rng.standard_normal((3 * 32 * 32, 10)).astype(np.float32)
    return X, np.argmax((X.reshape(len(X), -1) - 0.5) @ teacher, axis=1).astype(np.int64)
def model():
    return nn.Sequential(nn.Conv2d(3, 32, 3), nn.ReLU(), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Dropout(0.25), nn.Flatten(), nn.Linear(14 * 14 * 64, 128), nn.ReLU(), nn.Dropout(0.5),
                         nn.Linear(128, 10))
def loss(output, target):
    return nn.functional.cross_entropy(output, target)
"""

#: the model file signsim runs
MODEL = COMMON + """
def data():
    return make_data()
"""

#: what both hand-written loops do first: time from here is the process's; the loop's starts at t0
SETUP = COMMON + f"""
import json, sys, time
K, H = int(sys.argv[1]), int(sys.argv[2])
X, y = (torch.as_tensor(a) for a in make_data())
rng = np.random.default_rng(1)
shards = torch.as_tensor(rng.permutation(X.shape[0]).reshape({CLIENTS}, -1))
torch.manual_seed(0)
net = model()
def evaluate(p):  # the loss and its gradient over all the data, in evaluation mode, as signsim's history rows
    from torch.func import functional_call
    net.eval()
    ps = {{n: v.detach().requires_grad_(True) for n, v in p.items()}}
    value = loss(functional_call(net, ps, (X,)), y)
    grads = torch.autograd.grad(value, list(ps.values()))
    net.train()
    return float(value), grads
"""
REPORT = """print(json.dumps({"loop": time.perf_counter() - t0}))
"""

VMAP = SETUP + f"""
from torch.func import functional_call, grad, vmap
params = {{n: p.detach() for n, p in net.named_parameters()}}
def f(p, xb, yb):
    return loss(functional_call(net, p, (xb,)), yb)
step = vmap(grad(f), in_dims=(0, 0, 0), randomness="different")
t0 = time.perf_counter()
evaluate(params)
for k in range(K):
    clients = torch.as_tensor(rng.choice({CLIENTS}, {PER_ROUND}, replace=False))
    local = {{n: p.expand({PER_ROUND}, *p.shape).clone() for n, p in params.items()}}
    for h in range(H):
        pick = torch.as_tensor(rng.integers(0, shards.shape[1], ({PER_ROUND}, {BATCH})))
        rows = torch.gather(shards[clients], 1, pick)
        g = step(local, X[rows], y[rows])
        local = {{n: local[n] - {LR} * g[n] for n in local}}
    params = {{n: v.mean(0) for n, v in local.items()}}
evaluate(params)
""" + REPORT

PLAIN = SETUP + f"""
t0 = time.perf_counter()
evaluate(dict(net.named_parameters()))
for k in range(K):
    states = []
    for c in rng.choice({CLIENTS}, {PER_ROUND}, replace=False):
        local = model()
        local.load_state_dict(net.state_dict())
        opt = torch.optim.SGD(local.parameters(), lr={LR})
        for h in range(H):
            rows = shards[c][torch.as_tensor(rng.integers(0, shards.shape[1], {BATCH}))]
            opt.zero_grad()
            loss(local(X[rows]), y[rows]).backward()
            opt.step()
        states.append(local.state_dict())
    net.load_state_dict({{n: torch.stack([s[n] for s in states]).mean(0) for n in states[0]}})
evaluate(dict(net.named_parameters()))
""" + REPORT


def _signsim(model: Path, rounds: int, steps: int, gradients: str) -> list[str]:
    return [sys.executable, "-m", "signsim", "run", "--model", str(model), "--method", "sgd", "--workers",
            str(CLIENTS), "--clients-per-round", str(PER_ROUND), "--local-steps", str(steps), "--batch-size",
            str(BATCH), "--lr", str(LR), "--split", "iid", "--test-fraction", "0", "--no-heterogeneity", "--iters",
            str(rounds), "--eval-every", str(rounds), "--model-gradients", gradients, "--quiet", "--json"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--local-steps", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="1 round, one process each")
    a = ap.parse_args()
    rounds, repeats = (1, 1) if a.quick else (a.rounds, a.repeats)
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "simple_cnn.py"
        model.write_text(MODEL)
        scripts = written(tmp, {"vmap": VMAP, "plain": PLAIN})
        # the kernels compiled (and the data's first read) before any timing, as after `signsim compile`
        _timed(_signsim(model, 1, 1, "grouped"))
        contenders = {
            "signsim grouped": _signsim(model, rounds, a.local_steps, "grouped"),
            "signsim vmap": _signsim(model, rounds, a.local_steps, "vmap"),
            "vmap PyTorch": [sys.executable, str(scripts["vmap"]), str(rounds), str(a.local_steps)],
            "plain PyTorch": [sys.executable, str(scripts["plain"]), str(rounds), str(a.local_steps)],
        }
        times = race(contenders, repeats)
    print(f"pfl-research's CIFAR-10 shape (simple_cnn, d = 1,626,442): {CLIENTS} clients of {PER_CLIENT} images, "
          f"{PER_ROUND} a round, {a.local_steps} local steps of {BATCH}, {rounds} rounds; "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch threads default; medians of "
          f"{repeats}")
    table(times, 18)
    print("signsim's loop time is its run's wall_time (the loop, its set-up and the two history rows); ratios are "
          "over signsim grouped's (above 1: signsim grouped faster)")


if __name__ == "__main__":
    main()
