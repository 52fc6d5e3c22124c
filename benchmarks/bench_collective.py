"""The clock's α–β model against a real collective (issue 48; docs/theory.md §14.2): all-gathers of sign messages over
gloo between processes on 127.0.0.1, their measured time against the model's prediction for the same bytes.

    python benchmarks/bench_collective.py                 # 2 processes, messages of 10^3 to 10^7 signs
    python benchmarks/bench_collective.py --ranks 4

Needs torch (``pip install -e '.[torch]'``). Each rank packs d signs into d/8 bytes (``numpy.packbits``, the 1-bit
encoding signsim counts) and all-gathers them, ``--repeats`` times per size after a warm-up. The latency α and the
bandwidth B of the loopback link are fitted (least squares) to the point-to-point exchanges of the same sizes (rank 0
sends to rank 1 and waits for a 1-byte reply: α + n/B), and the model's ring all-gather, (p − 1)(α + n/B) for n bits
from each of p ranks, is compared with the measured all-gather: the ratio measured / predicted is printed per size.
Nothing is asserted (the loopback's speed varies with the machine's load).
"""

from __future__ import annotations

import argparse
import os
import platform
import socket
import statistics
import time


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, port: int, sizes: list[int], repeats: int, out) -> None:
    import numpy as np
    import torch
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    rng = np.random.default_rng(rank)
    results = {}
    for d in sizes:
        msg = torch.from_numpy(np.packbits(rng.standard_normal(d) > 0))  # d signs, d/8 bytes
        gathered = [torch.empty_like(msg) for _ in range(world)]
        reply = torch.zeros(1, dtype=torch.uint8)
        p2p, gather = [], []
        for i in range(repeats + 2):  # two warm-ups
            dist.barrier()
            if rank == 0:
                t = time.perf_counter()
                dist.send(msg, 1)
                dist.recv(reply, 1)
                if i >= 2:
                    p2p.append(time.perf_counter() - t)
            elif rank == 1:
                dist.recv(msg, 0)
                dist.send(reply, 0)
            dist.barrier()
            t = time.perf_counter()
            dist.all_gather(gathered, msg)
            if i >= 2:
                gather.append(time.perf_counter() - t)
        results[d] = (statistics.median(p2p) if p2p else None, statistics.median(gather))
    if rank == 0:
        out.put(results)
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10**3, 10**4, 10**5, 10**6, 10**7])
    a = ap.parse_args()
    import numpy as np
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    out = ctx.SimpleQueue()
    port = _free_port()
    procs = [ctx.Process(target=_worker, args=(r, a.ranks, port, a.sizes, a.repeats, out)) for r in range(a.ranks)]
    for p in procs:
        p.start()
    results = out.get()
    for p in procs:
        p.join()
    bits = np.array([8 * ((d + 7) // 8) for d in a.sizes], dtype=float)  # the bytes sent, in bits
    p2p = np.array([results[d][0] for d in a.sizes])
    # p2p = alpha + n/B (the 1-byte reply's own alpha folded into alpha): least squares on (1, n)
    coef, *_ = np.linalg.lstsq(np.column_stack([np.ones_like(bits), bits]), p2p, rcond=None)
    alpha, inv_b = float(coef[0]), float(coef[1])
    print(f"{platform.node()}: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; gloo on 127.0.0.1, "
          f"{a.ranks} ranks, median of {a.repeats}")
    print(f"fitted to the point-to-point exchanges: alpha = {alpha * 1e6:.1f} us, B = {1 / inv_b / 1e9:.2f} Gbit/s")
    print(f"{'signs d':>10} {'bits':>10} {'p2p s':>10} {'all-gather s':>13} {'model s':>10} {'measured/model':>15}")
    for d, n in zip(a.sizes, bits, strict=True):
        model = (a.ranks - 1) * (alpha + n * inv_b)
        measured = results[d][1]
        print(f"{d:>10} {int(n):>10} {results[d][0]:>10.2e} {measured:>13.2e} {model:>10.2e} {measured / model:>15.2f}")


if __name__ == "__main__":
    main()
