"""Signum: sign of the worker's momentum m = beta m + (1-beta) g_hat, majority vote (beta 0.9) (math.md §2)."""

from signsim.codes import Aggregate, Compressor
from signsim.methods.base import MethodSpec

SPEC = MethodSpec(
    name="signum",
    summary="Signum: sign of the worker's momentum m = beta m + (1-beta) g_hat, majority vote (beta 0.9)",
    compressor=Compressor.SIGN,
    default_aggregate=Aggregate.MAJORITY,
    allowed_aggregates=frozenset({Aggregate.MAJORITY, Aggregate.MEAN}),
    default_momentum=0.9,
    momentum_from_first=False,
    needs_homogeneous=False,
)
