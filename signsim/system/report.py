"""The results' ``system`` section (docs/theory.md §14.3): the model as resolved, the simulated time, its parts on
the rounds' critical paths, and the workers' idle time. Pure Python over the engine's arrays."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from signsim.system.model import SystemModel


def report(model: SystemModel, total: float, parts: dict[str, float], idle: np.ndarray | None,
           rounds: int) -> dict[str, Any]:
    """``total``: the clock's seconds after ``rounds`` rounds; ``parts``: their parts on the critical paths
    (``compute``, ``upload``, ``download``); ``idle``: each worker's idle seconds (None: not known)."""
    total = float(total)
    parts = {k: float(v) for k, v in parts.items()}
    out: dict[str, Any] = {
        "topology": model.topology,
        "compute": model.compute.spec, "uplink": model.uplink.spec, "downlink": model.downlink.spec,
        "latency": model.latency, "server_bandwidth": _finite(model.server_bandwidth),
        "time": total,
        "time_per_round": total / rounds if rounds else None,
        "seconds": parts,
        "shares": {k: (v / total if total > 0 else None) for k, v in parts.items()},
    }
    if idle is not None and idle.size:
        out["idle"] = {"mean": float(idle.mean()), "max": float(idle.max()),
                       "share_mean": float(idle.mean() / total) if total > 0 else None}
    return out


def _finite(v: float) -> float | None:
    """JSON has no inf: an unlimited link is None."""
    return v if math.isfinite(v) else None
