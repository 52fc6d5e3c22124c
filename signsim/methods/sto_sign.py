"""Stochastic sign descent: workers send sign~(g_hat), +1 w.p. 1/2 + g_i / (2 ||g||_2), server averages
(math.md §2). ||v||_2 sign~(v) is unbiased for v; of an exact gradient, rho_i = 1/2 + |g_i| / (2 ||g||_2)."""

from signsim.codes import Aggregate, Compressor
from signsim.methods.base import MethodSpec

SPEC = MethodSpec(
    name="sto-sign",
    summary="stochastic sign descent: +1 w.p. 1/2 + g_i/(2 ||g||_2) else -1, the server averages the signs",
    compressor=Compressor.STO_SIGN,
    default_aggregate=Aggregate.MEAN,
    allowed_aggregates=frozenset({Aggregate.MEAN, Aggregate.MAJORITY}),
    default_momentum=0.0,
    momentum_from_first=False,
    needs_homogeneous=False,
)
