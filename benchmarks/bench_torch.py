"""Your own PyTorch model: signsim's path against the two PyTorch loops a researcher would write (issues #33, #49).

    python benchmarks/bench_torch.py             # digits MLP and a small CNN, M = 8 and 32, 500 iterations
    python benchmarks/bench_torch.py --quick     # 30 iterations

The same work four ways: majority vote of M signSGD workers (signsim's `signsgd` method: sign compressor, majority
vote; sign(0) = 0 and a tied vote 0, as ``torch.sign`` gives them, so ``sign_zero="zero", tie="zero"`` for signsim),
minibatches of 32 digits per worker, step 1e-3. The plain loop does per iteration what one writes by hand: M
forward and backward passes of the model, each gradient flattened and its sign added up, the vote's sign applied to
the parameters. The vmap loop is what one writes knowing ``torch.func``: the M workers' minibatch gradients in one
``vmap(grad(functional_call))`` call, their signs summed per parameter tensor, the vote's sign applied. signsim runs
`signsim.run(model=FILE, method="signsgd", ...)` with ``model_gradients="vmap"`` (ss vmap) and ``"grouped"`` (ss
grp: every worker's gradient from one forward and backward pass), its history evaluated only at the start and the
end (the two loops evaluate nothing). Each variant runs in its own process, so its peak memory (maximum resident
set) is its own. Two times: per iteration, the loop's wall time over the iterations, after a first call that
is not timed (the vmap loop's imports torch._dynamo, about a second; for signsim a 2-iteration run in the same
process that loads the compiled loop); per process, the wall time of a whole script
doing the run once (imports, data, the kernels' loading, the first torch.func call: what a researcher waits for),
medians of ``--repeats`` processes run in turn. Ratios are the vmap loop's time over signsim's; nothing is asserted.
All use torch's default threads.
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
m.loss(net(X[:tau]), y[:tau]).backward()  # (a first call, as the vmap loop's)
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
workers(params, X[:M * tau].reshape(M, tau, *X.shape[1:]), y[:M * tau].reshape(M, tau))  # (its first call imports)
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
M, K, how = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
if K > 2:  # loads the kernels, so that ms per iteration leaves them out (the process time has them)
    signsim.run(model=sys.argv[1], method="signsgd", workers=M, iters=2, batch_size=32, test_fraction=0.0,
                model_gradients=how, sign_zero="zero", tie="zero")
r = signsim.run(model=sys.argv[1], method="signsgd", workers=M, iters=K, eval_every=K, lr=1e-3, batch_size=32,
                test_fraction=0.0, model_gradients=how, sign_zero="zero", tie="zero")
f = r.to_dict()["final"]
print(json.dumps({"ms": 1e3 * f["wall_time"] / K, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "params": r.to_dict()["problem"]["parameters"]}))
"""
#: the same run, once, as a researcher's script would: its process time, imports and the kernels' loading included
SIGNSIM_ONCE = SIGNSIM.replace("if K > 2:", "if False:")


def measure(code: str, path: Path, M: int, K: int, how: str = "vmap") -> dict:
    """The script's own report, with the process's wall time (``process``: start-up, imports, data, all)."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, str(path), str(M), str(K), how], capture_output=True,
                          text=True)
    if done.returncode:
        raise SystemExit(done.stderr)
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "process": time.perf_counter() - start}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--workers", type=int, nargs="+", default=[8, 32])
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    K = 30 if a.quick else 500
    if a.quick:
        a.repeats = 1
    import torch

    print(f"{platform.node()}: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; torch "
          f"{torch.__version__} ({torch.get_num_threads()} threads); {K} iterations, signSGD with majority vote")
    print("per iteration (ms, the loop only) and per process (s, a whole script: imports, data, kernels; medians of "
          f"{a.repeats} in turn); ratios: the hand loop's time over signsim's (above 1: signsim faster)")
    print(f"{'model':>6} {'M':>4} {'d':>6} {'plain':>7} {'vmap':>7} {'ss vmap':>8} {'ss grp':>7} {'x vmap':>7} "
          f"{'x vmap g':>9} | {'plain s':>8} {'vmap s':>7} {'ss vmap s':>10} {'ss grp s':>9} {'x vmap':>7} "
          f"{'x vmap g':>9} | {'peak MB p/v/s/g':>16}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in MODELS.items():
            path = Path(tmp) / f"{name}.py"
            path.write_text(text)
            for M in a.workers:
                measure(SIGNSIM, path, M, 2)  # compile or load the kernels
                runs: dict[str, list[dict]] = {"plain": [], "vmap": [], "ss": [], "grp": []}
                procs: dict[str, list[dict]] = {"plain": [], "vmap": [], "ss": [], "grp": []}
                for _ in range(a.repeats):  # in turn, so that the machine's drift falls on every contender alike
                    runs["plain"].append(measure(PLAIN, path, M, K))
                    runs["vmap"].append(measure(VMAP, path, M, K))
                    runs["ss"].append(measure(SIGNSIM, path, M, K))
                    runs["grp"].append(measure(SIGNSIM, path, M, K, "grouped"))
                    procs["ss"].append(measure(SIGNSIM_ONCE, path, M, K))
                    procs["grp"].append(measure(SIGNSIM_ONCE, path, M, K, "grouped"))
                procs["plain"], procs["vmap"] = runs["plain"], runs["vmap"]
                ms = {k: statistics.median(r["ms"] for r in v) for k, v in runs.items()}
                sec = {k: statistics.median(r["process"] for r in v) for k, v in procs.items()}
                mb = "/".join(f"{max(r['rss_mb'] for r in runs[k]):.0f}" for k in runs)
                print(f"{name:>6} {M:>4} {runs['ss'][0]['params']:>6} {ms['plain']:>7.2f} {ms['vmap']:>7.2f} "
                      f"{ms['ss']:>8.2f} {ms['grp']:>7.2f} {ms['vmap'] / ms['ss']:>7.2f} "
                      f"{ms['vmap'] / ms['grp']:>9.2f} | "
                      f"{sec['plain']:>8.2f} {sec['vmap']:>7.2f} {sec['ss']:>10.2f} {sec['grp']:>9.2f} "
                      f"{sec['vmap'] / sec['ss']:>7.2f} {sec['vmap'] / sec['grp']:>9.2f} | {mb:>16}")

if __name__ == "__main__":
    main()
