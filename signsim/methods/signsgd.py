"""signSGD: workers send sign g_hat, the server returns the majority vote (1 bit each way) (math.md §2)."""

from signsim.codes import Aggregate, Compressor
from signsim.methods.base import MethodSpec

SPEC = MethodSpec(
    name="signsgd",
    summary="signSGD: workers send sign g_hat, the server returns the majority vote (1 bit each way)",
    compressor=Compressor.SIGN,
    default_aggregate=Aggregate.MAJORITY,
    allowed_aggregates=frozenset({Aggregate.MAJORITY, Aggregate.MEAN}),
    default_momentum=0.0,
    momentum_from_first=False,
    needs_homogeneous=False,
)
