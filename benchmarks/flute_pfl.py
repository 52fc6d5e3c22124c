"""FLUTE LR-MNIST shape in pfl-research's simulation (FederatedDataset + PyTorchModel + FederatedAveraging
on a SimulatedBackend, one process).

1,000 users, a cohort of 10 a central iteration (drawn without replacement, as bench_flute does), 100 central
iterations, 6 local SGD steps of batch 10 (lr 0.1) per user, model nn.Linear(784, 10), central SGD lr 1 on the
averaged model difference (= FedAvg, server step 1).
Local steps: pfl runs ``local_num_steps`` batches of ``local_batch_size`` taken in order from the user's Dataset
(stopping early if the dataset runs out). Each time a user is sampled, its Dataset is built as 60 rows drawn with
replacement from the user's 60-row shard, so local_num_steps=6, local_batch_size=10 (local_num_epochs=None)
gives exactly 6 steps of 10 rows drawn with replacement, as bench_flute's contenders draw them.
Data: bench_flute.py's (DATA: make_data, seed 0), sharded as its hand-written contenders shard it (SETUP:
default_rng(1).permutation, torch.manual_seed(0) before nn.Linear's initialisation).
Run by bench_flute.py (``--frameworks PYTHON``): python flute_pfl.py CLIENTS ROUNDS; prints one JSON line
(``loop``: the training loop's seconds).
"""
import json
import sys
import time

import numpy as np
import torch
from bench_flute import BATCH, CLASSES, DATA, LOCAL_STEPS, LR, PER_ROUND, D, rows_line
from torch import nn

M = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
K = int(sys.argv[2]) if len(sys.argv) > 2 else 100


_data: dict = {}
exec(rows_line(M) + DATA, _data)  # the data every contender of bench_flute.py trains on
make_data = _data["make_data"]


def main():
    import pfl
    from pfl.aggregate.simulate import SimulatedBackend
    from pfl.algorithm import FederatedAveraging, NNAlgorithmParams
    from pfl.data.dataset import Dataset
    from pfl.data.federated_dataset import FederatedDataset
    from pfl.hyperparam import NNTrainHyperParams
    from pfl.metrics import Weighted
    from pfl.model.pytorch import PyTorchModel

    X, y = make_data()
    rng = np.random.default_rng(1)
    shards = rng.permutation(X.shape[0])[: X.shape[0] // M * M].reshape(M, -1)
    Xs, ys = torch.as_tensor(X[shards]), torch.as_tensor(y[shards])  # (M, rows per client, 784), (M, rows)
    torch.manual_seed(0)

    class Logistic(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(D, CLASSES)

        def forward(self, x):
            return self.linear(x)

        def loss(self, x, y, eval=False):
            return nn.functional.cross_entropy(self(x), y)

        @torch.no_grad()
        def metrics(self, x, y, eval=False):
            return {"loss": Weighted(nn.functional.cross_entropy(self(x), y, reduction="sum").item(), len(y))}

    net = Logistic()

    def make_dataset_fn(user_id):  # 6 minibatches of 10 rows, drawn with replacement from the user's shard
        rows = torch.as_tensor(rng.integers(0, Xs.shape[1], LOCAL_STEPS * BATCH))
        return Dataset(raw_data=[Xs[user_id][rows], ys[user_id][rows]], user_id=user_id)

    class CohortSampler:  # callable() -> user_id; 10 distinct users per central iteration
        def __init__(self):
            self.queue = []

        def __call__(self):
            if not self.queue:
                self.queue = list(rng.choice(M, PER_ROUND, replace=False))
            return int(self.queue.pop())

    data = FederatedDataset(make_dataset_fn, CohortSampler())
    model = PyTorchModel(model=net, local_optimizer_create=torch.optim.SGD,
                         central_optimizer=torch.optim.SGD(net.parameters(), lr=1.0))
    backend = SimulatedBackend(training_data=data, val_data=data, postprocessors=[])
    # pfl evaluates at iteration 0 only
    params = NNAlgorithmParams(central_num_iterations=K, evaluation_frequency=K + 1,
                               train_cohort_size=PER_ROUND, val_cohort_size=0)
    train = NNTrainHyperParams(local_learning_rate=LR, local_num_epochs=None, local_num_steps=LOCAL_STEPS,
                               local_batch_size=BATCH)
    Xt, yt = torch.as_tensor(X), torch.as_tensor(y)
    with torch.no_grad():
        initial = nn.functional.cross_entropy(net(Xt), yt).item()
    t0 = time.perf_counter()
    FederatedAveraging().run(algorithm_params=params, backend=backend, model=model, model_train_params=train,
                             callbacks=[])
    loop = time.perf_counter() - t0
    with torch.no_grad():
        final = nn.functional.cross_entropy(net(Xt), yt).item()
    print(json.dumps({"contender": "pfl-research simulation", "loop": loop, "initial_loss": initial,
                      "final_loss": final, "framework_version": f"pfl {pfl.__version__}", "clients": M,
                      "rounds": K}), flush=True)


if __name__ == "__main__":
    main()
