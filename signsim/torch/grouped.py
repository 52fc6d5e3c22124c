"""Every worker's minibatch gradient from one forward and one backward pass (docs/theory.md §13.2).

``--model-gradients grouped``: the S participants' minibatches go through the model as one batch of S tau samples,
each layer with trainable parameters computing each worker's rows with that worker's own parameters (a batched
matrix product for ``Linear``; a convolution of S groups for ``Conv1d/2d/3d``), the other layers as they are on the
whole batch. The loss is the sum over the workers of the model file's loss on each worker's rows, so one backward
pass gives, in the rows of one (S x d) tensor, the gradient of each worker's own mean loss with respect to its own
parameters:

    g_j = d/dx_j  loss(model(x_j; X_j), y_j),   j = 1..S,

the same quantity as ``torch.func.vmap`` over the workers of ``grad`` (``--model-gradients vmap``), summed in another
order (equal to rounding; a test checks it). For a layer of weight W the gradient is the grouped sum of activation
times back-propagated error, sum over i in worker j's rows of delta_i a_i^T, which autograd computes through the
batched product.

Which models: the forward is traced with ``torch.fx``; every layer holding trainable parameters must be a
``Linear`` or a zero-padded ``Conv`` (no parameter used outside them), no batch-norm layer, and the traced model must
keep each sample's computation to itself (its gradients grouped match one worker's own ``torch.autograd`` gradients
on a probe batch, checked once). Anything else is ``NotGroupable``, with the reason.
"""

from __future__ import annotations

import math

import torch
import torch.fx
from torch import nn
from torch.nn import functional as F

#: the layers whose parameters are taken per worker
LINEAR = (nn.Linear,)
CONV = {nn.Conv1d: F.conv1d, nn.Conv2d: F.conv2d, nn.Conv3d: F.conv3d}
#: layers that mix the samples of a batch (their statistics over S tau samples are not each worker's own)
MIXING = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.SyncBatchNorm)


class NotGroupable(Exception):
    """The model cannot be run grouped (the message says why)."""


def linear(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor | None, S: int) -> torch.Tensor:
    """``Linear`` with worker j's weight W[j] (S x out x in) and bias b[j] on its rows of x (S n rows in all, worker
    by worker; any shape (..., in))."""
    xs = x.reshape(S, -1, x.shape[-1])
    y = torch.bmm(xs, W.transpose(1, 2)) if b is None else torch.baddbmm(b.unsqueeze(1), xs, W.transpose(1, 2))
    return y.reshape(*x.shape[:-1], W.shape[1])


def conv(layer, x: torch.Tensor, W: torch.Tensor, b: torch.Tensor | None, S: int) -> torch.Tensor:
    """A zero-padded ``Conv`` layer with worker j's weight W[j] and bias b[j] on its rows of x: the S workers' channels
    side by side, one convolution of S (times the layer's own) groups."""
    n, C, space = x.shape[0] // S, x.shape[1], x.shape[2:]
    xs = x.reshape(S, n, C, *space).transpose(0, 1).reshape(n, S * C, *space)
    y = CONV[type(layer)](xs, W.reshape(-1, *W.shape[2:]), None if b is None else b.reshape(-1), layer.stride,
                          layer.padding, layer.dilation, layer.groups * S)
    return y.reshape(n, S, W.shape[1], *y.shape[2:]).transpose(0, 1).reshape(S * n, W.shape[1], *y.shape[2:])


class _Run(torch.fx.Interpreter):
    """The traced graph run node by node, the Linear and Conv layers with the parameters of each worker in ``Y``."""

    def __init__(self, grouped: Grouped):
        super().__init__(grouped.graph)
        self.grouped, self.Y = grouped, None

    def call_module(self, target, args, kwargs):
        layer = self.fetch_attr(target)
        kind = type(layer)
        if kind not in LINEAR and kind not in CONV:
            return super().call_module(target, args, kwargs)
        g, Y = self.grouped, self.Y
        W, b = g._param(Y, layer, target, "weight"), g._param(Y, layer, target, "bias")
        return linear(args[0], W, b, Y.shape[0]) if kind in LINEAR else conv(layer, args[0], W, b, Y.shape[0])


class Grouped:
    """The traced ``module`` run grouped. ``names``, ``shapes`` and ``offsets`` place each trainable parameter in the
    flat vector (``ModelOracle``'s order); frozen parameters and buffers are used as they are."""

    def __init__(self, module: nn.Module, loss_fn, names, shapes, offsets):
        #: a model that is one layer is traced as the layer "0" of a Sequential (its parameters' names lack "0.")
        self.alone = torch.fx.Tracer().is_leaf_module(module, "")
        try:
            self.graph = torch.fx.symbolic_trace(nn.Sequential(module) if self.alone else module)
        except Exception as e:  # noqa: BLE001 - control flow on values, unsupported calls, ...
            raise NotGroupable(f"torch.fx cannot trace its forward ({type(e).__name__}: "
                               f"{str(e).strip().splitlines()[0] if str(e).strip() else ''})") from None
        self.loss_fn = loss_fn
        self._run = _Run(self)
        #: whether the loss of S n rows is the mean of the workers' own (set by ``ModelOracle``'s probe)
        self.mean = True
        self.place = {self.qualified(n): (o, s) for n, s, o in zip(names, shapes, offsets, strict=False)}
        trainable = {self.qualified(n) for n in names}
        for node in self.graph.graph.nodes:
            if node.op == "get_attr" and node.target in trainable:
                raise NotGroupable(f"its forward uses the parameter {node.target} outside a Linear or Conv layer")
            if node.op != "call_module":
                continue
            layer = self.graph.get_submodule(node.target)
            if isinstance(layer, MIXING):
                raise NotGroupable(f"layer {node.target} ({type(layer).__name__}) mixes the samples of a batch")
            own = [f"{node.target}.{n}" for n, _ in layer.named_parameters() if f"{node.target}.{n}" in trainable]
            if not own:
                continue
            if type(layer) not in LINEAR and type(layer) not in CONV:
                raise NotGroupable(f"layer {node.target} ({type(layer).__name__}) has trainable parameters; only "
                                   "Linear and Conv layers are grouped")
            if type(layer) in CONV and layer.padding_mode != "zeros":
                raise NotGroupable(f"layer {node.target} pads with {layer.padding_mode!r}; only zeros are grouped")

    def qualified(self, name: str) -> str:
        """A parameter's name in the traced graph."""
        return f"0.{name}" if self.alone else name

    def _param(self, Y: torch.Tensor, layer: nn.Module, name: str, attr: str) -> torch.Tensor | None:
        """Worker j's ``attr`` of ``layer`` in row j (a view of Y's rows), or the layer's own (frozen) one for all."""
        full = f"{name}.{attr}"
        if full in self.place:
            o, s = self.place[full]
            return Y[:, o:o + math.prod(s)].unflatten(1, s)
        p = getattr(layer, attr)
        return None if p is None else p.detach().expand(Y.shape[0], *p.shape)

    def outputs(self, Y: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
        """The model's output on X (S n rows, worker by worker), worker j's rows with the parameters in Y[j]."""
        self._run.Y = Y
        try:
            return self._run.run(X)
        finally:
            self._run.Y = None

    def gradients(self, Y: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """(S x d): row j the gradient at Y[j] of the loss on worker j's rows of (X, y) (S n rows, worker by
        worker), from one forward and one backward pass."""
        S = Y.shape[0]
        Y = Y.detach().requires_grad_(True)
        with torch.enable_grad():
            out = self.outputs(Y, X)
            (g,) = torch.autograd.grad(self.losses(out, y, S), Y)
        return g

    def losses(self, out: torch.Tensor, y: torch.Tensor, S: int) -> torch.Tensor:
        """The sum over the S workers of the loss on each one's rows: S times the loss of all S n rows when the loss
        is a mean over its rows (``mean``, decided by the probe: one call), else one call per worker (``torch.func
        .vmap`` of the loss would import sympy, 0.2-0.5 s, at its first call)."""
        if self.mean:
            return self.loss_fn(out, y) * S
        n = out.shape[0] // S
        return sum(self.loss_fn(out[j * n:(j + 1) * n], y[j * n:(j + 1) * n]) for j in range(S))
