"""``signsim check-spb``: per-coordinate success probabilities at a point, the SPB verdict, rho-norms
(docs/theory.md §1); the numbers and their fields come from ``signsim.diagnostics.spb_report``."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from signsim import __version__
from signsim.interface.config import RunConfig


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
    samples_given: bool = False  # --samples was given (it is used by the Monte Carlo estimator only)

    @classmethod
    def build(cls, workers_given: bool = False, **given: Any) -> SpbOptions:
        """The options, each checked against its row of ``signsim.interface.options`` (range and choices)."""
        from signsim.interface.options import check_fields

        o = cls(workers_given=workers_given, **{k: v for k, v in given.items() if v is not None})
        check_fields(o, "check-spb")
        return o


#: the per-worker success probabilities go into the JSON when M x d is at most this
MAX_WORKER_MATRIX = 200_000


def check_spb(cfg: RunConfig, o: SpbOptions) -> dict[str, Any]:
    """``_check_spb`` with NumPy's overflow warnings off: at a point of a large magnitude the squares of the
    gradient and the noise scale overflow (their fields are then infinite or null, said in one warning); the sign
    laws and the verdict stay exact."""
    import numpy as np

    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        doc, overflow = _check_spb(cfg, o)
    if overflow:
        given = f"--at {o.at}" if o.at not in (None, "init") else f"--x0 {cfg.x0}"
        doc["warnings"].append(f"{given}: gradients this large overflow float64 when squared: the noise-scale "
                               "fields (sigma, its signal-to-noise ratio, the l1,2 quantity) are infinite or null; "
                               "the sign probabilities and the verdict are exact")
    return doc


def _check_spb(cfg: RunConfig, o: SpbOptions) -> tuple[dict[str, Any], bool]:
    """The document of ``signsim check-spb``. A round (docs/theory.md §12): with --local-steps H > 1 the message is
    the sign of the round's pseudo-gradient u (closed form where one exists, else Monte Carlo over rounds); with
    S < M clients per round the vote fields describe the vote of S sampled workers, exact over the sampling."""
    from signsim import noise, problems
    from signsim.diagnostics import local_steps
    from signsim.diagnostics.estimators import choose, per_worker
    from signsim.diagnostics.point import resolve_point
    from signsim.diagnostics.rounds import of_config
    from signsim.diagnostics.spb_report import at_point, estimate_fields, l12_assumptions, workers_fields
    from signsim.diagnostics.votes import agree_disagree, message_law
    from signsim.errors import InputError
    from signsim.noise.base import no_variance

    if o.samples_given and o.estimator not in ("auto", "monte-carlo"):
        raise InputError(f"--samples {o.samples}: has no effect with --estimator {o.estimator} (it draws no "
                         "samples); drop --samples or choose --estimator monte-carlo")
    rnd = of_config(cfg, o.at)
    problem = problems.build(cfg)
    model, params = noise.for_config(cfg, problem.dim)
    if rnd.local:
        method = local_steps.choose(problem, model, o.estimator, rnd.local_steps)
    else:
        method = choose(problem, model, cfg.batch_size, o.estimator)
    unused = []
    if o.samples_given and method != "monte-carlo":  # chosen by auto (chosen by the user: refused above)
        unused.append(f"--samples {o.samples} is not used: --estimator auto chose the {method} estimator, which "
                      "draws no samples")
    if method == "monte-carlo":  # its samples x H local steps x d coordinates (x B rows of a finite sum)
        from signsim.problems.finite_sum import oracle_rows
        from signsim.resources import check_work, note

        per = float(problem.dim) * oracle_rows(problem, cfg.batch_size)
        note(check_work(float(o.samples) * max(1, rnd.local_steps) * per,
                        f"--samples {o.samples} (Monte Carlo over dimension {problem.dim})", "lower --samples"))
    x, where = resolve_point(o.at, problem, cfg)
    round_doc: dict[str, Any] = {**rnd.fields(), "message": "sign of one stochastic gradient", "method": method,
                                 "note": None, "rounds": None, "u_mean": None, "u_std": None}
    if rnd.local:
        est, ver, local = local_steps.at_point(problem, model, params, x, cfg, rnd, method, o.samples, o.confidence,
                                               o.interval, o.correction)
        round_doc.update(local)
        why = local_steps.unbiased_note(rnd.local_steps)
        not_bound, no_var = why, why
    else:
        est, ver = at_point(problem, model, params, x, cfg, method, o.samples, o.confidence, o.interval,
                            o.correction)
        not_bound, no_var = l12_assumptions(problem, model, params, cfg.batch_size), no_variance(model, params)
    g = est.grad
    import numpy as np

    if g is not None and not np.all(np.isfinite(g)):  # an overflow: no success probability means anything there
        given = f"--at {o.at}" if o.at not in (None, "init") else f"--x0 {cfg.x0}"  # the start: x0 made it
        raise InputError(f"{given}: the gradient at {where} is not finite (it overflows); choose a point of a "
                         "smaller magnitude")
    laws = est.laws
    differ = laws.sampling.distinct > 1 or cfg.byzantine > 0
    round_doc["vote"] = (f"a uniformly sampled {rnd.clients} of the {rnd.workers} workers, exact over the sampling"
                         + (" (identical workers: the vote of " + str(rnd.clients) + ")" if not differ else "")
                         if rnd.sampled else f"all {rnd.workers} workers")
    doc: dict[str, Any] = {
        "signsim_version": __version__,
        "command": "check-spb",
        "config": cfg.to_dict(),
        "options": {k: v for k, v in asdict(o).items() if k not in ("workers_given", "samples_given")},
        "problem": problem.facts(),
        "point": where,
        **estimate_fields(est, ver, o.top, not_bound, no_var),
        "round": round_doc,
    }
    doc["warnings"] = [*problem.warnings, *(doc.get("warnings") or []), *unused]
    sigma = getattr(est, "sigma", None)
    overflow = g is not None and not (np.all(np.isfinite(np.square(g))) and (
        sigma is None or np.all(np.isfinite(np.square(np.asarray(sigma, dtype=float))))))
    if o.workers_given or differ or rnd.sampled:
        doc.update(workers_fields(est, cfg.sign_zero, cfg.tie, cfg.byzantine, cfg.attack, rnd.clients))
    if differ:
        doc["per_worker"] = per_worker(laws, cfg.sign_zero, cfg.byzantine)
        if rnd.local:  # E u_m is not an estimate of g: no bias to report
            for row in doc["per_worker"]:
                row["bias"] = row["relative_bias"] = None
        if cfg.workers * problem.dim <= MAX_WORKER_MATRIX:
            a, _ = agree_disagree(message_law(laws.raw, cfg.sign_zero), g[None, :])
            doc["rho_workers"] = a[laws.sampling.worker_class]
    return doc, overflow
