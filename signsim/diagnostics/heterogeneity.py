"""How far each worker's oracle is from being unbiased for the global gradient (docs/theory.md §9).

For worker m, grad f_m(x) = E g_hat_m(x) is the expectation of the stochastic gradient it actually draws: the
mean gradient of its shard (shard splits), the split-batch mixture (1/2)(mean of the first group + mean of the
second), the exact local gradient (partitioned objectives such as vote-trap), or grad f itself (``shared``
sampling, homogeneous synthetic oracles). Reported: the per-worker bias ||grad f_m - grad f||_2 and the
bounded-gradient-dissimilarity constant zeta^2 = (1/M) sum_m ||grad f_m - grad f||^2 at x. SSDM's guarantee
needs every bias to be 0. On split data the report carries the split's own description (``split``: each worker's
sample and label counts, ``signsim.data.splits.report``), which does not depend on x.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: a bias at most this fraction of max(||grad f||, 1) counts as 0 (rounding of the data pass)
RELATIVE_TOLERANCE = 1e-10
#: above this many workers the per-worker list is summarized
MAX_LISTED = 64


def worker_means(problem, x: np.ndarray, workers: int) -> tuple[np.ndarray | None, str]:
    """E g_hat_m for every worker (M x d), computed exactly, and where it came from; None when every worker's
    oracle is unbiased by construction."""
    from signsim.data.splits import SHARD, SPLIT_BATCH
    from signsim.diagnostics.diversity_estimators import exact
    from signsim.diagnostics.estimators import LOCAL_EXACT

    fs = problem.finite_sum
    x = np.ascontiguousarray(x, dtype=np.float64)
    if fs is not None:
        split = fs.split
        if split.mode == SHARD:
            groups = [split.group(m) for m in range(split.groups)]
            if problem.external is not None:  # a PyTorch model: the shards' gradients, batched
                means = problem.external.group_means(x, groups)
            else:
                means = np.array([exact(problem, x, g)[1] / len(g) for g in groups])
            return means[np.arange(workers) % split.groups], f"{split.name}: the mean gradient of each shard"
        if split.mode == SPLIT_BATCH:
            halves = [exact(problem, x, split.group(k))[1] / len(split.group(k)) for k in range(2)]
            mix = (halves[0] + halves[1]) / 2
            return np.tile(mix, (workers, 1)), "split-batch: (1/2)(mean of the first group + mean of the second)"
        return None, "shared: every worker samples all rows uniformly (unbiased)"
    if problem.name in LOCAL_EXACT:
        return (np.array([problem.oracle_ref(x, m, None, 1) for m in range(workers)]),
                "the exact gradient of each worker's local objective")
    if problem.heterogeneous:
        return None, "not measured: the workers' local objectives are not available to the diagnostics"
    return None, "every worker draws from the same oracle (unbiased by construction)"


def measure(problem, x: np.ndarray, workers: int) -> dict[str, Any]:
    """Per-worker bias, zeta^2, and whether every oracle is unbiased for grad f at x."""
    from signsim.diagnostics.estimators import true_gradient

    g = true_gradient(problem, np.ascontiguousarray(x, dtype=np.float64))
    gn = float(np.linalg.norm(g))
    means, source = worker_means(problem, x, workers)
    out: dict[str, Any] = {"source": source, "grad_norm": gn, "workers": workers}
    if problem.finite_sum is not None:
        from signsim.data.splits import report

        out["split"] = report(problem.finite_sum.split)
    if means is None:
        measured = not (problem.heterogeneous and problem.finite_sum is None)
        out.update(bias=None, zeta_sq=0.0 if measured else None, max_bias=0.0 if measured else None,
                   unbiased=measured)
        return out
    bias = np.linalg.norm(means - g[None, :], axis=1)
    tol = RELATIVE_TOLERANCE * max(gn, 1.0)
    out.update(zeta_sq=float(np.mean(bias**2)), max_bias=float(bias.max()), min_bias=float(bias.min()),
               relative_max_bias=float(bias.max()) / gn if gn > 0 else None, unbiased=bool(bias.max() <= tol))
    if workers <= MAX_LISTED:
        out["bias"] = bias
    else:
        out["bias"] = None
        out["bias_quantiles"] = dict(zip(("min", "q25", "median", "q75", "max"),
                                         np.quantile(bias, [0, 0.25, 0.5, 0.75, 1]).tolist(), strict=True))
    if problem.finite_sum is not None and problem.finite_sum.split.name == "split-batch":
        out["oracle_bias"] = float(bias[0])  # ||E g_hat - grad f||, the same for every worker
    return out


def ssdm_warning(h: dict[str, Any], problem_name: str) -> str | None:
    """The warning SSDM's runs carry when some worker's oracle is not unbiased for grad f (v6 correction)."""
    if h["unbiased"]:
        return None
    if h["max_bias"] is None:
        what = "the workers optimize different local objectives"
    else:
        rel = f" ({h['relative_max_bias']:.3g} of ||grad f||)" if h.get("relative_max_bias") is not None else ""
        what = (f"at x_0 the largest worker bias ||E g_hat_m - grad f|| is {h['max_bias']:.4g}{rel}, "
                f"zeta^2 = {h['zeta_sq']:.4g} ({h['source']})")
    return (f"ssdm on {problem_name}: some worker's stochastic gradient is not unbiased for the global gradient: "
            f"{what}; SSDM's convergence proof needs every worker unbiased for the same global objective (the "
            "claim for heterogeneous data was withdrawn in the correction, arXiv:1905.12938v6)")
