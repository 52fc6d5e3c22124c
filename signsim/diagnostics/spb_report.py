"""What the SPB diagnostics report at a point (docs/theory.md §1, §9): the estimate and its verdict, and the
fields that describe them. ``check-spb``, ``check-spb --grads`` (``samples.spb_document``) and the run's
SPB track (``tracking.SpbTrack``) all compute their numbers here."""

from __future__ import annotations

from typing import Any

import numpy as np

#: why the l^{1,2} quantity is not a bound for data oracles (and for the user's own per-sample gradients)
UNKNOWN_NOISE = "the oracle's noise is not known to be unimodal and symmetric (and unbiased for every worker)"


def at_point(problem, model, params, x, cfg, method: str, samples: int, confidence: float, interval: str,
             correction: str, salt: int = 0):
    """The estimate of the success probabilities at x (``estimators.estimate`` with ``method``) and the SPB
    verdict on it (``spb.decide``), for the run configured by ``cfg``."""
    from signsim.diagnostics import spb
    from signsim.diagnostics.estimators import estimate

    est = estimate(problem, model, params, x, cfg.batch_size, method, samples, confidence, interval,
                   cfg.sign_zero, cfg.seed, cfg.workers, salt)
    ver = spb.decide(est, confidence, correction)
    return est, ver


def l12_assumptions(problem, model, params=None, batch_size=1) -> str | None:
    """Why the l^{1,2} quantity is not a lower bound on ||g||_rho here, or None when its assumptions hold
    (an unbiased oracle whose noise is unimodal and symmetric with a finite variance: an exact gradient plus such
    noise; with ``batch_size`` full under ``--split shared`` a data problem's oracle is one, docs/theory.md §5)."""
    from signsim.data.splits import SHARED
    from signsim.noise.base import no_variance
    from signsim.problems.sampling import is_full

    if params is not None and (why := no_variance(model, params)):
        return why
    exact = problem.exact_oracle or (is_full(batch_size) and problem.finite_sum is not None
                                     and problem.finite_sum.split.mode == SHARED)
    if not exact or problem.heterogeneous:
        return UNKNOWN_NOISE
    if not model.unimodal_symmetric:
        return f"{model.name} noise is not unimodal and symmetric"
    return None


def vote_fields(est, sign_zero: str, tie: str, byzantine: int = 0, attack: str = "invert",
                clients: int | None = None) -> dict[str, Any]:
    """E<g, vote> of the M workers of ``est.laws.sampling`` (the first ``byzantine`` attacked), ties by ``tie``:
    ``rho_M_norm``, ``vote_agree``, ``vote_disagree``, ``vote_tie`` (or ``vote_note`` when not modelled); with
    ``clients`` S < M, of the vote of S workers sampled uniformly without replacement (exact over the sampling,
    docs/theory.md §12.1)."""
    from signsim.diagnostics import spb
    from signsim.diagnostics.estimators import vote

    v = vote(est.laws, sign_zero, tie, byzantine, attack, clients)
    if v is None:
        return {"rho_M_norm": None, "vote_note": f"the vote's law under --attack {attack} is not modelled"}
    g = est.grad
    s = np.sign(g)
    agree = np.where(s > 0, v.plus, np.where(s < 0, v.minus, np.nan))
    disagree = np.where(s > 0, v.minus, np.where(s < 0, v.plus, np.nan))
    return {"rho_M_norm": spb.inner_product(g, agree - disagree), "vote_agree": agree,
            "vote_disagree": disagree, "vote_tie": np.where(g != 0, v.tie, np.nan)}


def estimate_fields(est, ver, top: int, not_bound: str | None, no_var: str | None = None) -> dict[str, Any]:
    """The fields of check-spb's document that describe the estimate at x and its verdict, from
    ``summarize``'s Estimate (with its worker laws) and ``spb.decide``'s Verdict; ``not_bound``: why the
    l^{1,2} quantity is not a bound here (None when it is); ``no_var``: why the noise has no finite variance
    (``noise.base.no_variance``; None when it has one), which makes every sigma-based field null, with
    ``sigma_note`` saying why (docs/theory.md §10.1). Shared with ``check-spb --grads``."""
    from signsim.diagnostics import spb

    g, rho, tau = est.grad, est.rho, est.tau
    nz = g != 0
    tested = ver.status[nz]
    cond = spb.sufficient_conditions(g, est.sigma, tau, not_bound is None)
    if no_var:
        cond = dict.fromkeys(cond)
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
        "rho": rho, "rho_low": est.rho_low, "rho_high": est.rho_high, "grad": g,
        "sigma": None if no_var else est.sigma,
        "sigma_minibatch": None if no_var else est.sigma_minibatch,
        "sigma_note": no_var,
        "p_agree": est.p_agree, "p_disagree": est.p_disagree, "p_zero": est.p_zero,
        "message_disagree": est.disagree,
        "n_with_zeros": int(np.sum(np.nan_to_num(est.p_zero[nz]) > 0)),
        "status": ver.status.tolist(),
        "rho_norm": spb.inner_product(g, est.margin),
        "rho_norm_low": spb.inner_product(g, np.where(nz, margin_low, 0.0)),
        "rho_norm_high": spb.inner_product(g, np.where(nz, margin_high, 0.0)),
        "l1_norm": float(np.abs(g).sum()),
        "l2_norm": float(np.linalg.norm(g)),
        "l12_norm": None if no_var else spb.l12_norm(g, est.sigma / np.sqrt(tau)),
        "l12_is_bound": not_bound is None,
        "l12_note": not_bound or "a lower bound on ||g||_rho (unbiased, unimodal symmetric noise)",
        "sufficient": {k: (v if v is None else np.asarray(v).tolist()) for k, v in cond.items()},
        "worst": [int(i) for i in worst],
    }
    if ver.p_holds is not None:
        doc["p_holds_corrected"], doc["p_violated_corrected"] = ver.p_holds, ver.p_violated
    return doc


def workers_fields(est, sign_zero: str, tie: str, byzantine: int = 0, attack: str = "invert",
                   clients: int | None = None) -> dict[str, Any]:
    """The fields of the vote of the M workers of ``est.laws.sampling``: ``workers``, ``workers_differ``, the
    vote's law and E<g, vote>, and the identical-worker lower bound where it applies; with ``clients`` S < M,
    those of the vote of S sampled workers (identical workers: the vote of S)."""
    from signsim.diagnostics import spb
    from signsim.diagnostics.votes import message_law

    laws, g = est.laws, est.grad
    nz = g != 0
    M = int(laws.sampling.worker_class.size)
    voters = M if clients is None else min(clients, M)
    differ = laws.sampling.distinct > 1 or byzantine > 0
    doc: dict[str, Any] = {"workers": M, "workers_differ": differ}
    doc.update(vote_fields(est, sign_zero, tie, byzantine, attack, None if voters == M else voters))
    identical = not differ and not np.any(message_law(laws.raw, sign_zero).zero[:, nz] > 0)
    rho_min = float(np.min(est.rho[nz])) if nz.any() else None
    doc["rho_M_lower_bound"] = spb.majority_lower_bound(g, est.rho, voters) if identical and rho_min \
        and rho_min > 0.5 else None
    return doc
