"""The convergence bounds of docs/theory.md §3, as plain functions of their constants and K.

Notation: F = f(x_0) - f*, L1 = ||L||_1 (coordinate-wise smoothness), gamma the step size, M workers,
sigma1 = ||sigma||_1 (per-coordinate single-sample standard deviations), alpha the Byzantine fraction.
"""

from __future__ import annotations

import math


def signsgd_constant(F: float, L1: float, gamma: float, K: int) -> float:
    """(1/K) sum_{k<K} E||g_k||_rho <= F / (gamma K) + L1 gamma / 2 (also majority vote with ||.||_rho_M)."""
    return F / (gamma * K) + L1 * gamma / 2


def signsgd_sqrt(F: float, L1: float, gamma0: float, K: int) -> float:
    """min_{k<K} E||g_k||_rho <= (F/gamma0 + gamma0 L1)/sqrt(K) + (gamma0 L1 / 2) ln K / sqrt(K), for
    gamma_k = gamma0 / sqrt(k + 1) (also majority vote with ||.||_rho_M)."""
    return (F / gamma0 + gamma0 * L1) / math.sqrt(K) + gamma0 * L1 / 2 * math.log(K) / math.sqrt(K)


def bernstein(F: float, L1: float, sigma1: float, K: int, M: int = 1, alpha: float = 0.0,
              majority: bool = False) -> float:
    """Bernstein et al. 2018 with minibatch K, step 1/sqrt(L1 K) and N = K^2 gradient calls:
    [E (1/K) sum ||g_k||_1]^2 <= (1/sqrt(N)) [sqrt(L1)(F + 1/2) + 2 sigma1]^2. With majority vote of M
    workers under unimodal symmetric noise the sigma-term is 2 sigma1 / sqrt(M); with a fraction alpha < 1/2 of
    blind adversaries it is further multiplied by 1/(1 - 2 alpha). Returns the right-hand side (a bound on
    the square of the average l1 norm)."""
    term = 2 * sigma1
    if majority:
        term /= math.sqrt(M)
        term /= 1 - 2 * alpha
    N = K * K
    return (math.sqrt(L1) * (F + 0.5) + term) ** 2 / math.sqrt(N)


def ssdm(F: float, L: float, gamma0: float, d: int, sigma: float, K: int) -> float:
    """SSDM, derived for this project (not quoted from the paper): L-smooth in l2, E||g_hat - grad f||^2 <=
    sigma^2, m_0 = g_hat(x_0), beta = 1 - 1/sqrt(K), gamma = gamma0 K^{-3/4}:
    (1/K) sum E||grad f(x_k)||_2 <= K^{-1/4}[F/gamma0 + 2 L gamma0 sqrt(d) + 2 sigma] + 2 sigma/sqrt(K)
    + L gamma0 d / (2 K^{3/4})."""
    return (K ** -0.25 * (F / gamma0 + 2 * L * gamma0 * math.sqrt(d) + 2 * sigma) + 2 * sigma / math.sqrt(K)
            + L * gamma0 * d / (2 * K ** 0.75))
