"""Success probabilities, the SPB verdict, rho-norms and the sufficient conditions (docs/theory.md §1).

rho_i = P(sign g_hat_i = sign g_i) for g_i != 0. SPB: rho_i > 1/2 for every such i.
||g||_rho = sum_i (2 rho_i - 1)|g_i|; with M workers and l = floor((M + 1)/2),
||g||_{rho_M} = sum_i (2 I_{rho_i}(l, l) - 1)|g_i| (regularized incomplete beta), and
(1 - exp(-(2 rho - 1)^2 l)) ||g||_1 <= ||g||_{rho_M} <= ||g||_1 with rho = min_i rho_i > 1/2.

Those formulas assume identical workers and no zero messages. The reported quantities are the general ones
(docs/theory.md §1, docs/theory.md §9): ``rho_norm`` = E<g, message> =
sum_i (P(agree_i) - P(disagree_i))|g_i| under the sign(0) policy (``inner_product``), the verdict compares
P(agree_i) with P(disagree_i), and ``rho_M_norm`` = E<g, vote> comes from each worker's own law
(``signsim.diagnostics.votes``); ``rho_M_norm`` below is the identical-worker special case.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from signsim.diagnostics.intervals import CORRECTIONS, INTERVALS, one_sided_pvalues

SQRT3 = np.sqrt(3.0)


@dataclass
class Estimate:
    """Per-coordinate success probabilities of one stochastic gradient with minibatch tau."""

    method: str  # exact | closed-form | monte-carlo
    grad: np.ndarray
    rho: np.ndarray  # NaN where g_i = 0
    rho_low: np.ndarray
    rho_high: np.ndarray
    #: per-sample standard deviation sigma_i of the stochastic gradient (tau = 1); the minibatch's is sigma/sqrt(tau)
    sigma: np.ndarray
    tau: int
    samples: int | None = None  # Monte Carlo sample count S (pooled over the distinct worker oracles)
    successes: np.ndarray | None = None  # Monte Carlo counts
    #: raw sign of g_hat_i: P(= sign g_i), P(= -sign g_i), P(g_hat_i = 0), averaged over the workers
    p_agree: np.ndarray | None = None
    p_disagree: np.ndarray | None = None
    p_zero: np.ndarray | None = None
    #: the message under the sign(0) policy: P(= sign g_i) (= rho) and P(= -sign g_i)
    agree: np.ndarray | None = None
    disagree: np.ndarray | None = None
    sign_zero: str = "random"
    sigma_minibatch: np.ndarray | None = None  # standard deviation of the minibatch gradient
    laws: Any = None  # the per-worker laws (signsim.diagnostics.estimators.WorkerLaws)
    #: Monte Carlo: counts of messages that agree and disagree (zeros dropped under the 'random' policy)
    test_counts: tuple[np.ndarray, np.ndarray] | None = None
    #: Monte Carlo: bounds on agree - disagree per coordinate (from the two intervals)
    margin_low: np.ndarray | None = None
    margin_high: np.ndarray | None = None
    exact_margin: np.ndarray | None = None

    @property
    def margin(self) -> np.ndarray:
        """P(message agrees) - P(message disagrees) per coordinate: E[sign g_i * message_i]."""
        if self.exact_margin is not None:
            return self.exact_margin
        if self.agree is None:
            return 2 * self.rho - 1
        return self.agree - self.disagree


@dataclass
class Verdict:
    verdict: str  # holds | violated | inconclusive
    status: np.ndarray  # per coordinate: "holds", "violated", "inconclusive", "zero"
    p_holds: np.ndarray | None  # corrected p-values (Monte Carlo only)
    p_violated: np.ndarray | None


def interval(successes: np.ndarray, S: int, confidence: float, kind: str) -> tuple[np.ndarray, np.ndarray]:
    return INTERVALS[kind](successes, S, confidence)


def decide(est: Estimate, confidence: float, correction: str) -> Verdict:
    """Per coordinate and overall (docs/theory.md §1): SPB holds on coordinate i when the message's sign
    agrees with sign g_i more often than it disagrees, P(agree) > P(disagree) under the sign(0) policy (with
    no zero messages: rho_i > 1/2). Exact and closed form: decided from the probabilities. Monte Carlo:
    one-sided sign tests of P(agree) <= P(disagree) and of P(agree) >= P(disagree) on the messages that are
    not 0 (under the 'random' policy a zero adds 1/2 to both sides, so zeros drop out), each family corrected
    over the tested coordinates (Holm by default) at level 1 - confidence. Overall: holds when every tested
    coordinate holds, violated when any is violated, otherwise inconclusive."""
    nz = est.grad != 0
    status = np.full(est.grad.shape, "zero", dtype=object)
    p_h = p_v = None
    if est.method == "monte-carlo":
        alpha = 1 - confidence
        if est.test_counts is not None:
            k, k_dis = (np.rint(c[nz]).astype(int) for c in est.test_counts)
            n = k + k_dis
        else:
            k, n = np.rint(est.successes[nz]).astype(int), est.samples
        ph, pv = one_sided_pvalues(k, n)
        fix = CORRECTIONS[correction]
        ph, pv = fix(ph), fix(pv)
        s = np.where(ph <= alpha, "holds", np.where(pv <= alpha, "violated", "inconclusive"))
        status[nz] = s
        p_h, p_v = np.full(est.grad.shape, np.nan), np.full(est.grad.shape, np.nan)
        p_h[nz], p_v[nz] = ph, pv
    else:
        status[nz] = np.where(est.margin[nz] > 0, "holds", "violated")
    tested = status[nz]
    if np.any(tested == "violated"):
        verdict = "violated"
    elif np.all(tested == "holds"):
        verdict = "holds"
    else:
        verdict = "inconclusive"
    return Verdict(verdict, status, p_h, p_v)


def rho_norm(g: np.ndarray, rho: np.ndarray) -> float:
    """||g||_rho = sum (2 rho_i - 1) |g_i| over g_i != 0 (= E<g, sign g_hat> when no message is 0)."""
    nz = g != 0
    return float(np.sum((2 * rho[nz] - 1) * np.abs(g[nz])))


def inner_product(g: np.ndarray, margin: np.ndarray) -> float:
    """E<g, message> = sum_i (P(agree_i) - P(disagree_i)) |g_i| over g_i != 0, for margin = agree - disagree."""
    nz = g != 0
    return float(np.sum(margin[nz] * np.abs(g[nz])))


def majority_success(rho: np.ndarray, M: int) -> np.ndarray:
    """I_rho(l, l) with l = floor((M + 1)/2): for odd M the probability that a majority of M independent signs,
    each right with probability rho, is right; for even M with fair tie-breaks the same as M - 1."""
    from scipy.special import betainc

    l = (M + 1) // 2
    return betainc(l, l, rho)


def rho_M_norm(g: np.ndarray, rho: np.ndarray, M: int) -> float:
    nz = g != 0
    return float(np.sum((2 * majority_success(rho[nz], M) - 1) * np.abs(g[nz])))


def majority_lower_bound(g: np.ndarray, rho: np.ndarray, M: int) -> float:
    """(1 - exp(-(2 rho - 1)^2 l)) ||g||_1 with rho = min_i rho_i (meaningful when rho > 1/2)."""
    nz = g != 0
    r = float(np.min(rho[nz])) if nz.any() else 1.0
    l = (M + 1) // 2
    return float((1 - np.exp(-((2 * r - 1) ** 2) * l)) * np.sum(np.abs(g)))


def l12_norm(g: np.ndarray, sigma: np.ndarray) -> float:
    """sum g_i^2 / (|g_i| + sqrt(3) sigma_i): lower-bounds ||g||_rho under unimodal symmetric noise."""
    nz = g != 0
    return float(np.sum(g[nz] ** 2 / (np.abs(g[nz]) + SQRT3 * sigma[nz])))


def sufficient_conditions(g: np.ndarray, sigma: np.ndarray, tau: int, unimodal_symmetric: bool | None) -> dict:
    """Per coordinate, for an unbiased g_hat whose single-sample std is sigma_i and minibatch tau (docs/theory.md §1):

    * unimodal symmetric noise: rho_i >= 1/2 + |g_i| / (2(|g_i| + sqrt(3) sigma_i / sqrt(tau))) (None when the
      noise is not known to be unimodal and symmetric);
    * c_i = sigma_i^2 / g_i^2 and tau > 2 c_i: rho_i >= 1 - c_i / tau;
    * Cantelli: the minibatch std sigma_i / sqrt(tau) < |g_i|;

    and the gradient signal-to-noise ratio GSNR_i = g_i^2 / sigma_i^2 = 1 / c_i of one sample (Cockpit's
    per-coordinate GSNR; inf where sigma_i = 0 < |g_i|, 0 where g_i = 0).
    """
    a = np.abs(g)
    s_tau = sigma / np.sqrt(tau)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(a > 0, sigma**2 / a**2, np.inf)
        gsnr = np.where(a > 0, np.where(sigma > 0, a**2 / sigma**2, np.inf), 0.0)
        unimodal = 0.5 + 0.5 * a / (a + SQRT3 * s_tau) if unimodal_symmetric else None
        variance_bound = np.where(tau > 2 * c, 1 - c / tau, np.nan)
    return {
        "unimodal_bound": unimodal,
        "c": c,
        "gsnr": gsnr,
        "tau_condition": tau > 2 * c,
        "variance_bound": variance_bound,
        "cantelli": s_tau < a,
    }
