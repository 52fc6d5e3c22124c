"""SGD: workers send g_hat, the server averages (32-bit floats both ways) (math.md §2)."""

from signsim.codes import Aggregate, Compressor
from signsim.methods.base import MethodSpec

SPEC = MethodSpec(
    name="sgd",
    summary="SGD: workers send g_hat, the server averages (32-bit floats both ways)",
    compressor=Compressor.IDENTITY,
    default_aggregate=Aggregate.MEAN,
    allowed_aggregates=frozenset({Aggregate.MEAN, Aggregate.MAJORITY}),
    default_momentum=0.0,
    default_lr=1e-3,
    momentum_from_first=False,
    needs_homogeneous=False,
)
