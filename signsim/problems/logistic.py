"""Logistic regression, f_j(w) = log(1 + exp(-y_j a_j^T w)) + (lam/2)||w||^2, y_j in {-1, +1} (docs/theory.md §5).

Two-class data map the larger label to +1 unless ``--positive-class`` says otherwise; data with more classes
need ``--positive-class`` (one class against the rest). Kernels in ``signsim.problems.glm``.
"""

import numpy as np

from signsim.codes import Problem
from signsim.errors import InputError
from signsim.problems import glm
from signsim.problems.base import ProblemInstance, ProblemSpec
from signsim.problems.finite_sum import DATA_DEFAULTS, DATA_OPTIONS, FiniteSum, load_prepared, oracle_ref_from, pack

CODE = int(Problem.LOGISTIC)  # assigned in signsim.codes
#: the starting point x0 (every coordinate) when --x0 is not given
X0 = 0.0


def signed_labels(y_train, y_test, positive, spec):
    classes = np.unique(np.concatenate([y_train, y_test]))
    if positive is None:
        if classes.size > 2:
            raise InputError(f"--data {spec}: {classes.size} classes; logistic regression needs "
                             "--positive-class C (one class against the rest)")
        positive = classes.max()
    elif positive not in classes:
        raise InputError(f"--positive-class {positive:g}: no such label in {spec} (labels: "
                         f"{', '.join(f'{c:g}' for c in classes[:10])}{'...' if classes.size > 10 else ''})")
    return np.where(y_train == positive, 1.0, -1.0), np.where(y_test == positive, 1.0, -1.0)


def one_class_warning(y_train, spec, positive, l2: float) -> str | None:
    """The warning for training labels that are all +1 or all -1 after ``signed_labels`` (docs/reference.md): the
    problem is defined (the loss goes to 0 as w moves along the data), but there is no boundary to learn and,
    with --l2 0, no minimizer; None for two-sided labels."""
    if y_train.size == 0 or np.unique(y_train).size > 1:
        return None
    side = "the positive class" if y_train[0] > 0 else "the negative class"
    which = f" (--positive-class {positive:g})" if positive is not None else ""
    return (f"--data {spec}: every training label is in {side}{which}: logistic regression has no boundary to "
            "learn" + (" and, with --l2 0, no minimizer (the loss tends to 0 as |w| grows)" if l2 == 0 else ""))


def build(cfg) -> ProblemInstance:
    loaded = load_prepared(cfg, intercept=cfg.intercept)
    prep, split = loaded.prep, loaded.split
    y_train, y_test = signed_labels(prep.y_train, prep.y_test, cfg.positive_class, cfg.data)
    arrays = pack(prep, y_train, y_test, split, [glm.LOGISTIC], [cfg.l2], cfg.dtype)
    instance = glm_instance("logistic", CODE, cfg, arrays, split)
    if (warning := one_class_warning(y_train, cfg.data, cfg.positive_class, cfg.l2)) is not None:
        instance.warnings.append(warning)
    return instance


def glm_instance(name, code, cfg, arrays, split) -> ProblemInstance:
    pf, pi, A, b = arrays["pf"], arrays["pi"], arrays["A"], arrays["b"]
    d = glm.n_features(pi)

    def per_sample_grads(x, rows, labels=None):
        return glm.per_sample_grads_ref(x, pf, pi, A, b, rows, labels)

    n = int(pi[1])
    return ProblemInstance(
        name=name, code=code, dim=d, x0=np.full(d, cfg.x0 if cfg.x0 is not None else X0),
        loss_ref=lambda x: glm.loss_ref(x, pf, pi, A, b),
        grad_ref=lambda x: per_sample_grads(x, np.arange(n)).mean(axis=0),
        oracle_ref=oracle_ref_from(per_sample_grads, split, d), heterogeneous=split.heterogeneous,
        finite_sum=FiniteSum(n, split, per_sample_grads, lambda x: glm.per_sample_sq_norms(x, pf, pi, A, b)),
        classifier=name == "logistic", flip_labels=(lambda y: -y) if name == "logistic" else None, **arrays,
    )


SPEC = ProblemSpec(
    name="logistic", code=CODE,
    summary="logistic regression on --data (labels -> +-1, --positive-class for multi-class), --l2",
    options=DATA_OPTIONS | {"positive_class", "intercept", "x0"},
    defaults={**DATA_DEFAULTS, "data": "builtin:breast-cancer", "intercept": True, "x0": X0},
    build=build, label_flip="y -> -y (the +-1 labels)",
)
