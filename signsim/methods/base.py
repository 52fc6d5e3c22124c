"""A method is a composition (optax-style) of small, independent stages, docs/theory.md §2 and §8:

    momentum  ->  compressor  ->  error feedback  ->  (attack)  ->  aggregation

followed by the update x <- x - gamma_k * direction. A ``MethodSpec`` names one such composition and its
defaults; ``--compressor``, ``--error-feedback``, ``--aggregate`` and ``--momentum`` recompose any of them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MethodSpec:
    name: str
    summary: str
    #: the compressor spec (``signsim.stages.COMPRESSORS``), e.g. "sign" or "qsgd:4"
    compressor: str
    #: the aggregation spec (``signsim.stages.aggregation``), e.g. "majority"
    default_aggregate: str
    #: "none" | "ef" | "ef21"
    error_feedback: str = "none"
    #: "ema" (exponential moving average, off at beta = 0) or "lion"
    momentum_kind: str = "ema"
    default_momentum: float = 0.0
    #: Lion's beta2
    default_momentum2: float | None = None
    #: step size when neither the user nor the problem sets one (None: the global default)
    default_lr: float | None = None
    #: start the momentum buffer at the first stochastic gradient, m_0 = g_hat(x_0) (SSDM, docs/theory.md §3);
    #: otherwise at zero (Signum)
    momentum_from_first: bool = False
    #: the method's analysis needs unbiased gradients of one global objective (SSDM, arXiv v6 correction)
    needs_homogeneous: bool = False
    #: the method's defaults of other options (``--grad-estimator``, ``--server-opt``, ``--down-compressor``,
    #: ``--down-feedback``, ``--prox-mu``, ``--local-steps``), by the option's field name; the user's value wins
    presets: tuple[tuple[str, object], ...] = ()

    def defaults(self) -> str:
        """The stages and defaults, one line (for ``signsim list``)."""
        from signsim.stages import registry

        compressor = registry.parse("compressor", self.compressor)
        parts = [f"compressor {compressor.spec}", f"aggregate {self.default_aggregate}"]
        if self.error_feedback != "none":
            parts.append(f"error feedback {self.error_feedback}")
        if self.momentum_kind == "lion":
            parts.append(f"lion momentum beta1 {self.default_momentum}, beta2 {self.default_momentum2}")
        elif self.default_momentum:
            start = "g_hat(x_0)" if self.momentum_from_first else "0"
            parts.append(f"momentum {self.default_momentum} (m_0 = {start})")
        if self.default_lr is not None:
            parts.append(f"lr {self.default_lr:g}")
        parts += [f"--{field.replace('_', '-')} {spec}" for field, spec in self.presets]
        return ", ".join(parts)
