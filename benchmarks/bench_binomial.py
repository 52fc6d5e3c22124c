"""--votes binomial against the per-worker engine (issue #17): signSGD with majority vote on the quadratic,
d = 1,000, skewed noise, M = 10^6 workers, 1,000 iterations. The per-worker engine cannot hold M = 10^6 workers'
state in memory; its time for the same work is extrapolated linearly in M and K from a run it can do
(M = 1,000, K = 20), and printed beside the binomial time. Also a plain NumPy loop drawing the same counts with
``Generator.binomial`` (vectorized over coordinates), for the usual side-by-side ratio. Asserts nothing.

    python benchmarks/bench_binomial.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def numpy_binomial(grad, x0, M, K, lr, cdf, seed):
    """The same algorithm in NumPy: p+ = 1 - F(-g_i), +1 votes ~ Bin(M, p+), majority vote, ties by a coin."""
    rng = np.random.default_rng(seed)
    x = x0.copy()
    for _ in range(K):
        g = grad(x)
        plus = rng.binomial(M, np.clip(1.0 - cdf(-g), 0.0, 1.0))
        s = np.sign(2 * plus - M).astype(float)
        ties = s == 0
        s[ties] = np.where(rng.random(ties.sum()) < 0.5, 1.0, -1.0)
        x -= lr * s
    return x


def timed(cfg_options, repeats=3):
    from signsim.engine.build import build
    from signsim.engine.driver import simulate
    from signsim.interface import config

    best = np.inf
    for _ in range(repeats):
        engine = build(config.resolve(cfg_options)).engine
        t = time.perf_counter()
        out = simulate(engine)
        best = min(best, time.perf_counter() - t)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    d, M, K = (200, 10**5, 200) if a.quick else (1000, 10**6, 1000)
    base = {"problem": "quadratic", "dim": d, "kappa": 10.0, "noise": "skewed:1", "method": "signsgd",
            "aggregate": "majority", "lr": 1e-3, "seed": 0}
    timed({**base, "workers": M, "iters": 2, "votes": "binomial"}, 1)  # compile
    t_bin, out = timed({**base, "workers": M, "iters": K, "votes": "binomial"})
    m_small, k_small = 1000, 20
    timed({**base, "workers": m_small, "iters": 2}, 1)
    t_small, _ = timed({**base, "workers": m_small, "iters": k_small}, 1)
    t_extra = t_small * (M / m_small) * (K / k_small)

    from scipy.stats import expon

    from signsim import problems
    from signsim.interface import config

    problem = problems.build(config.resolve({**base, "workers": 1}))
    grad = problem.grad_ref
    t = time.perf_counter()
    numpy_binomial(grad, problem.x0.astype(float), M, K, 1e-3, lambda z: expon.cdf(z + 1.0), 0)
    t_np = time.perf_counter() - t
    print(f"d = {d}, M = {M:,}, K = {K:,}, signSGD with majority vote, skewed noise")
    print(f"  --votes binomial          {t_bin:8.3f} s   (final loss {out.history[-1][1]:.4g})")
    print(f"  per-worker, extrapolated  {t_extra:8.1f} s   (M = {m_small}, K = {k_small} took {t_small:.3f} s)"
          f"   ratio {t_extra / t_bin:,.0f}x")
    print(f"  NumPy binomial loop       {t_np:8.3f} s   ratio {t_np / t_bin:.2f}x")


if __name__ == "__main__":
    main()
