"""Least squares, f_j(w) = (a_j^T w - y_j)^2 / 2 + (lam/2)||w||^2 with the labels as targets (docs/theory.md §5).
Kernels in ``signsim.problems.glm``."""

from signsim.codes import Problem
from signsim.problems import glm
from signsim.problems.base import ProblemInstance, ProblemSpec
from signsim.problems.finite_sum import DATA_DEFAULTS, DATA_OPTIONS, load_prepared, pack
from signsim.problems.logistic import X0, glm_instance

CODE = int(Problem.LEAST_SQUARES)  # assigned in signsim.codes


def build(cfg) -> ProblemInstance:
    loaded = load_prepared(cfg, intercept=cfg.intercept)
    prep = loaded.prep
    arrays = pack(prep, prep.y_train, prep.y_test, loaded.split, [glm.LEAST_SQUARES], [cfg.l2], cfg.dtype)
    return glm_instance("least-squares", CODE, cfg, arrays, loaded.split)


SPEC = ProblemSpec(
    name="least-squares", code=CODE,
    summary="least squares on --data with the labels as targets, --l2",
    options=DATA_OPTIONS | {"intercept", "x0"},
    defaults={**DATA_DEFAULTS, "data": "builtin:breast-cancer", "intercept": True, "x0": X0},
    build=build,
)
