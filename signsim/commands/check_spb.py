"""``signsim check-spb``: per-coordinate success probabilities at a point, the SPB verdict, rho-norms
(docs/theory.md §1); the numbers and their fields come from ``signsim.diagnostics.spb_report``."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from signsim import __version__
from signsim.config import RunConfig


@dataclass
class SpbOptions:
    at: str = "init"
    estimator: str = "auto"
    samples: int = 2000
    confidence: float = 0.95
    interval: str = "wilson"
    correction: str = "holm"
    top: int = 10
    workers_given: bool = False

    @classmethod
    def build(cls, workers_given: bool = False, **given: Any) -> SpbOptions:
        """The options, each checked against its row of ``signsim.options`` (range and choices)."""
        from signsim.options import check_fields

        o = cls(workers_given=workers_given, **{k: v for k, v in given.items() if v is not None})
        check_fields(o, "check-spb")
        return o


#: the per-worker success probabilities go into the JSON when M x d is at most this
MAX_WORKER_MATRIX = 200_000


def check_spb(cfg: RunConfig, o: SpbOptions) -> dict[str, Any]:
    from signsim import noise, problems
    from signsim.diagnostics.estimators import choose, per_worker
    from signsim.diagnostics.point import resolve_point
    from signsim.diagnostics.spb_report import at_point, estimate_fields, l12_assumptions, workers_fields
    from signsim.diagnostics.votes import agree_disagree, message_law
    from signsim.noise.base import no_variance

    problem = problems.build(cfg)
    model, params = noise.for_config(cfg, problem.dim)
    method = choose(problem, model, cfg.batch_size, o.estimator)
    x, where = resolve_point(o.at, problem, cfg)
    est, ver = at_point(problem, model, params, x, cfg, method, o.samples, o.confidence, o.interval, o.correction)
    g = est.grad
    laws = est.laws
    doc: dict[str, Any] = {
        "signsim_version": __version__,
        "command": "check-spb",
        "config": cfg.to_dict(),
        "options": {k: v for k, v in asdict(o).items() if k != "workers_given"},
        "problem": problem.facts(),
        "point": where,
        **estimate_fields(est, ver, o.top, l12_assumptions(problem, model, params), no_variance(model, params)),
    }
    differ = laws.sampling.distinct > 1 or cfg.byzantine > 0
    if o.workers_given or differ:
        doc.update(workers_fields(est, cfg.sign_zero, cfg.tie, cfg.byzantine, cfg.attack))
    if differ:
        doc["per_worker"] = per_worker(laws, cfg.sign_zero, cfg.byzantine)
        if cfg.workers * problem.dim <= MAX_WORKER_MATRIX:
            a, _ = agree_disagree(message_law(laws.raw, cfg.sign_zero), g[None, :])
            doc["rho_workers"] = a[laws.sampling.worker_class]
    return doc
