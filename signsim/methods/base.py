"""A method is a composition (optax-style) of three small transformations, math.md §2:

    momentum (beta)  ->  compress (what a worker sends)  ->  aggregate (what the server broadcasts)

followed by the update x <- x - gamma_k * broadcast (error feedback puts gamma inside the message, so its
update is x <- x - broadcast). A ``MethodSpec`` names one such composition and its defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

from signsim.codes import Aggregate, Compressor


@dataclass(frozen=True)
class MethodSpec:
    name: str
    summary: str
    compressor: Compressor
    default_aggregate: Aggregate
    allowed_aggregates: frozenset[Aggregate]
    default_momentum: float = 0.0
    #: step size when neither the user nor the problem sets one (None: the global default)
    default_lr: float | None = None
    #: start the momentum buffer at the first stochastic gradient, m_0 = g_hat(x_0) (SSDM, math.md §3);
    #: otherwise at zero (Signum)
    momentum_from_first: bool = False
    #: the method's analysis needs unbiased gradients of one global objective (SSDM, arXiv v6 correction)
    needs_homogeneous: bool = False
