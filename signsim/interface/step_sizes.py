"""``--lr theory``: the step size a method's convergence theorem prescribes, from the problem's constants
(docs/theory.md §3.6).

The rules, each a plain function of its constants (the tests check each against its theorem's closed form):

* ``gd``: gamma = 1/L, gradient descent (Li, Kovalev, Qian and Richtárik 2020, Theorem 1 with omega = 0);
* ``cgd``: gamma = 1/((1 + omega) L), compressed gradient descent on one worker (the same Theorem 1);
* ``diana``: gamma = 1/((1 + 6 omega/M) L_max), DIANA (Gorbunov, Hanzely and Richtárik 2020, Corollary A.11);
* ``ef21`` and ``marina``: written, not yet checked against their papers' text, so not used (``Rule.checked``).

The constants (``smoothness``): L, the smoothness constant of f = (1/M) sum_m f_m; L_m, that of worker m's local
objective f_m (what its oracle is unbiased for); L_max = max_m L_m; L~ = sqrt(mean_m L_m^2); omega or alpha from the
compressor module's ``constant``; M the workers. Known exactly or bounded for quadratic, sign-trap, vote-trap,
least-squares (exact) and logistic (a bound); no other problem has a global L, and ``--lr theory`` refuses it.

``config.resolve`` calls ``theory_step`` when the user gave ``--lr theory``: the run then has the number as its
``lr`` and this module's ``TheoryStep`` as the record of where it came from (``lr_theory`` in the results).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from signsim.errors import InputError

# ----------------------------------------------------------------------------------------------------------
# the rules, as functions of their constants


def gd(L: float) -> float:
    """Gradient descent: gamma = 1/L (docs/theory.md §3.6; Li et al. 2020, Theorem 1 with omega = 0)."""
    return 1.0 / L


def cgd(L: float, omega: float) -> float:
    """Compressed gradient descent x <- x - gamma C(grad f(x)) with an unbiased C of variance omega, on one worker:
    gamma = 1/((1 + omega) L) (docs/theory.md §3.6; Li, Kovalev, Qian and Richtárik 2020, Theorem 1)."""
    return 1.0 / ((1.0 + omega) * L)


def diana(L_max: float, omega: float, M: int) -> float:
    """DIANA with M workers, an unbiased compressor of variance omega and shift rate alpha <= 1/(omega + 1):
    gamma = 1/((1 + 6 omega/M) L_max), L_max the smoothness of every f_m (docs/theory.md §3.6; Gorbunov, Hanzely
    and Richtárik 2020, Corollary A.11: gamma <= 1/((1 + 2 omega/M) L + M' L alpha) with M' = 4 omega/(M alpha)
    > 2 omega/(M alpha), which the corollary's own choice alpha = 1/(omega + 1) instantiates)."""
    return 1.0 / ((1.0 + 6.0 * omega / M) * L_max)


def ef21(L: float, L_tilde: float, alpha: float) -> float:
    """EF21 with a contractive compressor of parameter alpha in (0, 1]: gamma = 1/(L + L~ sqrt(beta/theta)),
    theta = 1 - sqrt(1 - alpha), beta = (1 - alpha)/(1 - sqrt(1 - alpha)) (docs/theory.md §3.6). Not yet checked
    against the paper's text: not used by ``--lr theory`` (``RULES["ef21"].checked``)."""
    if alpha >= 1.0:
        return 1.0 / L  # beta = 0
    root = math.sqrt(1.0 - alpha)
    theta = 1.0 - root
    beta = (1.0 - alpha) / theta
    return 1.0 / (L + L_tilde * math.sqrt(beta / theta))


def marina(L: float, L_tilde: float, omega: float, p: float, M: int) -> float:
    """MARINA with full gradients with probability p, an unbiased compressor of variance omega and M workers:
    gamma = 1/(L + L~ sqrt((1 - p) omega/(p M))) (docs/theory.md §3.6). Not yet checked against the paper's text:
    not used by ``--lr theory`` (``RULES["marina"].checked``)."""
    return 1.0 / (L + L_tilde * math.sqrt((1.0 - p) * omega / (p * M)))


@dataclass(frozen=True)
class Rule:
    key: str
    #: the method, as the printed line names it
    name: str
    #: paper and theorem
    source: str
    formula: str
    #: the theorem's assumptions, as the results record them
    assumes: str
    #: the theorem takes exact (full) gradients: a run with stochastic ones is warned
    exact_gradients: bool
    #: checked against the theorem's text (docs/theory.md §3.6); a rule that is not is refused
    checked: bool = True


LI_2020 = "Li, Kovalev, Qian and Richtárik 2020, Theorem 1"
RULES = {
    "gd": Rule("gd", "GD", f"{LI_2020} (omega = 0)", "gamma = 1/L",
               "f convex and L-smooth; exact gradients", True),
    "cgd": Rule("cgd", "compressed GD", LI_2020, "gamma = 1/((1 + omega) L)",
                "one worker; f convex and L-smooth; C unbiased with variance omega; exact gradients", True),
    "diana": Rule("diana", "DIANA", "Gorbunov, Hanzely and Richtárik 2020, Corollary A.11",
                  "gamma = 1/((1 + 6 omega/M) L_max)",
                  "every f_m convex and L_max-smooth, f strongly convex; C unbiased with variance omega; "
                  "alpha <= 1/(omega + 1); stochastic gradients of bounded variance allowed", False),
    "ef21": Rule("ef21", "EF21", "Richtárik, Sokolov and Fatkhullin 2021", "gamma = 1/(L + L~ sqrt(beta/theta))",
                 "every f_m L_m-smooth, f bounded below; C contractive with parameter alpha; exact gradients", True,
                 checked=False),
    "marina": Rule("marina", "MARINA", "Gorbunov, Burlachenko, Li and Richtárik 2021",
                   "gamma = 1/(L + L~ sqrt((1 - p) omega/(p M)))",
                   "f L-smooth, the f_m mean-square L~-smooth, f bounded below; C unbiased with variance omega; "
                   "exact gradients", True, checked=False),
}

#: the methods whose own stages have a checked rule, as the refusal lists them
COVERED = ("sgd and --compressor identity (GD, 1/L)", "diana (DIANA)",
           "randk, qsgd, natural, terngrad with --workers 1 (compressed GD)")


# ----------------------------------------------------------------------------------------------------------
# the constants


@dataclass(frozen=True)
class Constant:
    name: str
    value: float
    source: str


@dataclass(frozen=True)
class Smoothness:
    """L of f = (1/M) sum_m f_m and each worker's L_m (``workers``), with where they come from."""

    L: float
    workers: np.ndarray
    source: str
    #: every worker's oracle is its exact local gradient (no sampling); the additive --noise aside
    exact: bool

    @property
    def L_max(self) -> float:
        return float(np.max(self.workers))

    @property
    def L_tilde(self) -> float:
        return float(np.sqrt(np.mean(self.workers**2)))


#: the problems with a known global smoothness constant
SMOOTH_PROBLEMS = ("quadratic", "sign-trap", "vote-trap", "logistic", "least-squares")


def smoothness(problem, M: int) -> Smoothness:
    """L and the L_m of a built problem with M workers (docs/theory.md §3.6); InputError for a problem without a
    known global L."""
    name = problem.name
    if name == "quadratic":
        L = float(np.max(problem.L))  # grad^2 f = diag(L_i)
        return Smoothness(L, np.full(M, L), "quadratic: grad^2 f = diag(L_i), L = max_i L_i (exact); every worker's "
                          "f_m = f", True)
    if name == "sign-trap":
        eps = float(problem.pf[0])
        a = np.array([[1 + eps, -1 + eps], [-1 + eps, 1 + eps]])
        L = float(np.linalg.eigvalsh(a.T @ a)[-1])  # grad^2 f = a_1 a_1^T + a_2 a_2^T
        return Smoothness(L, np.full(M, L), "sign-trap: L = largest eigenvalue of a_1 a_1^T + a_2 a_2^T (exact); "
                          "every worker samples both terms, f_m = f", False)
    if name == "vote-trap":
        lam = float(problem.pf[0])
        workers = np.array([lam if m % 3 == 2 else 1.0 for m in range(M)])
        return Smoothness((2.0 + lam) / 3.0, workers, "vote-trap: f_m'' = 1 or lambda, f'' = (2 + lambda)/3 "
                          "(exact)", True)
    if name in ("logistic", "least-squares") and problem.finite_sum is not None:
        return _glm(problem, M)
    raise InputError(f"--lr theory on problem '{name}': no global smoothness constant L is known for it (the "
                     f"theorems' step sizes need one); the problems with one: {', '.join(SMOOTH_PROBLEMS)}")


def _top_eigenvalue(rows: np.ndarray, weights: np.ndarray) -> float:
    """The largest eigenvalue of sum_j w_j a_j a_j^T (rows a_j), from the smaller of B^T B and B B^T, B = sqrt(w) a."""
    B = rows * np.sqrt(weights)[:, None]
    gram = B @ B.T if B.shape[0] < B.shape[1] else B.T @ B
    return float(np.linalg.eigvalsh(gram)[-1]) if gram.size else 0.0


def _glm(problem, M: int) -> Smoothness:
    """GLMs: grad^2 f_m = sum_j w_mj phi''_j a_j a_j^T + lam I, w_mj the probability that worker m's oracle draws
    sample j; phi'' = 1 (least squares, exact) or <= 1/4 (logistic, a bound)."""
    from signsim.data.splits import SHARED, SPLIT_BATCH

    fs = problem.finite_sum
    split, n = fs.split, fs.n
    A = np.asarray(problem.A[:n], dtype=np.float64)
    lam = float(problem.pf[0])
    c = 0.25 if problem.name == "logistic" else 1.0
    groups = [split.group(g) for g in range(split.groups)]
    if split.mode == SHARED:
        laws = [[(groups[0], 1.0 / groups[0].size)]] * M
    elif split.mode == SPLIT_BATCH:  # each minibatch from one of the two groups, each with probability 1/2
        law = [(g, 0.5 / g.size) for g in groups if g.size]
        laws = [law] * M
    else:
        laws = [[(groups[m], 1.0 / groups[m].size)] for m in range(M)]
    cache: dict[int, float] = {}

    def top(law) -> float:
        key = id(law)
        if key not in cache:
            rows = np.concatenate([g for g, _ in law])
            weights = np.concatenate([np.full(g.size, w) for g, w in law])
            cache[key] = c * _top_eigenvalue(A[rows], weights) + lam
        return cache[key]

    workers = np.array([top(law) for law in laws])
    everyone = [(g, w / M) for law in laws for g, w in law]  # f = (1/M) sum_m f_m
    rows = np.concatenate([g for g, _ in everyone])
    weights = np.concatenate([np.full(g.size, w) for g, w in everyone])
    L = c * _top_eigenvalue(A[rows], weights) + lam
    what = ("exact: grad^2 f_m = A_m^T A_m/n_m + lam I" if c == 1.0 else
            "a bound: grad^2 f_m <= A_m^T A_m/(4 n_m) + lam I, since phi'' <= 1/4")
    return Smoothness(L, workers, f"{problem.name} on split {split.name}: L_m = largest eigenvalue of worker m's "
                      f"{'' if c == 1.0 else '(1/4) '}(1/n_m) A_m^T A_m, plus lam = {lam:g} ({what}); L the same for "
                      "f = (1/M) sum_m f_m", False)


# ----------------------------------------------------------------------------------------------------------
# which rule a run takes, and its step


@dataclass
class TheoryStep:
    rule: Rule
    gamma: float
    constants: list[Constant]
    warnings: list[str] = field(default_factory=list)

    @property
    def line(self) -> str:
        """The one line ``signsim run`` prints: the theorem, the formula, the step and its constants."""
        shown = ", ".join(f"{c.name} = {c.value:.4g}" for c in self.constants)
        return f"lr theory: {self.rule.name}, {self.rule.source}: {self.rule.formula} = {self.gamma:.4g} ({shown})"

    def record(self) -> dict[str, Any]:
        """The results' ``lr_theory``."""
        return {"rule": self.rule.key, "method": self.rule.name, "source": self.rule.source,
                "formula": self.rule.formula, "assumes": self.rule.assumes, "gamma": self.gamma,
                "constants": [{"name": c.name, "value": c.value, "source": c.source} for c in self.constants],
                "line": self.line}


def _refuse(cfg, what: str) -> InputError:
    return InputError(f"--lr theory: no theorem rule for method '{cfg.method}' ({what}); rules: "
                      f"{'; '.join(COVERED)}")


def _check_setting(cfg) -> None:
    """The run options that take a run outside every rule's algorithm: one line naming the option."""
    from signsim import rounds

    def no(option: str, why: str) -> InputError:
        return InputError(f"--lr theory with {option}: {why}")

    if cfg.lr_schedule != "constant":
        raise no(f"--lr-schedule {cfg.lr_schedule}", "the theorems take a constant step size")
    if cfg.local_steps != 1:
        raise no(f"--local-steps {cfg.local_steps}", "the theorems take one gradient step per round")
    if cfg.local_lr is not None:
        raise no(f"--local-lr {cfg.local_lr:g}", "the theorem's step is the step; drop --local-lr")
    if cfg.server_lr != 1:
        raise no(f"--server-lr {cfg.server_lr:g}", "the theorems step x <- x - gamma direction; drop --server-lr")
    if rounds.of_config(cfg) < cfg.workers:
        given = (f"--participation {cfg.participation:g}" if cfg.participation is not None
                 else f"--clients-per-round {cfg.clients_per_round}")
        raise no(given, "the theorems take every worker every round")
    if cfg.byzantine:
        raise no(f"--byzantine {cfg.byzantine}", "the theorems take honest workers")
    if cfg.weight_decay:
        raise no(f"--weight-decay {cfg.weight_decay:g}", "the theorems step along the gradient estimate alone")
    if cfg.monotone:
        raise no("--monotone", "the theorems keep every step")
    if str(cfg.pre_aggregate) != "none":
        raise no(f"--pre-aggregate {cfg.pre_aggregate}", "the theorems average the messages as sent")


def choose(cfg, dim: int) -> tuple[Rule, dict[str, Any]]:
    """The rule of the run ``cfg`` and the compressor's constants; InputError (one line) when no checked rule
    covers the run's stages."""
    from signsim import methods, stages
    from signsim.stages import plan

    comp = stages.compressor_constant_of(plan.of_config(cfg, methods.get(cfg.method)).compressor.at_dim(dim), dim)
    kind, omega = comp["kind"], comp.get("omega")
    ef = str(cfg.error_feedback).split(":")[0]
    est = str(cfg.grad_estimator).split(":")[0]
    parts = [f"compressor {cfg.compressor}"] + ([f"error feedback {cfg.error_feedback}"] if ef != "none" else []) \
        + ([f"--grad-estimator {cfg.grad_estimator}"] if est != "none" else [])
    what = ", ".join(parts)
    others = [(cfg.aggregate != "mean", f"aggregate {cfg.aggregate}"),
              (bool(cfg.momentum), f"momentum {cfg.momentum:g}"),
              (cfg.server_opt != "sgd", f"server optimizer {cfg.server_opt}"),
              (cfg.down_compressor != "none", f"downlink compressor {cfg.down_compressor}")]
    extra = [text for bad, text in others if bad]
    if extra:
        raise _refuse(cfg, ", ".join([what, *extra]))
    if est == "diana" and omega == 0:  # DIANA with the identity is GD (docs/theory.md §8.7)
        rule = RULES["gd"]
    elif est in RULES:  # an estimator with a rule of its own (DIANA; MARINA once it exists)
        rule = RULES[est]
    elif est == "none" and ef == "none" and kind == "unbiased":
        rule = RULES["gd"] if omega == 0 else RULES["cgd"]
    elif est == "none" and ef in RULES:
        rule = RULES[ef]
    else:
        raise _refuse(cfg, what)
    if not rule.checked:
        raise InputError(f"--lr theory: method '{cfg.method}' ({what}): {rule.name}'s step-size condition "
                         f"({rule.formula}) is not yet checked against its paper's text; rules: {'; '.join(COVERED)}")
    if rule.key in ("cgd", "diana") and kind != "unbiased":
        raise _refuse(cfg, f"{what}: {rule.name}'s theorem takes an unbiased compressor")
    if rule.key == "cgd" and cfg.workers != 1:
        raise InputError(f"--lr theory: method '{cfg.method}' (compressor {cfg.compressor}) with --workers "
                         f"{cfg.workers}: the compressed-GD theorem ({rule.source}) is for one worker, and none for M "
                         "workers was checked; give --workers 1")
    return rule, comp


def theory_step(cfg) -> TheoryStep:
    """The step of the resolved run ``cfg`` (its ``lr`` still the word) with its constants; InputError (one line)
    when no checked rule applies."""
    from signsim import problems

    _check_setting(cfg)
    if cfg.problem not in SMOOTH_PROBLEMS:  # (before building it: a model file would import torch)
        raise InputError(f"--lr theory on problem '{cfg.problem}': no global smoothness constant L is known for it "
                         f"(the theorems' step sizes need one); the problems with one: {', '.join(SMOOTH_PROBLEMS)}")
    problem = problems.build(replace(cfg, dtype="float64", lr=1.0))
    rule, comp = choose(cfg, problem.dim)
    M = int(cfg.workers)
    s = smoothness(problem, M)
    omega = comp.get("omega")
    w_source = f"--compressor {cfg.compressor} at d = {problem.dim} (its module's constant; signsim list)"
    if rule.key == "gd":
        gamma = gd(s.L)
        constants = [Constant("L", s.L, s.source)]
    elif rule.key == "cgd":
        gamma = cgd(s.L, omega)
        constants = [Constant("L", s.L, s.source), Constant("omega", omega, w_source)]
    else:  # diana
        from signsim import methods
        from signsim.stages import plan

        alpha = float(plan.of_config(cfg, methods.get(cfg.method)).estimator.params[0])
        if alpha > 1.0 / (omega + 1.0):
            raise InputError(f"--grad-estimator {cfg.grad_estimator} with --lr theory: {rule.source} needs alpha <= "
                             f"1/(omega + 1) = {1.0 / (omega + 1.0):.4g} for --compressor {cfg.compressor} "
                             f"(omega = {omega:.4g})")
        gamma = diana(s.L_max, omega, M)
        constants = [Constant("L_max", s.L_max, "max_m L_m; " + s.source), Constant("omega", omega, w_source),
                     Constant("M", M, "--workers"), Constant("alpha", alpha, "--grad-estimator")]
    if not (0 < gamma < math.inf):
        raise InputError(f"--lr theory: the step {rule.formula} = {gamma:g} is not a positive float for these "
                         "constants")
    step = TheoryStep(rule, float(gamma), constants)
    stochastic = [why for bad, why in (((cfg.noise or "none") != "none", f"--noise {cfg.noise}"),
                                       (not s.exact, f"{problem.name}'s oracle samples")) if bad]
    if rule.exact_gradients and stochastic:
        step.warnings.append(f"--lr theory: {rule.source} takes exact gradients; this run's are stochastic "
                             f"({', '.join(stochastic)}), which the theorem does not cover")
    return step
