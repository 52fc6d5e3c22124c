"""One place that assembles a run from its resolved config: problem, noise model, method stages, engine.

``signsim run``, the diagnostics' ``--at run:K`` and the tests all build through ``build(cfg)``, so a new
stage or problem is wired once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class Built:
    cfg: Any
    method: Any  # MethodSpec
    problem: Any  # ProblemInstance
    model: Any  # NoiseModel
    params: np.ndarray
    settings: Any  # engine.driver.Settings
    engine: Any  # engine.driver.Engine


def build(cfg, problem=None) -> Built:
    """Assemble ``cfg`` (a resolved RunConfig); ``problem`` reuses an instance already built from it."""
    from signsim import methods, noise, problems
    from signsim.engine.driver import Engine, Settings

    method = methods.get(cfg.method)
    if problem is None:
        problem = problems.build(cfg)
    model, params = noise.parse(cfg.noise or "none")
    settings = Settings.from_config(cfg, method, problem.dim)
    engine = Engine(problem, model, params, settings, cfg.workers, cfg.iters, cfg.eval_every, cfg.seed)
    return Built(cfg, method, problem, model, params, settings, engine)
