"""Your own PyTorch model: signsim's path against the two PyTorch loops a researcher would write (issues #33, #49).

    python benchmarks/bench_torch.py             # digits MLP and a small CNN, M = 8 and 32, 500 iterations
    python benchmarks/bench_torch.py --quick     # 30 iterations

The same work three ways: majority vote of M signSGD workers (signsim's `signsgd` method: sign compressor, majority
vote), minibatches of 32 digits per worker, step 1e-3. The plain loop does per iteration what one writes by hand: M
forward and backward passes of the model, each gradient flattened and its sign added up, the vote's sign applied to
the parameters. The vmap loop is what one writes knowing ``torch.func``: the M workers' minibatch gradients in one
``vmap(grad(functional_call))`` call, their signs summed per parameter tensor, the vote's sign applied. signsim runs
`signsim.run(model=FILE, method="signsgd", ...)`, its history evaluated only at the start and the end (the two
loops evaluate nothing), after a 2-iteration run in the same process that loads the compiled loop (the loops have
nothing to load). Each variant runs in its own process, so its peak
memory (maximum resident set) is its own; time per iteration is the loop's wall time over the iterations (set-up,
imports and compiles excluded). Prints per model and M: ms per iteration, peak MB, and the ratios; nothing is
asserted. Both use torch's default threads.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

MODELS = {
    "mlp": """
import numpy as np, torch
from torch import nn
from sklearn.datasets import load_digits
def model():
    return nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
def loss(output, target):
    return nn.functional.cross_entropy(output, target)
def data():
    X, y = load_digits(return_X_y=True)
    return (X / 16.0).astype(np.float32), y.astype(np.int64)
""",
    "cnn": """
import numpy as np, torch
from torch import nn
from sklearn.datasets import load_digits
def model():
    return nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.Conv2d(8, 16, 3), nn.ReLU(), nn.Flatten(),
                         nn.Linear(16 * 4 * 4, 10))
def loss(output, target):
    return nn.functional.cross_entropy(output, target)
def data():
    X, y = load_digits(return_X_y=True)
    return (X / 16.0).astype(np.float32).reshape(-1, 1, 8, 8), y.astype(np.int64)
""",
}

#: what both hand-written loops do first (the model file, its data, the seeds) and last (the time, the memory)
SETUP = """
import importlib.util, json, resource, sys, time
import numpy as np, torch
spec = importlib.util.spec_from_file_location("m", sys.argv[1]); m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
M, K, tau, lr = int(sys.argv[2]), int(sys.argv[3]), 32, 1e-3
torch.manual_seed(0)
net = m.model()
X, y = (torch.as_tensor(a) for a in m.data())
rng = np.random.default_rng(0)
"""
REPORT = """wall = time.perf_counter() - t0
print(json.dumps({"ms": 1e3 * wall / K, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

PLAIN = SETUP + """params = list(net.parameters())
t0 = time.perf_counter()
for k in range(K):
    votes = None
    for w in range(M):
        rows = torch.from_numpy(rng.integers(0, X.shape[0], tau))
        net.zero_grad()
        m.loss(net(X[rows]), y[rows]).backward()
        s = torch.sign(torch.cat([p.grad.reshape(-1) for p in params]))
        votes = s if votes is None else votes + s
    with torch.no_grad():
        vec = torch.nn.utils.parameters_to_vector(params) - lr * torch.sign(votes)
        torch.nn.utils.vector_to_parameters(vec, params)
""" + REPORT

VMAP = SETUP + """from torch.func import functional_call, grad, vmap
params = {n: p.detach() for n, p in net.named_parameters()}
def f(p, xb, yb):
    return m.loss(functional_call(net, p, (xb,)), yb)
workers = vmap(grad(f), in_dims=(None, 0, 0), randomness="different")
t0 = time.perf_counter()
for k in range(K):
    rows = torch.from_numpy(rng.integers(0, X.shape[0], (M, tau)))
    g = workers(params, X[rows], y[rows])
    with torch.no_grad():
        params = {n: p - lr * torch.sign(torch.sign(g[n]).sum(0)) for n, p in params.items()}
""" + REPORT

SIGNSIM = """
import json, resource, sys
import signsim
M, K = int(sys.argv[2]), int(sys.argv[3])
signsim.run(model=sys.argv[1], method="signsgd", workers=M, iters=2, batch_size=32, test_fraction=0.0)  # load kernels
r = signsim.run(model=sys.argv[1], method="signsgd", workers=M, iters=K, eval_every=K, lr=1e-3, batch_size=32,
                test_fraction=0.0)
f = r.to_dict()["final"]
print(json.dumps({"ms": 1e3 * f["wall_time"] / K, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "params": r.to_dict()["problem"]["parameters"]}))
"""


def measure(code: str, path: Path, M: int, K: int) -> dict:
    done = subprocess.run([sys.executable, "-c", code, str(path), str(M), str(K)], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--workers", type=int, nargs="+", default=[8, 32])
    a = ap.parse_args()
    K = 30 if a.quick else 500
    import torch

    print(f"{platform.node()}: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; torch "
          f"{torch.__version__} ({torch.get_num_threads()} threads); {K} iterations, signSGD with majority vote")
    print(f"{'model':>6} {'M':>4} {'d':>6} {'plain ms/it':>12} {'vmap ms/it':>11} {'signsim ms/it':>14} "
          f"{'x plain':>8} {'x vmap':>7} {'plain MB':>9} {'vmap MB':>8} {'signsim MB':>11}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in MODELS.items():
            path = Path(tmp) / f"{name}.py"
            path.write_text(text)
            for M in a.workers:
                measure(SIGNSIM, path, M, 2)  # compile or load the kernels
                p, v, s = measure(PLAIN, path, M, K), measure(VMAP, path, M, K), measure(SIGNSIM, path, M, K)
                print(f"{name:>6} {M:>4} {s['params']:>6} {p['ms']:>12.2f} {v['ms']:>11.2f} {s['ms']:>14.2f} "
                      f"{p['ms'] / s['ms']:>8.2f} {v['ms'] / s['ms']:>7.2f} {p['rss_mb']:>9.0f} {v['rss_mb']:>8.0f} "
                      f"{s['rss_mb']:>11.0f}")


if __name__ == "__main__":
    main()
