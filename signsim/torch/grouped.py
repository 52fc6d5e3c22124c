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

Which models: the forward is traced with ``torch.fx``, in training and in evaluation mode; every layer holding
trainable parameters must be a ``Linear`` or a zero-padded ``Conv`` (no parameter used outside them), no batch-norm
layer, and the traced model must keep each sample's computation to itself: ``ModelOracle``'s probe checks three
workers' grouped gradients against each one's own ``torch.autograd`` gradient, once, and decides whether the loss
may be called once for all rows (``Grouped.mean``). Anything else is ``NotGroupable``, with the reason.
"""

from __future__ import annotations

import math
import operator

import torch
import torch.fx
from torch import nn
from torch.nn import functional as F

#: the layers whose parameters are taken per worker
LINEAR = (nn.Linear,)
#: the convolutions grouped, by their number of spatial dimensions
CONV = {nn.Conv1d: 1, nn.Conv2d: 2, nn.Conv3d: 3}
CONV_DIMS = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
#: layers that mix the samples of a batch (their statistics over S tau samples are not each worker's own)
MIXING = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.SyncBatchNorm)


class NotGroupable(Exception):
    """The model cannot be run grouped (the message says why)."""


def linear(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
    """``Linear`` with worker j's weight W[j] (S x out x in) and bias b[j] on its rows of x (S n rows in all, worker
    by worker; any shape (..., in))."""
    xs = x.reshape(W.shape[0], -1, x.shape[-1])
    y = torch.bmm(xs, W.transpose(1, 2)) if b is None else torch.baddbmm(b.unsqueeze(1), xs, W.transpose(1, 2))
    return y.reshape(*x.shape[:-1], W.shape[1])


def conv(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor | None, dims: int, stride, padding, dilation,
         groups: int) -> torch.Tensor:
    """A zero-padded ``Conv{dims}d`` layer (its stride, padding, dilation and groups) with worker j's weight W[j] and
    bias b[j] on its rows of x: the S workers' channels side by side, one convolution of S (times the layer's own)
    groups."""
    S = W.shape[0]
    n, C, space = x.shape[0] // S, x.shape[1], x.shape[2:]
    xs = x.reshape(S, n, C, *space).transpose(0, 1).reshape(n, S * C, *space)
    y = CONV_DIMS[dims](xs, W.reshape(-1, *W.shape[2:]), None if b is None else b.reshape(-1), stride, padding,
                        dilation, groups * S)
    return y.reshape(n, S, W.shape[1], *y.shape[2:]).transpose(0, 1).reshape(S * n, W.shape[1], *y.shape[2:])


def everyone(p: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """A frozen parameter of a grouped layer, the same for each of the S workers of ``like`` (S x ...)."""
    return p.detach().expand(like.shape[0], *p.shape)


def _grouped_module(traced: torch.fx.GraphModule, place, trained: set[str]) -> torch.fx.GraphModule:
    """``traced`` rewritten so that it takes the workers' parameters first (a dict by qualified name, S x shape
    each) and computes each ``trained`` layer with each worker's own (``linear``, ``conv``; a frozen weight or bias
    of such a layer the same for all, ``everyone``); the other layers are called as they are. torch.fx writes it out
    as Python code: no interpreter between the layers."""
    graph = traced.graph
    with graph.inserting_before(next(iter(graph.nodes))):
        params = graph.placeholder("_worker_params")
    for node in list(graph.nodes):
        if node.op != "call_module" or node.target not in trained:
            continue
        layer = traced.get_submodule(node.target)
        with graph.inserting_before(node):
            own = {a: graph.call_function(operator.getitem, (params, f"{node.target}.{a}"))
                   for a in ("weight", "bias") if f"{node.target}.{a}" in place}
            mine = next(iter(own.values()))
            W, b = (own.get(a) if a in own else None if getattr(layer, a) is None else
                    graph.call_function(everyone, (graph.get_attr(f"{node.target}.{a}"), mine))
                    for a in ("weight", "bias"))
            x = node.args[0] if node.args else next(iter(node.kwargs.values()))
            if isinstance(layer, LINEAR):
                out = graph.call_function(linear, (x, W, b))
            else:
                out = graph.call_function(conv, (x, W, b, CONV[type(layer)], tuple(layer.stride), layer.padding
                                                 if isinstance(layer.padding, str) else tuple(layer.padding),
                                                 tuple(layer.dilation), layer.groups))
        node.replace_all_uses_with(out)
        graph.erase_node(node)
    graph.lint()
    return torch.fx.GraphModule(traced, graph)


class Grouped:
    """The traced ``module`` run grouped. ``names``, ``shapes`` and ``offsets`` place each trainable parameter in the
    flat vector (``ModelOracle``'s order); frozen parameters and buffers are used as they are.

    The forward is traced twice, in training and in evaluation mode (a forward that reads ``self.training`` is
    frozen at trace time), and run in the module's mode of the call."""

    def __init__(self, module: nn.Module, loss_fn, names, shapes, offsets):
        #: a model that is one layer is traced as the layer "0" of a Sequential (its parameters' names lack "0.")
        self.alone = torch.fx.Tracer().is_leaf_module(module, "")
        self.module = module
        root = nn.Sequential(module) if self.alone else module
        was = module.training
        graphs = {}
        try:
            for mode in (True, False):
                root.train(mode)
                graphs[mode] = torch.fx.symbolic_trace(root)
        except Exception as e:  # noqa: BLE001 - control flow on values, unsupported calls, ...
            raise NotGroupable(f"torch.fx cannot trace its forward ({type(e).__name__}: "
                               f"{str(e).strip().splitlines()[0] if str(e).strip() else ''})") from None
        finally:
            module.train(was)
        self.loss_fn = loss_fn
        #: whether the loss of S n rows is the mean of the workers' own (set by ``ModelOracle``'s probe)
        self.mean = True
        self.place = {self.qualified(n): (o, tuple(s)) for n, s, o in zip(names, shapes, offsets, strict=False)}
        #: the layers that hold trainable parameters (the others run as they are)
        self.trained: set[str] = set()
        for graph in graphs.values():
            self._check(graph)
        self._modules = {mode: _grouped_module(graph, self.place, self.trained) for mode, graph in graphs.items()}

    def _check(self, graph: torch.fx.GraphModule) -> None:
        """Every trainable parameter in a Linear or zero-padded Conv layer, no batch norm (else NotGroupable)."""
        for node in graph.graph.nodes:
            if node.op == "get_attr" and node.target in self.place:
                raise NotGroupable(f"its forward uses the parameter {node.target} outside a Linear or Conv layer")
            if node.op != "call_module":
                continue
            layer = graph.get_submodule(node.target)
            if isinstance(layer, MIXING):
                raise NotGroupable(f"layer {node.target} ({type(layer).__name__}) mixes the samples of a batch")
            if not any(f"{node.target}.{n}" in self.place for n, _ in layer.named_parameters()):
                continue
            if type(layer) not in LINEAR and type(layer) not in CONV:
                raise NotGroupable(f"layer {node.target} ({type(layer).__name__}) has trainable parameters; only "
                                   "Linear and Conv layers are grouped")
            if type(layer) in CONV and layer.padding_mode != "zeros":
                raise NotGroupable(f"layer {node.target} pads with {layer.padding_mode!r}; only zeros are grouped")
            self.trained.add(node.target)

    def qualified(self, name: str) -> str:
        """A parameter's name in the traced graph."""
        return f"0.{name}" if self.alone else name

    def outputs(self, params: dict[str, torch.Tensor], X: torch.Tensor) -> torch.Tensor:
        """The model's output on X (S n rows, worker by worker), worker j's rows with its parameters (row j of each
        of ``params``, by qualified name), in the module's current mode."""
        return self._modules[self.module.training](params, X)

    def gradients(self, Y: torch.Tensor, X: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """(S x d): row j the gradient at Y[j] of the loss on worker j's rows of (X, y) (S n rows, worker by
        worker), from one forward and one backward pass. Each parameter tensor is a leaf of its own (slices of one
        leaf would each back-propagate an S x d tensor of zeros)."""
        S = Y.shape[0]
        Y = Y.detach()
        names = list(self.place)
        leaves = [Y[:, o:o + math.prod(s)].unflatten(1, s).requires_grad_(True) for o, s in self.place.values()]
        with torch.enable_grad():
            out = self.outputs(dict(zip(names, leaves, strict=True)), X)
            grads = torch.autograd.grad(self.losses(out, y, S), leaves, allow_unused=True)
        G = torch.empty(Y.shape, dtype=Y.dtype)
        for (o, s), g in zip(self.place.values(), grads, strict=True):
            n = math.prod(s)
            if g is None:  # a parameter the forward does not use
                G[:, o:o + n] = 0
            else:
                G[:, o:o + n] = g.reshape(S, n)
        return G

    def losses(self, out: torch.Tensor, y: torch.Tensor, S: int) -> torch.Tensor:
        """The sum over the S workers of the loss on each one's rows: S times the loss of all S n rows when the loss
        is a mean over its rows (``mean``, decided by the probe: one call), else one call per worker (``torch.func
        .vmap`` of the loss would import sympy, 0.2-0.5 s, at its first call)."""
        if self.mean:
            return self.loss_fn(out, y) * S
        n = out.shape[0] // S
        return sum(self.loss_fn(out[j * n:(j + 1) * n], y[j * n:(j + 1) * n]) for j in range(S))
