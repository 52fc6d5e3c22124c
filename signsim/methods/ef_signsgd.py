"""EF-signSGD: scaled sign of gamma g_hat + error, error kept locally, server averages (math.md §2)."""

from signsim.codes import Aggregate, Compressor
from signsim.methods.base import MethodSpec

SPEC = MethodSpec(
    name="ef-signsgd",
    summary="EF-signSGD: scaled sign of gamma g_hat + error, error kept locally, server averages",
    compressor=Compressor.SCALED_SIGN_EF,
    default_aggregate=Aggregate.MEAN,
    allowed_aggregates=frozenset({Aggregate.MEAN}),
    default_momentum=0.0,
    default_lr=1e-3,
    momentum_from_first=False,
    needs_homogeneous=False,
)
