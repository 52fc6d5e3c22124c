"""The constants the bounds need, with where each came from (docs/theory.md §3), and ``--constant NAME=VALUE``.

* F = f(x_0) - f*: f* exact where known; 0 for the data problems (their losses are non-negative).
* L (vector) and L1 = ||L||_1: quadratic exact; sign-trap and vote-trap from their Hessians; logistic and
  least squares from the data by Gershgorin's bound on the Hessian bound H <= c A^T A / n + lam I
  (c = 1/4 for logistic, 1 for least squares): L_i = c/n sum_k |(A^T A)_ik| + lam, which makes
  diag(L) - H positive semidefinite (the diagonal alone, c/n sum_j a_ji^2 + lam, does not in general);
  Rosenbrock: Gershgorin on its Hessian over the box [-R, R]^d (valid while the iterates stay inside).
* L2: an l2-smoothness constant, max_i L_i (since diag(L) >= H).
* sigma (vector), sigma1 = ||sigma||_1 and sigma_total = ||sigma||_2 / sqrt(tau): the noise model's sigma for
  exact-gradient problems; otherwise estimated at x_0 (exact over the data, or Monte Carlo), with its size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from signsim.errors import InputError
from signsim.numbers import to_float

NAMES = ("F", "f0", "f_star", "L1", "L2", "sigma1", "sigma_total", "gamma", "M", "alpha", "d", "K", "box")


def _count(v: float) -> bool:
    return v >= 1 and float(v).is_integer()


#: the range of each overridable constant (the bounds divide by L, gamma, M, K and take roots of F and sigma)
RANGES = {
    "F": (lambda v: v >= 0, ">= 0"), "L1": (lambda v: v > 0, "> 0"), "L2": (lambda v: v > 0, "> 0"),
    "sigma1": (lambda v: v >= 0, ">= 0"), "sigma_total": (lambda v: v >= 0, ">= 0"),
    "gamma": (lambda v: v > 0, "> 0"), "M": (_count, "an integer >= 1"),
    "alpha": (lambda v: 0 <= v < 0.5, "in [0, 0.5) (the theorem needs fewer than half adversaries)"),
    "d": (_count, "an integer >= 1"), "K": (lambda v: _count(v) and v <= 10**15, "an integer from 1 to 10^15 (as "
                                            "--iters)"), "box": (lambda v: v > 0, "> 0"),
}


#: the source of a constant the user gave with --constant
OVERRIDE = "--constant override"


@dataclass
class Constant:
    name: str
    value: float
    source: str


def rosenbrock_L(d: int, R: float) -> np.ndarray:
    """Gershgorin row sums of |Hessian| maximized over [-R, R]^d."""
    L = np.zeros(d)
    for i in range(d):
        diag = 0.0
        if i < d - 1:
            diag += 1200 * R * R + 400 * R + 2  # 1200 x_i^2 - 400 x_{i+1} + 2
        if i > 0:
            diag += 200
        off = (400 * R if i < d - 1 else 0.0) + (400 * R if i > 0 else 0.0)
        L[i] = diag + off
    return L


def glm_L(A: np.ndarray, lam: float, c: float) -> np.ndarray:
    n = A.shape[0]
    return c / n * np.abs(A.T @ A).sum(axis=1) + lam


def derives_smoothness(problem) -> bool:
    """Whether ``derive`` computes L1 and L2 for ``problem`` (its exact L, Rosenbrock's box, a GLM's data); for
    the others (the MLP, your own model) they must be given, which ``bound`` checks before any work."""
    return problem.L is not None or problem.name in ("rosenbrock", "logistic", "least-squares")


def derive(problem, model, params, cfg, x0: np.ndarray, box: float, sigma_samples: int) -> dict[str, Constant]:
    from signsim.diagnostics.estimators import choose, estimate

    out: dict[str, Constant] = {}
    f0 = float(problem.loss_ref(x0))
    out["f0"] = Constant("f0", f0, "f(x_0), computed")
    if problem.f_star is not None:
        out["f_star"] = Constant("f_star", float(problem.f_star), "known optimum")
    elif problem.finite_sum is not None:
        out["f_star"] = Constant("f_star", 0.0, "lower bound: the losses are non-negative")
    if "f_star" in out:
        out["F"] = Constant("F", f0 - out["f_star"].value, "f(x_0) - f*")
    L = None
    if problem.L is not None:
        L, src = problem.L, f"{problem.name}: exact coordinate-wise smoothness"
    elif problem.name == "rosenbrock":
        L, src = rosenbrock_L(problem.dim, box), f"Gershgorin on the Hessian over the box [-{box:g}, {box:g}]^d"
        if not np.all(np.isfinite(L)):  # 1200 R^2 past the float range: every bound would be null, unexplained
            from signsim.errors import InputError

            raise InputError(f"--box {box:g}: the smoothness constants over this box overflow; the bounds need a "
                             "box below about 1e150")
    elif problem.name in ("logistic", "least-squares"):
        n = problem.finite_sum.n
        c = 0.25 if problem.name == "logistic" else 1.0
        L = glm_L(problem.A[:n], float(problem.pf[0]), c)
        src = f"Gershgorin on {c:g} A^T A / n + lam I from the data (n = {n})"
    if L is not None:
        out["L1"] = Constant("L1", float(np.sum(L)), src)
        out["L2"] = Constant("L2", float(np.max(L)), "max_i L_i (l2-smoothness, since diag(L) >= Hessian)")
    from signsim.problems.sampling import is_full, noise_draws

    full = is_full(cfg.batch_size)  # each worker's exact local gradient plus one noise draw (docs/theory.md §5)
    tau = noise_draws(cfg.batch_size)
    if (problem.exact_oracle and not problem.heterogeneous) or full:
        from signsim.noise.base import sigma_vector

        s = sigma_vector(model, params, problem.dim)
        src = f"noise model {model.name}" + (" with per-coordinate scales" if len(params) > 3 else "") + (
            " (--batch-size full: the exact local gradient plus one draw of the noise)" if full else "")
    else:
        method = choose(problem, model, 1, "auto")
        est = estimate(problem, model, params, x0, 1, method, sigma_samples, 0.95, "wilson", cfg.sign_zero,
                       cfg.seed, cfg.workers)
        s = est.sigma
        size = f"n = {problem.finite_sum.n}" if method == "exact" else f"S = {sigma_samples}"
        src = f"estimated at x_0 ({method}, {size}); a bound along the run is assumed"
    from signsim.noise.base import no_variance

    if (why := no_variance(model, params)) is not None:
        src = f"infinite: {why}"
    out["sigma1"] = Constant("sigma1", float(np.sum(s)), src)
    if problem.finite_sum is not None and problem.finite_sum.split.name == "split-batch":
        # the group is drawn once per minibatch: its std is not sigma / sqrt(tau) (docs/theory.md §9)
        from signsim.diagnostics.estimators import finite_sum_laws, noise_variance, sampling

        mini = finite_sum_laws(problem, np.ascontiguousarray(x0, dtype=np.float64), sampling(problem, cfg.workers),
                               tau, noise_variance(model, params, problem.dim))[3]
        out["sigma_total"] = Constant("sigma_total", float(np.sqrt(np.sum(mini**2))),
                                      f"||std of the split-batch minibatch gradient||_2, tau = {tau}, exact at x_0")
    else:
        out["sigma_total"] = Constant("sigma_total", float(np.sqrt(np.sum(s**2) / tau)),
                                      f"||sigma||_2 / sqrt(tau), tau = {'1 (full batch)' if full else tau}; {src}")
    from signsim.interface.config import lr_theory

    theory = lr_theory(cfg)  # --lr theory: the theorem's step (docs/theory.md §3.6)
    out["gamma"] = Constant("gamma", cfg.lr, "--lr" if theory is None else theory["record"]["line"])
    out["M"] = Constant("M", cfg.workers, "--workers")
    out["alpha"] = Constant("alpha", cfg.byzantine / cfg.workers, "--byzantine / --workers")
    out["d"] = Constant("d", problem.dim, "dimension")
    out["K"] = Constant("K", cfg.iters, "--iters")
    return out


def apply_overrides(constants: dict[str, Constant], overrides: list[str]) -> None:
    for item in overrides:
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep or name not in NAMES:
            raise InputError(f"--constant {item}: expected NAME=VALUE with NAME one of {', '.join(NAMES)}")
        try:
            value = to_float(raw)
        except ValueError:
            raise InputError(f"--constant {item}: '{raw}' is not a number") from None
        if not np.isfinite(value):
            raise InputError(f"--constant {item}: must be finite")
        rule = RANGES.get(name)
        if rule is not None and not rule[0](value):
            raise InputError(f"--constant {item}: {name} must be {rule[1]}")
        constants[name] = Constant(name, value, OVERRIDE)
    if any(i.partition("=")[0].strip() in ("f0", "f_star") for i in overrides) and "f0" in constants \
            and "f_star" in constants:
        constants["F"] = Constant("F", constants["f0"].value - constants["f_star"].value, "f(x_0) - f* (overridden)")
        if constants["F"].value < 0:
            raise InputError(f"--constant: f0 = {constants['f0'].value:g} is below f_star = "
                             f"{constants['f_star'].value:g} (F = f0 - f_star must be >= 0)")


def need(constants: dict[str, Constant], *names: str) -> list[float]:
    missing = [n for n in names if n not in constants]
    if missing:
        raise InputError(f"missing constant {missing[0]}: give it with --constant {missing[0]}=VALUE")
    return [constants[n].value for n in names]
