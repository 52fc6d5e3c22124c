"""``signsim check-spb``: per-coordinate success probabilities at a point, the SPB verdict, rho-norms
(docs/theory.md §1)."""

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


#: why the l^{1,2} quantity is not a bound for data oracles (and for the user's own per-sample gradients)
UNKNOWN_NOISE = "the oracle's noise is not known to be unimodal and symmetric (and unbiased for every worker)"


def l12_assumptions(problem, model) -> str | None:
    """Why the l^{1,2} quantity is not a lower bound on ||g||_rho here, or None when its assumptions hold
    (an unbiased oracle whose noise is unimodal and symmetric: an exact gradient plus such noise)."""
    if not problem.exact_oracle or problem.heterogeneous:
        return UNKNOWN_NOISE
    if not model.unimodal_symmetric:
        return f"{model.name} noise is not unimodal and symmetric"
    return None


def vote_quantities(est, cfg: RunConfig) -> dict[str, Any]:
    """E<g, vote> of the configured M workers from each worker's own law (Poisson-binomial), ties by --tie."""
    return vote_fields(est, cfg.sign_zero, cfg.tie, cfg.byzantine, cfg.attack)


def vote_fields(est, sign_zero: str, tie: str, byzantine: int = 0, attack: str = "invert") -> dict[str, Any]:
    """E<g, vote> of the M workers of ``est.laws.sampling`` (the first ``byzantine`` attacked), ties by ``tie``:
    ``rho_M_norm``, ``vote_agree``, ``vote_disagree``, ``vote_tie`` (or ``vote_note`` when not modelled)."""
    from signsim.diagnostics import spb
    from signsim.diagnostics.estimators import vote

    v = vote(est.laws, sign_zero, tie, byzantine, attack)
    if v is None:
        return {"rho_M_norm": None, "vote_note": f"the vote's law under --attack {attack} is not modelled"}
    g = est.grad
    s = np.sign(g)
    agree = np.where(s > 0, v.plus, np.where(s < 0, v.minus, np.nan))
    disagree = np.where(s > 0, v.minus, np.where(s < 0, v.plus, np.nan))
    return {"rho_M_norm": spb.inner_product(g, agree - disagree), "vote_agree": agree,
            "vote_disagree": disagree, "vote_tie": np.where(g != 0, v.tie, np.nan)}


#: the per-worker success probabilities go into the JSON when M x d is at most this
MAX_WORKER_MATRIX = 200_000


def estimate_fields(est, ver, top: int, not_bound: str | None) -> dict[str, Any]:
    """The fields of check-spb's document that describe the estimate at x and its verdict, from
    ``summarize``'s Estimate (with its worker laws) and ``spb.decide``'s Verdict; ``not_bound``: why the
    l^{1,2} quantity is not a bound here (None when it is). Shared with ``check-spb --grads``."""
    from signsim.diagnostics import spb

    g, rho, tau = est.grad, est.rho, est.tau
    nz = g != 0
    tested = ver.status[nz]
    cond = spb.sufficient_conditions(g, est.sigma, tau, not_bound is None)
    worst = np.argsort(np.where(nz, est.margin, np.inf), kind="stable")[: min(top, int(nz.sum()))]
    laws = est.laws
    # exact and closed form: no interval, the bounds are the margin itself (2 rho - 1 would be wrong where a
    # message can be 0 under --sign-zero zero)
    margin_low = est.margin_low if est.margin_low is not None else est.margin
    margin_high = est.margin_high if est.margin_high is not None else est.margin
    doc: dict[str, Any] = {
        "method_of_estimate": est.method,
        "sampling": {"scheme": laws.sampling.scheme, "description": laws.sampling.description,
                     "distinct_oracles": laws.sampling.distinct},
        "sign_zero": est.sign_zero,
        "tau": tau,
        "samples": est.samples,
        "samples_per_oracle": laws.samples,
        "dim": g.size,
        "zero_coordinates": int((~nz).sum()),
        "n_holds": int(np.sum(tested == "holds")),
        "n_violated": int(np.sum(tested == "violated")),
        "n_inconclusive": int(np.sum(tested == "inconclusive")),
        "verdict": ver.verdict,
        "rho_min": float(np.min(rho[nz])) if nz.any() else None,
        "rho": rho, "rho_low": est.rho_low, "rho_high": est.rho_high, "grad": g, "sigma": est.sigma,
        "sigma_minibatch": est.sigma_minibatch,
        "p_agree": est.p_agree, "p_disagree": est.p_disagree, "p_zero": est.p_zero,
        "message_disagree": est.disagree,
        "n_with_zeros": int(np.sum(np.nan_to_num(est.p_zero[nz]) > 0)),
        "status": ver.status.tolist(),
        "rho_norm": spb.inner_product(g, est.margin),
        "rho_norm_low": spb.inner_product(g, np.where(nz, margin_low, 0.0)),
        "rho_norm_high": spb.inner_product(g, np.where(nz, margin_high, 0.0)),
        "l1_norm": float(np.abs(g).sum()),
        "l2_norm": float(np.linalg.norm(g)),
        "l12_norm": spb.l12_norm(g, est.sigma / np.sqrt(tau)),
        "l12_is_bound": not_bound is None,
        "l12_note": not_bound or "a lower bound on ||g||_rho (unbiased, unimodal symmetric noise)",
        "sufficient": {k: (v if v is None else np.asarray(v).tolist()) for k, v in cond.items()},
        "worst": [int(i) for i in worst],
    }
    if ver.p_holds is not None:
        doc["p_holds_corrected"], doc["p_violated_corrected"] = ver.p_holds, ver.p_violated
    return doc


def workers_fields(est, sign_zero: str, tie: str, byzantine: int = 0, attack: str = "invert") -> dict[str, Any]:
    """The fields of the vote of the M workers of ``est.laws.sampling``: ``workers``, ``workers_differ``, the
    vote's law and E<g, vote>, and the identical-worker lower bound where it applies."""
    from signsim.diagnostics import spb
    from signsim.diagnostics.votes import message_law

    laws, g = est.laws, est.grad
    nz = g != 0
    M = int(laws.sampling.worker_class.size)
    differ = laws.sampling.distinct > 1 or byzantine > 0
    doc: dict[str, Any] = {"workers": M, "workers_differ": differ}
    doc.update(vote_fields(est, sign_zero, tie, byzantine, attack))
    identical = not differ and not np.any(message_law(laws.raw, sign_zero).zero[:, nz] > 0)
    rho_min = float(np.min(est.rho[nz])) if nz.any() else None
    doc["rho_M_lower_bound"] = spb.majority_lower_bound(g, est.rho, M) if identical and rho_min \
        and rho_min > 0.5 else None
    return doc


def check_spb(cfg: RunConfig, o: SpbOptions) -> dict[str, Any]:
    from signsim import noise, problems
    from signsim.diagnostics.estimators import choose, per_worker
    from signsim.diagnostics.point import resolve_point
    from signsim.diagnostics.votes import agree_disagree, message_law

    problem = problems.build(cfg)
    model, params = noise.for_config(cfg, problem.dim)
    method = choose(problem, model, cfg.batch_size, o.estimator)
    x, where = resolve_point(o.at, problem, cfg)
    est, ver = spb_quantities(problem, model, params, x, cfg, o, method)
    g = est.grad
    laws = est.laws
    doc: dict[str, Any] = {
        "signsim_version": __version__,
        "command": "check-spb",
        "config": cfg.to_dict(),
        "options": {k: v for k, v in asdict(o).items() if k != "workers_given"},
        "problem": problem.facts(),
        "point": where,
        **estimate_fields(est, ver, o.top, l12_assumptions(problem, model)),
    }
    differ = laws.sampling.distinct > 1 or cfg.byzantine > 0
    if o.workers_given or differ:
        doc.update(workers_fields(est, cfg.sign_zero, cfg.tie, cfg.byzantine, cfg.attack))
    if differ:
        doc["per_worker"] = per_worker(laws, cfg.sign_zero, cfg.byzantine)
        if cfg.workers * problem.dim <= MAX_WORKER_MATRIX:
            a, _ = agree_disagree(message_law(laws.raw, cfg.sign_zero), g[None, :])
            doc["rho_workers"] = a[laws.sampling.worker_class]
    return doc
