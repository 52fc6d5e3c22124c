"""``signsim check-stage``: the contract test of a compressor (docs/api.md, "Your own stage"), the way
scikit-learn's ``check_estimator`` tests an estimator. On standard vectors (ties and exact zeros, Gaussian, sparse
heavy-tailed; several d) it measures, from ``samples`` draws of the compiled kernel:

- the bias E[C(x)] - x, by T = S ||mean - x||^2 / mean ||C(x) - x||^2 over the S draws: about 1 for an unbiased
  compressor (its law is a weighted sum of chi-squares with weights summing to 1, whose tail beyond 1.54 is below
  that of one chi-square, Székely and Bakirov 2003), S ||b||^2 / E||C(x) - x||^2 larger with a bias b; an unbiased
  compressor fails when T exceeds z*^2, z* the normal quantile of a 0.1% family-wise error over the vectors
  (Bonferroni);
- E||C(x) - x||^2 / ||x||^2 against the declared omega (unbiased) or 1 - alpha (contractive), failing when
  the sample mean minus z* standard errors exceeds it;
- the bits the kernel counts against the declared count (``message_bits`` where the module has one, else the
  formula ``bits``; exactly, every draw);
- the kernel against its NumPy reference with the same generator (the replay's contract), to 1e-12.

Deterministic outputs (zero spread) are compared exactly (1e-12 relative).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from signsim.stages.plugins import declared

#: family-wise false-alarm probability of the statistical checks
ALPHA = 1e-3
DIMS = (3, 16, 100)
REFERENCE_DRAWS = 5


@dataclass
class Row:
    vector: str
    d: int
    bias_t: float  # S ||mean - x||^2 / mean ||C(x) - x||^2 (about 1 when unbiased; inf for a deterministic bias)
    ratio: float  # mean ||C(x) - x||^2 / ||x||^2
    ratio_se: float
    bound: float | None  # omega or 1 - alpha
    bits_ok: bool
    reference_ok: bool
    finite: bool
    failures: list[str]


def vectors(d: int, rng) -> dict:
    """The standard vectors at dimension d."""
    import numpy as np

    ties = np.resize(np.array([1.0, -1.0, 1.0, 0.0, 0.5, -1.0, 0.0, 0.5]), d)
    gauss = rng.standard_normal(d)
    sparse = np.zeros(d)
    nnz = max(1, d // 10)
    sparse[rng.choice(d, nnz, replace=False)] = rng.standard_cauchy(nnz)
    return {"ties+zeros": ties, "gaussian": gauss, "sparse cauchy": sparse}


def z_star(tests: int) -> float:
    from scipy.stats import norm

    return float(norm.isf(ALPHA / (2 * max(1, tests))))


def check(stage, samples: int = 2000, seed: int = 0, sign_zero: int = 0) -> list[Row]:
    """The contract rows of the compressor ``stage`` (a ``signsim.stages.Stage`` with parameters resolved for
    ``DIMS``; a parameter that depends on d is re-resolved per d)."""
    import numpy as np

    from signsim import accounting
    from signsim.engine import stage_kernels
    from signsim.stages import registry

    mod = stage.module
    rng = np.random.default_rng(seed)
    rows = []
    per_vector = {d: vectors(d, rng) for d in DIMS}
    n_tests = sum(len(vs) for vs in per_vector.values())
    z = z_star(n_tests)
    for d, vs in per_vector.items():
        st = stage
        if any(p.default_of_d is not None for p in mod.PARAMS) or not stage.resolved:
            st = registry.parse("compressor", stage.spec if stage.resolved else mod.NAME, d)
        if getattr(mod, "check_params", None):
            try:
                mod.check_params(st.params, d, "check-stage", st.spec)
            except ValueError:
                continue  # a parameter too large for this d (k > d)
        bound = declared(mod, "constant", d, *st.params, result="number")
        if bound is not None and mod.KIND == "contractive":
            bound = 1.0 - bound
        for name, x in vs.items():
            gen = np.random.default_rng(rng.integers(2**63))
            outs = np.empty((samples, d))
            bits_ok = True
            finite = True
            for s in range(samples):
                out, bits = stage_kernels.compress_once(st, x, sign_zero, gen)
                outs[s] = out
                counted = accounting.message_bits(st, x, out, sign_zero)
                bits_ok &= bool(bits == counted)
                finite &= bool(np.all(np.isfinite(out)) and math.isfinite(bits))
            ref_ok = True
            for s in range(REFERENCE_DRAWS):
                a, _ = stage_kernels.compress_once(st, x, sign_zero, np.random.default_rng(s))
                b = np.asarray(mod.reference(x.copy(), st.params, sign_zero, np.random.default_rng(s)), dtype=float)
                ref_ok &= bool(b.shape == a.shape and np.allclose(a, b, rtol=1e-12, atol=1e-300))
            mean = outs.mean(axis=0)
            gap = np.abs(mean - x)
            sq = np.sum((outs - x) ** 2, axis=1)
            if np.all(gap <= 1e-12 * (1.0 + np.abs(x))):
                bias_t = 0.0
            else:
                bias_t = float(samples * np.sum(gap**2) / sq.mean()) if sq.mean() > 0 else math.inf
            nx = float(np.sum(x * x))
            ratio = float(sq.mean() / nx) if nx > 0 else 0.0
            ratio_se = float(sq.std(ddof=1) / math.sqrt(samples) / nx) if nx > 0 and samples > 1 else 0.0
            failures = []
            if not finite:
                failures.append("non-finite output")
            if not bits_ok:
                failures.append("bits differ from the declared count")
            if not ref_ok:
                failures.append("kernel and reference disagree")
            if mod.KIND == "unbiased" and bias_t > z * z:
                failures.append(f"biased (T = {bias_t:.3g} > {z * z:.3g})")
            if bound is not None and nx > 0 and ratio - z * ratio_se > bound * (1 + 1e-12) + 1e-12:
                what = "omega" if mod.KIND == "unbiased" else "1 - alpha"
                failures.append(f"E||C(x)-x||^2/||x||^2 = {ratio:.4g} exceeds {what} = {bound:.4g}")
            rows.append(Row(name, d, bias_t, ratio, ratio_se, bound, bits_ok, ref_ok, finite, failures))
    return rows


def table(stage, rows: list[Row]) -> list[str]:
    """The rows as lines of text."""
    mod = stage.module
    what = {"unbiased": "omega", "contractive": "1-alpha"}.get(mod.KIND, "-")
    lines = [f"check-stage {stage.spec} ({mod.KIND}; {mod.SUMMARY})",
             f"{'vector':<14} {'d':>4} {'bias T':>8} {'E|C-x|^2/|x|^2':>16} {what:>9} {'bits':>5} {'ref':>5}  verdict"]
    for r in rows:
        bound = "-" if r.bound is None else f"{r.bound:.4g}"
        ratio = f"{r.ratio:.4g}±{r.ratio_se:.1g}"
        verdict = "ok" if not r.failures else "FAIL: " + "; ".join(r.failures)
        lines.append(f"{r.vector:<14} {r.d:>4} {r.bias_t:>8.3g} {ratio:>16} {bound:>9} "
                     f"{'ok' if r.bits_ok else 'FAIL':>5} {'ok' if r.reference_ok else 'FAIL':>5}  {verdict}")
    return lines
