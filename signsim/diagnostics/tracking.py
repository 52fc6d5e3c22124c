"""Quantities tracked during a run (``run --track-spb N``, ``run --track-diversity N``), in the manner of
Cockpit's quantities: each has a ``name`` (its list in the results' ``tracks``), a schedule (``every`` N
iterations, from its run option), the ``fields`` of the rows it produces, and ``compute(k, x)``, which returns
one row of plain values (numbers, strings, lists) at the iterate x_k. ``run`` records the quantities a config
asks for (``requested``) and the figures read their fields (``field``).

The numbers are those of the diagnostics commands at a point, computed by the same code
(``spb_report``, ``diversity_report``) with fewer samples. Nothing heavy is imported before a quantity is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Field:
    name: str
    #: what it is (a figure's axis label)
    label: str


class Quantity:
    """A tracked quantity: ``name``, ``option`` (the run option holding its schedule), ``fields`` (besides the
    row's ``iter``) and, once built for a run, ``every`` and ``compute``."""

    name: str
    option: str
    fields: tuple[Field, ...]

    def __init__(self, every: int, problem, model, params, cfg):
        self.every = every
        self.problem, self.model, self.params, self.cfg = problem, model, params, cfg

    def compute(self, k: int, x) -> dict[str, Any]:
        raise NotImplementedError

    def warnings(self) -> list[str]:
        """What the run should warn about the rows computed so far (estimates outside their range), once each."""
        return []


class SpbTrack(Quantity):
    """At x_k: the fraction of coordinates (with g_i != 0) where SPB holds, min rho, the rho-norm
    E<g, sign g_hat> under --sign-zero and the rho_M-norm E<g, vote> from each worker's own law (docs/theory.md
    §9); exact or closed form where they apply, else Monte Carlo with SAMPLES samples per distinct worker
    oracle."""

    name = "spb"
    option = "track_spb"
    #: Monte Carlo samples per tracked point when no exact or closed form applies
    SAMPLES = 200
    #: the verdict's confidence, interval and multiple-testing correction (check-spb's defaults)
    CONFIDENCE, INTERVAL, CORRECTION = 0.95, "wilson", "holm"
    fields = (
        Field("method_of_estimate", "how the success probabilities were estimated"),
        Field("spb_fraction", "fraction of coordinates with SPB"),
        Field("rho_min", "min_i rho_i"),
        Field("rho_norm", "E<g, sign g_hat> (rho-norm)"),
        Field("rho_M_norm", "E<g, vote> of the M workers (rho_M-norm)"),
        Field("sampling", "the workers' sampling scheme"),
        Field("workers_rho_min", "per worker: min_i rho_i (workers that differ)"),
        Field("workers_rho_norm", "per worker: E<g, sign g_hat_m> (workers that differ)"),
        Field("l1_norm", "||g||_1"),
        Field("l2_norm", "||g||_2"),
        Field("verdict", "the SPB verdict"),
    )

    def __init__(self, every: int, problem, model, params, cfg):
        from signsim.diagnostics.estimators import choose

        super().__init__(every, problem, model, params, cfg)
        self.method = choose(problem, model, cfg.batch_size, "auto")

    def compute(self, k: int, x) -> dict[str, Any]:
        import numpy as np

        from signsim.diagnostics import spb
        from signsim.diagnostics.spb_report import at_point, vote_fields

        cfg = self.cfg
        est, ver = at_point(self.problem, self.model, self.params, x, cfg, self.method, self.SAMPLES,
                            self.CONFIDENCE, self.INTERVAL, self.CORRECTION, salt=k + 1)
        nz = est.grad != 0
        return {"method_of_estimate": self.method,
                "spb_fraction": float(np.mean(ver.status[nz] == "holds")) if nz.any() else None,
                "rho_min": float(np.min(est.rho[nz])) if nz.any() else None,
                "rho_norm": spb.inner_product(est.grad, est.margin),
                "rho_M_norm": vote_fields(est, cfg.sign_zero, cfg.tie, cfg.byzantine, cfg.attack)["rho_M_norm"],
                "sampling": est.laws.sampling.scheme,
                **self.per_worker(est),
                "l1_norm": float(np.abs(est.grad).sum()),
                "l2_norm": float(np.linalg.norm(est.grad)), "verdict": ver.verdict}

    def per_worker(self, est) -> dict[str, Any]:
        """Workers that differ: each worker's min rho_i and E<g, sign g_hat_m> at the tracked point."""
        if est.laws.sampling.distinct == 1:
            return {}
        from signsim.diagnostics.estimators import per_worker

        rows = per_worker(est.laws, self.cfg.sign_zero, self.cfg.byzantine)
        return {"workers_rho_min": [r["rho_min"] for r in rows],
                "workers_rho_norm": [r["rho_norm"] for r in rows]}


class DiversityTrack(Quantity):
    """B_S at x_k, exact for finite sums, otherwise McCandlish's two-batch estimator from M simulated worker
    minibatches (small batch tau, big batch max(2, M) tau), averaged over PAIRS pairs before the ratio."""

    name = "diversity"
    option = "track_diversity"
    #: batch pairs per tracked point for the two-batch estimator
    PAIRS = 256
    fields = (
        Field("method_of_estimate", "the estimator of B_S"),
        Field("B_S", "batch-size bound B_S"),
        Field("inv_B_S", "1 / B_S"),
        Field("delta_S", "gradient diversity Delta_S"),
        Field("B_simple", "noise scale B_simple = tr(Sigma) / ||G||^2"),
        Field("note", "why the estimates are null, or which is outside its range"),
    )

    def __init__(self, every: int, problem, model, params, cfg):
        from signsim.diagnostics.diversity_report import choose

        super().__init__(every, problem, model, params, cfg)
        self.method = choose(problem, model.name, "auto")
        self.out_of_range: list[int] = []

    def compute(self, k: int, x) -> dict[str, Any]:
        """The row at x_k; the estimates are null with a note when no finite variance exists or when the
        two-batch estimate of ||G||^2 is negative, and carry a note when that of tr(Sigma) is (docs/theory.md
        §6, §10)."""
        from signsim.diagnostics.diversity_report import measure

        d, _ = measure(self.problem, self.model, self.params, x, self.cfg, self.method, self.PAIRS,
                       salt=10_000_000 + k)
        if d.undefined:
            return {"method_of_estimate": self.method, "B_S": None, "inv_B_S": None, "delta_S": None,
                    "B_simple": None, "note": d.undefined}
        outside = d.out_of_range()
        if outside:
            self.out_of_range.append(k)
        if d.grad_sq < 0:
            return {"method_of_estimate": self.method, "B_S": None, "inv_B_S": None, "delta_S": None,
                    "B_simple": None, "note": " ".join(outside)}
        return {"method_of_estimate": self.method, "B_S": d.B_S, "inv_B_S": d.inv_B_S, "delta_S": d.delta_S,
                "B_simple": d.B_simple, "note": " ".join(outside) or None}

    def warnings(self) -> list[str]:
        if not self.out_of_range:
            return []
        ks = self.out_of_range
        at = ", ".join(map(str, ks[:5])) + (f" and {len(ks) - 5} more" if len(ks) > 5 else "")
        return [f"tracked diversity: the two-batch estimates at iterations {at} fall outside their possible range "
                f"(a negative tr(Sigma) or ||G||^2; see each row's note): those rows' B_S and B_simple are not "
                f"meaningful (raise the pairs with signsim diversity --at run:K --pairs N)"]


#: every tracked quantity, in the order a run records them
QUANTITIES: tuple[type[Quantity], ...] = (SpbTrack, DiversityTrack)


def requested(cfg, problem, model, params) -> list[Quantity]:
    """The quantities ``cfg`` asks a run to track, built for its problem and noise."""
    return [q(every, problem, model, params, cfg) for q in QUANTITIES if (every := getattr(cfg, q.option))]


def field(quantity: str, name: str) -> Field:
    """The field ``name`` of the tracked quantity ``quantity`` (KeyError for an unknown one)."""
    for q in QUANTITIES:
        if q.name == quantity:
            for f in q.fields:
                if f.name == name:
                    return f
    raise KeyError(f"{quantity}.{name}")
