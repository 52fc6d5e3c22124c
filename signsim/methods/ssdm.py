"""SSDM: stochastic sign of the worker's momentum, server averages the signs (reconstructed) (math.md §2)."""

from signsim.codes import Aggregate, Compressor
from signsim.methods.base import MethodSpec

SPEC = MethodSpec(
    name="ssdm",
    summary="SSDM: stochastic sign of the worker's momentum, server averages the signs (reconstructed)",
    compressor=Compressor.STO_SIGN,
    default_aggregate=Aggregate.MEAN,
    allowed_aggregates=frozenset({Aggregate.MEAN, Aggregate.MAJORITY}),
    default_momentum=0.9,
    momentum_from_first=True,
    needs_homogeneous=True,
)
