"""FLUTE's cross-device workload, multinomial logistic regression on MNIST-shaped data (issue 49, item 4).

    python benchmarks/bench_flute.py              # 1,000 clients, 10 a round, 100 rounds, 3 processes each
    python benchmarks/bench_flute.py --quick      # 10 rounds, 1 process each
    python benchmarks/bench_flute.py --clients 100000
    python benchmarks/bench_flute.py --frameworks fw/bin/python   # also Flower's simulation and pfl-research

Flower and pfl-research are optional contenders, run by the Python given with ``--frameworks`` (default: this one)
when it can import them; in an environment of their own, as neither is signsim's dependency:

    python -m venv fw && fw/bin/pip install torch numpy "flwr[simulation]" "pfl[pytorch]"

The workload FLUTE published (Dimitriadis et al. 2022, its LR-MNIST task): M clients hold equal shares of 60,000
images (beyond 60,000 clients, one each: 10^5 clients hold 10^5 rows) of 28 x 28 = 784 pixels, 10 classes
(synthetic here, of MNIST's shapes: pixels uniform in [0, 1), labels the argmax of a fixed random linear teacher;
nothing is downloaded); each round 10 clients, sampled without replacement, take 6 local SGD steps (minibatches
of 10 of their own rows, step 0.1) of the model 784 -> 10 with softmax cross-entropy from the server's model, and
the server averages their models (FedAvg, server step 1).

The same work four ways (six with the frameworks), each in a process of its own:
- signsim: ``signsim run --model FILE --method sgd --local-steps 6 ...`` (the model file defines the model, its
  loss and the data); ``--no-heterogeneity`` (no measurement at x_0) and history only at the start and the end;
  the kernels are compiled beforehand, as after an install (``signsim compile`` or a first run);
- a hand-batched PyTorch loop: the 10 clients' models stacked, one ``bmm`` for the forward and two for the
  gradient per local step, the gradient written out (no autograd): what one writes for speed;
- a plain PyTorch loop: per client, an ``nn.Linear`` copy, ``torch.optim.SGD`` and autograd, the models averaged;
- Flower's simulation (``flute_flower.py``: ``run_simulation`` on Ray, a ``NumPyClient`` per client, FedAvg sampling
  10 of M, no federated evaluation) and pfl-research (``flute_pfl.py``: ``FederatedAveraging`` on its
  ``SimulatedBackend``, a cohort of 10 distinct users, 6 local steps of 10 rows drawn with replacement), each timed
  from its first round to its last, where installed.
Each prints the process's wall time (imports, data, everything) and the training loop's; medians over the processes.
Ratios are the contender's time over signsim's (above 1: signsim faster). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

D, CLASSES, ROWS, PER_ROUND, LOCAL_STEPS, BATCH, LR = 784, 10, 60_000, 10, 6, 10, 0.1

#: the data every contender trains on, generated in its own process from seed 0 (ROWS: the line each script
#: starts with, ``rows_line``)
DATA = f"""
import numpy as np
def make_data():
    rng = np.random.default_rng(0)
    X = rng.random((ROWS, {D}), dtype=np.float32)
    teacher = rng.standard_normal(({D}, {CLASSES})).astype(np.float32)
    return X, np.argmax((X - 0.5) @ teacher, axis=1).astype(np.int64)
"""

#: the model file signsim runs
MODEL = DATA + f"""
import torch
from torch import nn
def model():
    return nn.Linear({D}, {CLASSES})
def loss(output, target):
    return nn.functional.cross_entropy(output, target)
def data():
    return make_data()
"""

#: what both hand-written loops do first: time from here is the process's; the loop's starts at t0
SETUP = DATA + """
import json, resource, sys, time
import numpy as np, torch
M, K = int(sys.argv[1]), int(sys.argv[2])
X, y = (torch.as_tensor(a) for a in make_data())
rng = np.random.default_rng(1)
shards = torch.as_tensor(rng.permutation(X.shape[0])[: X.shape[0] // M * M].reshape(M, -1))
torch.manual_seed(0)
"""
REPORT = """print(json.dumps({"loop": time.perf_counter() - t0}))
"""

BATCHED = SETUP + f"""
W, b = torch.zeros({D}, {CLASSES}), torch.zeros({CLASSES})
t0 = time.perf_counter()
for k in range(K):
    clients = torch.as_tensor(rng.choice(M, {PER_ROUND}, replace=False))
    Wc, bc = W.expand({PER_ROUND}, -1, -1).clone(), b.expand({PER_ROUND}, -1).clone()
    for h in range({LOCAL_STEPS}):
        pick = torch.as_tensor(rng.integers(0, shards.shape[1], ({PER_ROUND}, {BATCH})))
        rows = torch.gather(shards[clients], 1, pick)
        xb, yb = X[rows], y[rows]
        p = torch.softmax(torch.baddbmm(bc[:, None, :], xb, Wc), dim=2)
        p.scatter_add_(2, yb[:, :, None], torch.full(yb.shape + (1,), -1.0))
        p /= {BATCH}
        Wc -= {LR} * torch.bmm(xb.transpose(1, 2), p)
        bc -= {LR} * p.sum(1)
    W, b = Wc.mean(0), bc.mean(0)
""" + REPORT

PLAIN = SETUP + f"""
from torch import nn
net = nn.Linear({D}, {CLASSES})
t0 = time.perf_counter()
for k in range(K):
    states = []
    for c in rng.choice(M, {PER_ROUND}, replace=False):
        local = nn.Linear({D}, {CLASSES})
        local.load_state_dict(net.state_dict())
        opt = torch.optim.SGD(local.parameters(), lr={LR})
        for h in range({LOCAL_STEPS}):
            rows = shards[c][torch.as_tensor(rng.integers(0, shards.shape[1], {BATCH}))]
            opt.zero_grad()
            nn.functional.cross_entropy(local(X[rows]), y[rows]).backward()
            opt.step()
        states.append(local.state_dict())
    net.load_state_dict({{n: torch.stack([s[n] for s in states]).mean(0) for n in states[0]}})
""" + REPORT


def rows_line(clients: int) -> str:
    """The data's size: 60,000 rows (MNIST's), or one per client beyond 60,000 clients (each client then holds
    one row, and draws its minibatches of 10 from it with replacement)."""
    return f"ROWS = {max(ROWS, clients)}\n"


def _signsim_args(model: Path, clients: int, rounds: int, gradients: str = "grouped") -> list[str]:
    return [sys.executable, "-m", "signsim", "run", "--model", str(model), "--method", "sgd", "--workers",
            str(clients), "--clients-per-round", str(PER_ROUND), "--local-steps", str(LOCAL_STEPS), "--batch-size",
            str(BATCH), "--lr", str(LR), "--split", "iid", "--test-fraction", "0", "--no-heterogeneity", "--iters",
            str(rounds), "--eval-every", str(rounds), "--model-gradients", gradients, "--quiet", "--json"]


def _timed(args: list[str]) -> tuple[float, float]:
    """(process wall seconds, training loop seconds) of one process."""
    start = time.perf_counter()
    p = subprocess.run(args, capture_output=True, text=True)
    process = time.perf_counter() - start
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(args[:4])}... failed: {p.stderr[-2000:]}")
    doc = json.loads(p.stdout.strip().splitlines()[-1] if args[1] != "-m" else p.stdout)
    return process, doc["loop"] if "loop" in doc else doc["final"]["wall_time"]


def written(folder: str, sources: dict[str, str]) -> dict[str, Path]:
    """Each hand-written contender's source as ``folder/NAME.py``, by name."""
    paths = {name: Path(folder) / f"{name}.py" for name in sources}
    for name, path in paths.items():
        path.write_text(sources[name])
    return paths


def race(contenders: dict[str, list[str]], repeats: int,
         optional: frozenset[str] = frozenset()) -> dict[str, list[tuple[float, float]]]:
    """Each contender's (process, loop) seconds, ``repeats`` times, in turn, so that the machine's drift falls on
    every contender alike. An ``optional`` contender that fails is said so and left out; any other stops the race."""
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, args in contenders.items():
            if name not in times:
                continue
            try:
                times[name].append(_timed(args))
            except SystemExit as e:
                if name not in optional:
                    raise
                print(f"{name}: left out, it failed: {str(e).strip().splitlines()[-1]}", file=sys.stderr)
                del times[name]
    return times


def table(times: dict[str, list[tuple[float, float]]], width: int = 22) -> None:
    """Medians of each contender's process and loop times, and their ratios over signsim grouped's."""
    ours = [statistics.median(t[i] for t in times["signsim grouped"]) for i in (0, 1)]
    print(f"{'contender':<{width}}{'process s':>11}{'loop s':>9}{'process ratio':>15}{'loop ratio':>12}")
    for name, t in times.items():
        proc, loop = (statistics.median(x[i] for x in t) for i in (0, 1))
        print(f"{name:<{width}}{proc:>11.2f}{loop:>9.2f}{proc / ours[0]:>15.2f}{loop / ours[1]:>12.2f}")


def _installed(python: str, modules: str) -> bool:
    """Whether ``python`` runs and imports ``modules`` (a comma-separated list)."""
    try:
        return subprocess.run([python, "-c", f"import {modules}"], capture_output=True).returncode == 0
    except OSError:  # no such interpreter
        return False


#: the optional contenders: name -> (the modules their script needs, the script next to this one)
FRAMEWORKS = {"Flower simulation": ("flwr.simulation, ray, torch", "flute_flower.py"),
              "pfl-research": ("pfl.model.pytorch, torch", "flute_pfl.py")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="10 rounds, one process each")
    ap.add_argument("--frameworks", default=sys.executable, metavar="PYTHON",
                    help="the Python that runs Flower and pfl-research where it can import them (default: this one)")
    a = ap.parse_args()
    rounds, repeats = (10, 1) if a.quick else (a.rounds, a.repeats)
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "flute_lr.py"
        model.write_text(rows_line(a.clients) + MODEL)
        scripts = written(tmp, {"batched": rows_line(a.clients) + BATCHED, "plain": rows_line(a.clients) + PLAIN})
        # the kernels compiled (and the data's first read) before any timing, as after `signsim compile`
        subprocess.run(_signsim_args(model, a.clients, 2), capture_output=True, check=True)
        contenders = {"signsim grouped": _signsim_args(model, a.clients, rounds),
                      "signsim vmap": _signsim_args(model, a.clients, rounds, "vmap"),
                      "hand-batched PyTorch": [sys.executable, str(scripts["batched"]), str(a.clients), str(rounds)],
                      "plain PyTorch": [sys.executable, str(scripts["plain"]), str(a.clients), str(rounds)]}
        here = Path(__file__).resolve().parent
        missing = [name for name, (module, _) in FRAMEWORKS.items() if not _installed(a.frameworks, module)]
        contenders.update({name: [a.frameworks, str(here / script), str(a.clients), str(rounds)]
                           for name, (module, script) in FRAMEWORKS.items() if name not in missing})
        times = race(contenders, repeats, frozenset(FRAMEWORKS))
    print(f"FLUTE LR-MNIST shape: {a.clients:,} clients, {PER_ROUND} a round, {LOCAL_STEPS} local steps of "
          f"{BATCH}, {rounds} rounds; {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"torch threads default; medians of {repeats}")
    table(times)
    for name in missing:
        print(f"{name:<22}  not run: {a.frameworks} cannot import {FRAMEWORKS[name][0]} (--frameworks PYTHON)")
    print("signsim's loop time is its run's wall_time (the loop, its set-up and the two history rows); ratios are "
          "over signsim grouped's (above 1: signsim grouped faster)")


if __name__ == "__main__":
    main()
