"""Yin et al.'s replicated-data experiment at small scale (docs/theory.md §6): for data replicated r = 1, 2, 4, 8
times and batch sizes B = 1, 2, 4, ..., the iterations mini-batch SGD needs to reach a target loss, the
measured speedup T_1 / T_B beside the predicted B B_S / (B + B_S - 1).

B_S is computed exactly where the B = 1 run first reaches the target (the regime that decides the
iteration count); replicating every sample r times divides Delta_S by r and leaves B_S unchanged.
The step size grows with the batch (``lr-scaling = "linear"``: gamma_B = min(B gamma_1, lr-max)) or stays.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from signsim import __version__
from signsim.interface.experiment_config import ReplicationExperiment


def replication(base: dict[str, Any], e: ReplicationExperiment,
                progress: Callable[[str], Callable[[int, int], None] | None] | None = None) -> dict[str, Any]:
    """The experiment's rows, one per (replication, B). Ctrl-C or SIGTERM stops it within about a second: the
    document then keeps the rows of the batch sizes measured completely and has status ``interrupted``."""
    from signsim.commands.diversity import DiversityOptions, diversity
    from signsim.commands.run import iterations_to_target
    from signsim.interface.config import resolve
    from signsim.interface.interrupts import acknowledge

    lr1 = resolve(base).lr
    rows: list[dict[str, Any]] = []
    status = "ok"
    for r in e.replicate:
        iters: dict[int, list[int | None]] = {}
        B_S = delta_S = None
        try:
            iters = iterations_to_target({**base, "replicate": r}, e, progress, f"replicate {r}")
            reached = [h for h in iters[1] if h is not None]
            if reached:
                at = f"run:{reached[0]}"
                cfg = resolve({**base, "replicate": r, "batch_size": 1, "lr": lr1, "seed": int(base.get("seed", 0))})
                d = diversity(cfg, DiversityOptions(at=at))
                B_S, delta_S = d["B_S"], d["delta_S"]
        except KeyboardInterrupt as stop:
            acknowledge()
            status = "interrupted"
            iters = getattr(stop, "hits", iters)
        rows += _rows(r, iters, e, lr1, B_S, delta_S)
        if status == "interrupted":
            break
    return {"signsim_version": __version__, "command": "diversity-replication", "status": status, "base": base,
            "experiment": e.__dict__, "rows": rows}


def _rows(r: int, iters: dict[int, list[int | None]], e: ReplicationExperiment, lr1: float, B_S, delta_S) \
        -> list[dict[str, Any]]:
    """The rows of replication r for the batch sizes measured (all of ``e.batch_sizes`` unless interrupted)."""
    from signsim.diagnostics.diversity import predicted_speedup

    t1 = iters.get(1, [])
    reached = [h for h in t1 if h is not None]
    mean1 = float(np.mean(reached)) if t1 and len(reached) == len(t1) else None
    rows = []
    for B in e.batch_sizes:
        if B not in iters:
            continue
        hits = iters[B]
        ok = all(h is not None for h in hits)
        mean_b = float(np.mean(hits)) if ok else None
        rows.append({
            "replicate": r, "B": B, "lr": min(B * lr1, e.lr_max) if e.lr_scaling == "linear" else lr1,
            "iters_to_target": mean_b, "runs_reaching_target": sum(h is not None for h in hits),
            "measured_speedup": mean1 / mean_b if (mean1 and mean_b) else None,
            "predicted_speedup": float(predicted_speedup(B, B_S)) if B_S is not None else None,
            "B_S": B_S, "delta_S": delta_S,
        })
    return rows
