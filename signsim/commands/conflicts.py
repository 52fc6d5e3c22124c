"""Gradient diversity of sparse problems against their conflict degree (docs/theory.md §6.2): exact B_S at a point of
least squares (or logistic regression) on generated sparse data ``synthetic:sparse`` whose samples each share a
coordinate with exactly ``conflict`` others, for several conflict degrees, beside the sparse-conflict bound
B_S >= n / (conflict + 1) [reconstructed, §6.2].
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from signsim import __version__
from signsim.interface.experiment_config import ConflictsExperiment


def sparse_spec(n: int, s: int, conflict: int, values: str, labels: str, noise: float, seed: int) -> str:
    return (f"synthetic:sparse:n={n}:s={s}:conflict={conflict}:values={values}:labels={labels}:noise={noise:g}"
            f":seed={seed}")


def conflicts(base: dict[str, Any], e: ConflictsExperiment,
              progress: Callable[[str], Callable[[int, int], None] | None] | None = None) -> dict[str, Any]:
    from signsim.commands.diversity import DiversityOptions, diversity
    from signsim.errors import InputError
    from signsim.interface.config import resolve

    problem = base.get("problem")
    if problem not in ("least-squares", "logistic"):
        raise InputError(f"[experiment] kind = \"conflicts\": needs problem = \"least-squares\" or \"logistic\" "
                         f"(a GLM on synthetic:sparse data), not {problem!r}")
    rows = []
    for values in e.values:
        for c in e.conflicts:
            for seed in range(e.seeds):
                data = sparse_spec(e.samples, e.s, c, values, e.labels, e.noise, seed)
                cfg = resolve({**base, "data": data, "test_fraction": 0.0, "standardize": False,
                               "intercept": False})
                doc = diversity(cfg, DiversityOptions(at=e.at, estimator="exact"))
                bound = e.samples / (c + 1)
                B_S = None if doc["B_S"] is None else float(doc["B_S"])
                rows.append({"values": values, "conflict": c, "seed": seed, "n": doc["n"], "B_S": B_S,
                             "delta_S": None if doc["delta_S"] is None else float(doc["delta_S"]), "bound": bound,
                             "ratio": None if B_S is None else B_S / bound})
                if progress is not None and (tick := progress(f"{values}, conflict {c}")) is not None:
                    tick(1, 1)
    return {"signsim_version": __version__, "command": "diversity-conflicts", "base": base,
            "experiment": e.__dict__, "rows": rows,
            "bound_holds": all(r["B_S"] is None or r["B_S"] >= r["bound"] * (1 - 1e-12) for r in rows)}
