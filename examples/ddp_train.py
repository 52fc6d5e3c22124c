"""Real distributed training with signsim's stages: a model file trained by DDP with ``signsim.torch.comm_hook``.

    torchrun --nproc-per-node 2 examples/ddp_train.py --model examples/digits_mlp.py \\
        --steps 200 --lr 0.001 --compressor sign --aggregate majority

Each rank is worker ``rank`` of a signsim run with the same ``--seed``: the same data split (``--split``), starting
point and minibatch rows (drawn from the worker's own stream), so that with one gradient bucket the ranks follow the
simulated run ``signsim run --model FILE --workers WORLD --compressor C --aggregate A --method sgd`` step for step.
Rank 0 prints a JSON line: the final loss on the training set, the bits each rank sent and received, and (with
``--out FILE``) writes the final parameters there.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from signsim.torch import ddp


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--split", default="shared")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compressor", default="sign")
    ap.add_argument("--aggregate", default="majority")
    ap.add_argument("--error-feedback", default="none")
    ap.add_argument("--sign-zero", default="random")
    ap.add_argument("--tie", default="random")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    from signsim.interface import config
    from signsim.problems import build

    problem = build(config.resolve(dict(model=a.model, workers=world, seed=a.seed, batch_size=a.batch_size,
                                        split=a.split, test_fraction=0.0)))
    grads = problem.external  # the same split, start and row draws as the simulated run
    net = grads.oracle.module
    state = ddp.HookState(a.compressor, a.aggregate, a.error_feedback, a.sign_zero, a.tie, seed=a.seed, model=net)
    model = DDP(net, bucket_cap_mb=1024)  # one bucket for a small model: the simulated run's draws, in its order
    model.register_comm_hook(state, ddp.comm_hook)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    X, y, loss = grads.oracle.X_train, grads.oracle.y_train, grads.oracle.loss_fn
    for _ in range(a.steps):
        rows = torch.from_numpy(grads.rows(np.array([rank]), [state.gen])[0, 0])
        opt.zero_grad()
        loss(model(X[rows]), y[rows]).backward()
        opt.step()
    if rank == 0:
        trained = [p.detach().reshape(-1) for p in net.parameters() if p.requires_grad]
        x = torch.cat(trained).to(torch.float64).numpy()
        print(json.dumps({"loss": grads.oracle.loss(x), "bits_up_per_rank": state.bits_up,
                          "bits_down_per_rank": state.bits_down, "steps": a.steps, "world_size": world}))
        if a.out:
            np.save(a.out, x)
    dist.barrier()  # every rank done before the group goes (gloo aborts a rank whose peer left mid-teardown)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
    # leave without the interpreter's finalization: gloo's threads may still hold tensors whose release needs the
    # GIL while the interpreter is torn down, which aborted a rank once in CI after its work was done ("terminate
    # called without an active exception"); what the process owes is written, and flushed here
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
