"""FLUTE LR-MNIST shape in Flower's simulation (flwr.simulation.run_simulation, Ray backend).

1,000 virtual SuperNodes (one NumPyClient each), FedAvg sampling 10 of 1,000 a round (fraction_fit=0.01,
no federated evaluation), 100 rounds, 6 local SGD steps (batch 10, lr 0.1) per client, model nn.Linear(784, 10).
Data: bench_flute.py's (DATA: make_data, seed 0), sharded as its hand-written contenders shard it (SETUP:
default_rng(1).permutation, torch.manual_seed(0) before nn.Linear's initialisation).
Run by bench_flute.py (``--frameworks PYTHON``): python flute_flower.py CLIENTS ROUNDS; prints one JSON line
(``loop``: the training loop's seconds).
"""
import os
import sys

os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")
import json
import random
import tempfile
import time

import numpy as np
import torch
from bench_flute import BATCH, CLASSES, DATA, LOCAL_STEPS, LR, PER_ROUND, D, rows_line
from torch import nn

M = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
K = int(sys.argv[2]) if len(sys.argv) > 2 else 100
SHARDS_PATH = os.path.join(tempfile.gettempdir(), f"flute_flower_shards_{os.getpid()}")  # .X.npy / .y.npy


_data: dict = {}
exec(rows_line(M) + DATA, _data)  # the data every contender of bench_flute.py trains on
make_data = _data["make_data"]


# ---- client side (runs in Ray actors; shards memory-mapped from the files the driver wrote) ----
_cache = {}


def _shards():
    if "X" not in _cache:
        _cache["X"] = np.load(SHARDS_PATH + ".X.npy", mmap_mode="r")
        _cache["y"] = np.load(SHARDS_PATH + ".y.npy", mmap_mode="r")
    return _cache["X"], _cache["y"]


def client_fn(context):
    from flwr.client import NumPyClient

    pid = int(context.node_config["partition-id"])

    class FluteClient(NumPyClient):
        def fit(self, parameters, config):
            Xs, ys = _shards()
            Xc, yc = torch.as_tensor(np.array(Xs[pid])), torch.as_tensor(np.array(ys[pid]))
            net = nn.Linear(D, CLASSES)
            net.weight.data.copy_(torch.as_tensor(parameters[0]))
            net.bias.data.copy_(torch.as_tensor(parameters[1]))
            opt = torch.optim.SGD(net.parameters(), lr=LR)
            rng = np.random.default_rng([pid, int(config["round"])])  # minibatches drawn with replacement
            for _ in range(LOCAL_STEPS):
                rows = torch.as_tensor(rng.integers(0, Xc.shape[0], BATCH))
                opt.zero_grad()
                nn.functional.cross_entropy(net(Xc[rows]), yc[rows]).backward()
                opt.step()
            return [net.weight.detach().numpy(), net.bias.detach().numpy()], BATCH * LOCAL_STEPS, {}

    return FluteClient().to_client()


def main():
    import flwr
    from flwr.client import ClientApp
    from flwr.common import ndarrays_to_parameters
    from flwr.server import ServerApp, ServerAppComponents, ServerConfig
    from flwr.server.strategy import FedAvg
    from flwr.simulation import run_simulation

    X, y = make_data()
    rng = np.random.default_rng(1)
    shards = rng.permutation(X.shape[0])[: X.shape[0] // M * M].reshape(M, -1)
    np.save(SHARDS_PATH + ".X.npy", X[shards])
    np.save(SHARDS_PATH + ".y.npy", y[shards])
    torch.manual_seed(0)
    net = nn.Linear(D, CLASSES)
    init = [net.weight.detach().numpy().copy(), net.bias.detach().numpy().copy()]
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)
    out = {}

    def train_loss(w):
        with torch.no_grad():
            return nn.functional.cross_entropy(Xt @ torch.as_tensor(w[0]).T + torch.as_tensor(w[1]), yt).item()

    def evaluate_fn(server_round, parameters, config):  # centralised: only round 0 and the last round
        if server_round == 0:
            out["initial_loss"] = train_loss(parameters)
            out["t0"] = time.perf_counter()
        elif server_round == K:
            out["t1"] = time.perf_counter()
            out["final_loss"] = train_loss(parameters)
        return None

    def fit_config(server_round):  # called as each round starts
        out.setdefault("round_starts", {})[server_round] = time.perf_counter()
        return {"round": server_round}

    def server_fn(context):
        strategy = FedAvg(fraction_fit=PER_ROUND / M, fraction_evaluate=0.0, min_fit_clients=PER_ROUND,
                          min_evaluate_clients=0, min_available_clients=M, evaluate_fn=evaluate_fn,
                          on_fit_config_fn=fit_config,
                          initial_parameters=ndarrays_to_parameters(init))
        return ServerAppComponents(strategy=strategy, config=ServerConfig(num_rounds=K))

    random.seed(1)  # Flower's client manager samples with random.sample
    t_sim = time.perf_counter()
    try:
        run_simulation(server_app=ServerApp(server_fn=server_fn), client_app=ClientApp(client_fn=client_fn),
                       num_supernodes=M, backend_name="ray",
                       backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0},
                                       "init_args": {"num_cpus": os.cpu_count(), "include_dashboard": False,
                                                     "log_to_driver": False}})
    finally:
        for ext in (".X.npy", ".y.npy"):
            if os.path.exists(SHARDS_PATH + ext):
                os.remove(SHARDS_PATH + ext)
    t_sim = time.perf_counter() - t_sim
    print(json.dumps({"contender": "Flower simulation (Ray backend)", "loop": out["t1"] - out["t0"],
                      "run_simulation_s": t_sim,
                      "round1_s": out["round_starts"].get(2, out["t1"]) - out["round_starts"][1],
                      "initial_loss": out["initial_loss"],
                      "final_loss": out["final_loss"], "framework_version": f"flwr {flwr.__version__}",
                      "clients": M, "rounds": K}), flush=True)


if __name__ == "__main__":
    main()
