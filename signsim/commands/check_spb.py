"""``signsim check-spb``: per-coordinate success probabilities at a point, the SPB verdict, rho-norms
(math.md §1)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from signsim import __version__
from signsim.config import RunConfig
from signsim.errors import InputError


@dataclass
class SpbOptions:
    at: str = "init"
    estimator: str = "auto"
    samples: int = 2000
    confidence: float = 0.95
    interval: str = "wilson"
    correction: str = "holm"
    top: int = 10
    workers_given: bool = False

    @classmethod
    def build(cls, workers_given: bool = False, **given: Any) -> SpbOptions:
        from signsim.diagnostics.intervals import CORRECTIONS, INTERVALS

        o = cls(workers_given=workers_given, **{k: v for k, v in given.items() if v is not None})
        if not 2 <= o.samples <= 10**9:
            raise InputError(f"--samples {o.samples}: must lie between 2 and 10^9")
        if not 0 < o.confidence < 1:
            raise InputError(f"--confidence {o.confidence}: must lie in (0, 1)")
        if o.interval not in INTERVALS:
            raise InputError(f"--interval {o.interval}: choose from {', '.join(INTERVALS)}")
        if o.correction not in CORRECTIONS:
            raise InputError(f"--correction {o.correction}: choose from {', '.join(CORRECTIONS)}")
        if not 0 <= o.top <= 10**6:
            raise InputError(f"--top {o.top}: must lie between 0 and 10^6")
        return o


def spb_quantities(problem, model, params, x, cfg: RunConfig, o: SpbOptions, method: str, salt: int = 0):
    """Estimate, verdict and norms at x: the numbers both check-spb and ``run --track-spb`` report."""
    from signsim.diagnostics import spb
    from signsim.diagnostics.estimators import estimate

    est = estimate(problem, model, params, x, cfg.batch_size, method, o.samples, o.confidence, o.interval,
                   cfg.sign_zero, cfg.seed, cfg.workers, salt)
    ver = spb.decide(est, o.confidence, o.correction)
    return est, ver


def check_spb(cfg: RunConfig, o: SpbOptions) -> dict[str, Any]:
    from signsim import noise, problems
    from signsim.commands.run import problem_info
    from signsim.diagnostics import spb
    from signsim.diagnostics.estimators import choose
    from signsim.diagnostics.point import resolve_point

    problem = problems.build(cfg)
    model, params = noise.parse(cfg.noise or "none")
    method = choose(problem, model, cfg.batch_size, o.estimator)
    x, where = resolve_point(o.at, problem, cfg)
    est, ver = spb_quantities(problem, model, params, x, cfg, o, method)
    g, rho = est.grad, est.rho
    nz = g != 0
    tested = ver.status[nz]
    cond = spb.sufficient_conditions(g, est.sigma, cfg.batch_size, model.unimodal_symmetric
                                     if problem.exact_oracle else None)
    worst = np.argsort(np.where(nz, rho, np.inf), kind="stable")[: min(o.top, int(nz.sum()))]
    doc: dict[str, Any] = {
        "signsim_version": __version__,
        "command": "check-spb",
        "config": cfg.to_dict(),
        "options": {k: v for k, v in asdict(o).items() if k != "workers_given"},
        "problem": problem_info(problem),
        "point": where,
        "method_of_estimate": method,
        "tau": cfg.batch_size,
        "samples": est.samples,
        "dim": problem.dim,
        "zero_coordinates": int((~nz).sum()),
        "n_holds": int(np.sum(tested == "holds")),
        "n_violated": int(np.sum(tested == "violated")),
        "n_inconclusive": int(np.sum(tested == "inconclusive")),
        "verdict": ver.verdict,
        "rho_min": float(np.min(rho[nz])) if nz.any() else None,
        "rho": rho, "rho_low": est.rho_low, "rho_high": est.rho_high, "grad": g, "sigma": est.sigma,
        "status": ver.status.tolist(),
        "rho_norm": spb.rho_norm(g, rho),
        "rho_norm_low": spb.rho_norm(g, np.where(nz, est.rho_low, 0.5)),
        "rho_norm_high": spb.rho_norm(g, np.where(nz, est.rho_high, 0.5)),
        "l1_norm": float(np.abs(g).sum()),
        "l2_norm": float(np.linalg.norm(g)),
        "l12_norm": spb.l12_norm(g, est.sigma / np.sqrt(cfg.batch_size)),
        "sufficient": {k: (v if v is None else np.asarray(v).tolist()) for k, v in cond.items()},
        "worst": [int(i) for i in worst],
    }
    if ver.p_holds is not None:
        doc["p_holds_corrected"], doc["p_violated_corrected"] = ver.p_holds, ver.p_violated
    if o.workers_given:
        M = cfg.workers
        doc["workers"] = M
        doc["rho_M_norm"] = spb.rho_M_norm(g, rho, M)
        doc["rho_M_lower_bound"] = spb.majority_lower_bound(g, rho, M) if doc["rho_min"] and doc["rho_min"] > 0.5 \
            else None
    return doc
