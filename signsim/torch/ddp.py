"""signsim's stages in real distributed training: a ``torch.distributed`` DDP communication hook (docs/api.md,
"Real distributed training"; docs/theory.md §13.1).

``model.register_comm_hook(state, signsim.torch.comm_hook)`` with ``state = signsim.torch.HookState(...)``: for each
gradient bucket DDP hands over, this rank applies its error feedback and compressor to its own gradient (the stage
modules' NumPy references: any built-in or plugin compressor), the ranks exchange their messages (``all_gather``),
and every rank computes the same aggregate by the aggregation's rule (the module's reference, with ties broken from
a server stream seeded identically on every rank), which DDP writes back as the gradient the optimizer steps along.
Bits are counted per rank as the messages are encoded (``signsim.accounting``), up and down.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.distributed as dist

from signsim.codes import SignZero, Tie, choice
from signsim.errors import InputError


class HookState:
    """One rank's state for ``comm_hook``: its stages (``compressor``, ``aggregate``, ``error_feedback`` none | ef, as
    ``signsim run`` names them), its worker stream (``seed``, ``rank``: the stream worker ``rank`` of a signsim run
    with that seed draws from), the server's stream (the same on every rank), each bucket's error memory, and the
    bits it sent and received (``bits_up``, ``bits_down``) over ``steps`` buckets."""

    def __init__(self, compressor: str = "sign", aggregate: str = "majority", error_feedback: str = "none",
                 sign_zero: str = "random", tie: str = "random", seed: int = 0, rank: int | None = None,
                 world_size: int | None = None, model: torch.nn.Module | None = None):
        from signsim import stages
        from signsim.seeding import WorkerStreams, server_stream

        if error_feedback not in ("none", "ef"):
            raise InputError(f"error_feedback {error_feedback!r}: the hook takes none | ef")
        self.compressor_spec = compressor
        stages.parse_compressor(compressor)  # the spec's grammar, checked now (a sparsifier's k needs d: per bucket)
        self.aggregate = stages.parse_aggregate(aggregate)
        refusal = stages.error_feedback_refusal(error_feedback, stages.parse_compressor(compressor).module,
                                                self.aggregate.name)
        if refusal == "contractive":
            raise InputError(f"error_feedback {error_feedback!r} with compressor {compressor!r}: error feedback "
                             "needs a contractive compressor")
        if refusal == "majority":
            raise InputError(f"error_feedback {error_feedback!r} with aggregate {aggregate!r}: the server must "
                             "average the corrected messages (aggregate='mean')")
        self.error_feedback = error_feedback
        self.sign_zero, self.tie = choice(SignZero, sign_zero), choice(Tie, tie)
        self.rank = dist.get_rank() if rank is None else int(rank)
        self.world_size = dist.get_world_size() if world_size is None else int(world_size)
        self.gen = WorkerStreams(seed)[self.rank]
        self.server = server_stream(seed)
        self.errors: dict[int, np.ndarray] = {}
        self.previous: dict[int, np.ndarray] = {}
        self._compressors: dict[int, object] = {}
        self.bits_up = 0
        self.bits_down = 0
        self.steps = 0
        #: each parameter's offset in x (``named_parameters`` order, as signsim's model path flattens): a bucket is
        #: processed in that order, so that a one-bucket model draws what the simulated run draws
        self.offsets: dict[int, int] = {}
        if model is not None:
            off = 0
            for p in model.parameters():
                if p.requires_grad:  # (x holds the trainable parameters, as the simulated run's)
                    self.offsets[id(p)] = off
                    off += p.numel()

    def order(self, bucket) -> np.ndarray | None:
        """Positions of the bucket's buffer in x's order (None: the buffer's own order)."""
        try:
            params = bucket.parameters()
        except AttributeError:
            return None
        if not self.offsets or any(id(p) not in self.offsets for p in params):
            return None
        starts = np.cumsum([0] + [p.numel() for p in params])
        if starts[-1] != bucket.buffer().numel():
            return None
        ranked = sorted(range(len(params)), key=lambda i: self.offsets[id(params[i])])
        return np.concatenate([np.arange(starts[i], starts[i + 1]) for i in ranked])

    def compressor(self, d: int):
        c = self._compressors.get(d)
        if c is None:
            from signsim import stages

            c = self._compressors[d] = stages.parse_compressor(self.compressor_spec, d)
        return c

    def message(self, index: int, g: np.ndarray) -> np.ndarray:
        """This rank's message for bucket ``index`` holding the gradient ``g``: C(g), or with error feedback
        p = g + e, C(p), e <- p - C(p) (EF with the step size outside, docs/theory.md §13.1)."""
        from signsim import accounting

        c = self.compressor(g.size)
        if self.error_feedback == "ef":
            e = self.errors.setdefault(index, np.zeros_like(g))
            p = g + e
        else:
            p = g
        msg = np.asarray(c.module.reference(p, c.params, int(self.sign_zero), self.gen), dtype=np.float64)
        if self.error_feedback == "ef":
            e[:] = p - msg
        self.bits_up += accounting.uplink_bits(c, g.size, self.sign_zero, int(np.count_nonzero(msg)))
        return msg

    def aggregate_of(self, index: int, msgs: np.ndarray) -> np.ndarray:
        """The aggregate of the ranks' messages (rows in rank order) by the aggregation's rule."""
        from signsim import accounting

        a = self.aggregate
        d = msgs.shape[1]
        prev = self.previous.get(index, np.zeros(d))
        out = np.asarray(a.module.reference(msgs, a.params, int(self.tie), self.server, prev), dtype=np.float64)
        self.previous[index] = out
        c = self.compressor(d)
        if accounting.broadcast_is_sparse(c, a):  # as the simulated run: the broadcast as it is encoded, its nonzeros
            self.bits_down += accounting.sparse_broadcast_bits(d, int(np.count_nonzero(out)))
        else:
            self.bits_down += accounting.downlink_bits(c, a, self.world_size, d, self.sign_zero, self.tie)
        self.steps += 1
        return out


def comm_hook(state: HookState, bucket):  # (DDP checks the annotations: none here)
    """DDP communication hook: this rank's message for the bucket, the ranks' messages gathered, the aggregate by
    the stage's rule returned as the bucket's gradient (same on every rank)."""
    buf = bucket.buffer()
    g = buf.detach().to(torch.float64).cpu().numpy()
    order = state.order(bucket)
    if order is not None:
        g = g[order]
    msg = torch.from_numpy(state.message(bucket.index(), g))
    gathered = [torch.empty_like(msg) for _ in range(state.world_size)]
    dist.all_gather(gathered, msg)
    agg = state.aggregate_of(bucket.index(), torch.stack(gathered).numpy())
    if order is not None:
        back = np.empty_like(agg)
        back[order] = agg
        agg = back
    fut: torch.futures.Future = torch.futures.Future()
    fut.set_result(torch.from_numpy(agg).to(buf.dtype).to(buf.device))
    return fut
