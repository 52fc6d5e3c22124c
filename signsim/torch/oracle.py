"""A PyTorch model as signsim's gradient oracle (docs/theory.md §13).

The model's trainable parameters are one flat vector x of d numbers (the order of ``named_parameters()``, each
tensor row-major: ``torch.nn.utils.parameters_to_vector``'s order; frozen ones are held fixed, like buffers). One
round's S participants get their minibatch gradients in one batched call: ``torch.func.vmap`` over the workers of
``torch.func.grad`` of the loss of ``torch.func.functional_call(model, params, X_batch)``, with the parameters
shared (H = 1) or one copy per worker (H local steps, each worker from its own iterate). The gradients go straight
into rows of the engine's (S x d) gradient buffer, which the compiled worker and server stages then consume:
momentum, compression, error feedback, attacks, aggregation, the server's optimizer, bits.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
import torch
from torch.func import functional_call, grad, vmap

from signsim.errors import InputError

#: rows per forward/backward pass when the model is evaluated on a whole data set (history rows)
EVAL_CHUNK = 4096


def guarded(what: str):
    """A method of ``ModelOracle`` that runs the user's model or loss: any exception from it becomes one error line
    naming the model file, what signsim was doing, and the line of the file where it arose."""

    def wrap(method):
        @functools.wraps(method)
        def call(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except InputError:
                raise
            except (Exception, SystemExit) as e:  # the user's code (KeyboardInterrupt passes: Ctrl-C)
                from signsim.torch.model_file import culprit

                raise InputError(f"{self.where}: {what} failed: {culprit(e, self.path)}") from None

        return call

    return wrap


def as_tensor(a, name: str, where: str) -> torch.Tensor:
    """``a`` (a NumPy array, a tensor, or a nested list) as a CPU tensor, or one error line."""
    try:
        t = a.detach().cpu() if isinstance(a, torch.Tensor) else torch.as_tensor(np.asarray(a))
    except (TypeError, ValueError, RuntimeError) as e:
        raise InputError(f"{where}: {name} is not an array ({str(e).splitlines()[0] if str(e) else e})") from None
    if t.ndim == 0:
        raise InputError(f"{where}: {name} must have one row per sample, got a scalar")
    if t.is_complex() or t.dtype == torch.bool and name.startswith("X"):
        raise InputError(f"{where}: {name} has dtype {t.dtype}; give real numbers")
    if t.is_floating_point() and not _all_finite(t):
        raise InputError(f"{where}: {name} holds NaN or infinite values")
    return t


def _all_finite(t: torch.Tensor) -> bool:
    """Whether every entry of the CPU tensor ``t`` is finite: by NumPy (11 ms for FLUTE's 60,000 x 784 float32
    pixels, against 140 ms for ``torch.isfinite``; 6 December 2026), by torch for a dtype NumPy lacks."""
    try:
        a = t.numpy()
    except (TypeError, RuntimeError):  # (bfloat16)
        return bool(torch.isfinite(t).all())
    return bool(np.isfinite(a).all())


def in_place_statistics(module: torch.nn.Module) -> str:
    """The first layer of ``module`` that updates running statistics in place when the model trains (batch or
    instance norm with ``track_running_stats``, in training mode once ``module.train()`` has run: a model that keeps
    its batch norm in evaluation mode updates nothing), named with its type, or "". torch.func's transforms refuse a
    captured buffer's in-place update. (Leaves ``module`` in training mode, as the rounds use it.)"""
    module.train()
    for name, layer in module.named_modules():
        if (layer.training and getattr(layer, "track_running_stats", False)
                and getattr(layer, "running_mean", None) is not None):
            return f"{name} ({type(layer).__name__})" if name else f"of the model itself ({type(layer).__name__})"
    return ""


class ModelOracle:
    """Gradients, loss and accuracy of ``module`` under ``loss_fn`` on the given data, at a flat parameter vector.

    ``loss_fn(output, target)`` returns the mean loss over the batch; targets of an integer type with a 2-D output
    make the model a classifier (accuracy = argmax of the output equals the target)."""

    def __init__(self, module: torch.nn.Module, loss_fn, X_train: torch.Tensor, y_train: torch.Tensor,
                 X_test: torch.Tensor, y_test: torch.Tensor, where: str = "--model", path: str = "",
                 gradients: str = "vmap"):
        self.module, self.loss_fn, self.where, self.path = module, loss_fn, where, path
        # x holds the trainable parameters; frozen ones (requires_grad False) stay as they are, like buffers
        params = {n: p for n, p in module.named_parameters() if p.requires_grad}
        if not params:
            raise InputError(f"{where}: model() has no parameters to train")
        dtypes = {p.dtype for p in params.values()}
        if len(dtypes) != 1 or not next(iter(dtypes)).is_floating_point:
            shown = ", ".join(sorted(str(t) for t in dtypes))
            raise InputError(f"{where}: model()'s parameters must share one floating-point dtype (got {shown})")
        self.dtype = next(iter(dtypes))
        self.names = list(params)
        self.shapes = [tuple(p.shape) for p in params.values()]
        self.sizes = [p.numel() for p in params.values()]
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)]).astype(int).tolist()
        self.dim = int(self.offsets[-1])
        running = in_place_statistics(module)
        if running:
            raise InputError(f"{where}: layer {running} keeps running statistics that every training step updates in "
                             "place, which per-worker gradients cannot do: give it track_running_stats=False (each "
                             "worker normalizes by its own minibatch) or use a GroupNorm or LayerNorm")
        self.buffers = {**dict(module.named_buffers()),
                        **{n: p.detach() for n, p in module.named_parameters() if not p.requires_grad}}
        self.X_train, self.y_train = self._features(X_train), self._targets(y_train)
        self.X_test, self.y_test = self._features(X_test), self._targets(y_test)
        self.n = int(self.X_train.shape[0])

        def f(p, xb, yb):
            return loss_fn(functional_call(module, (p, self.buffers), (xb,)), yb)

        self._loss = f
        g = grad(f)
        self._shared = vmap(g, in_dims=(None, 0, 0), randomness="different")
        self._own = vmap(g, in_dims=(0, 0, 0), randomness="different")
        self.classifier = False
        try:
            with torch.no_grad():
                out = self._output(self.flat(), self.X_train[:2])
        except (Exception, SystemExit) as e:  # the user's model does not take the data's rows (or ends Python)
            from signsim.torch.model_file import culprit

            raise InputError(f"{where}: model and loss fail on a minibatch of data(): {culprit(e, path)}") from None
        if not isinstance(out, torch.Tensor):
            raise InputError(f"{where}: the model's forward must return one tensor (the loss's output), got "
                             f"{type(out).__name__}")
        # a classifier: one integer class per sample (a 1-D target) and a score per class (integer targets with
        # columns are multi-label: no accuracy)
        self.classifier = (out.ndim == 2 and out.shape[1] > 1 and self.y_train.ndim == 1
                           and not self.y_train.is_floating_point())
        #: the per-worker gradients from one forward and backward pass (``--model-gradients``), or None: vmap
        self.grouped = None
        self.choose_gradients(gradients)

    def choose_gradients(self, how: str) -> None:
        """``--model-gradients``: vmap; grouped (``signsim.torch.grouped``) once a probe agrees with each worker's
        own gradient, else one error line; auto: grouped where the probe agrees, else vmap. (``build`` calls it once
        the loss is checked, so that a broken loss is reported as such.)"""
        if how == "vmap":
            self.grouped = None
            return
        from signsim.torch.grouped import Grouped, NotGroupable

        try:
            if torch.finfo(self.dtype).eps > 1e-4:
                raise NotGroupable(f"its parameters are {str(self.dtype).replace('torch.', '')}, too coarse for the "
                                   "probe to tell rounding from a wrong gradient")
            g = Grouped(self.module, self.loss_fn, self.names, self.shapes, self.offsets)
            self._probe(g)
            self.grouped = g
        except NotGroupable as e:
            if how == "grouped":
                raise InputError(f"{self.where}: --model-gradients grouped: {e}; use vmap or auto") from None
            self.grouped = None

    def _user(self, what: str, call):
        """``call()`` of the user's model or loss: its failure is one error line naming the file."""
        try:
            return call()
        except (Exception, SystemExit) as e:
            from signsim.torch.model_file import culprit

            raise InputError(f"{self.where}: {what}: {culprit(e, self.path)}") from None

    def _probe(self, g) -> None:
        """Three workers at three parameter vectors (x0 and two moves of it by a fixed draw), three rows each drawn
        from the whole training set, the model in evaluation mode: the grouped gradients equal each worker's own
        (``torch.autograd`` through the model itself) to 10^3 machine epsilons of the largest entry, or
        ``NotGroupable``. The loss is called once for all rows (``g.mean``) only if its value on 16 rows drawn at
        random equals the mean of its values on each row alone (a weighted mean, a sum, an ignored target: not)."""
        from signsim.torch.grouped import NotGroupable

        gen = torch.Generator().manual_seed(0)
        workers, tau = 3, 3
        x0 = self.flat()
        shift = torch.randn((workers, self.dim), generator=gen, dtype=x0.dtype) * (0.1 * (x0.abs().mean() + 1))
        shift[0] = 0
        Y = x0 + shift
        rows = torch.randint(0, self.n, (workers * tau,), generator=gen)
        some = torch.randint(0, self.n, (16,), generator=gen)
        X, y = self.X_train[rows], self.y_train[rows]
        eps = torch.finfo(self.dtype).eps
        self.module.eval()
        try:
            want = []
            for j in range(workers):
                p = Y[j].clone().requires_grad_(True)
                r = slice(j * tau, (j + 1) * tau)
                with torch.enable_grad():
                    part = self._user("the loss of a minibatch", lambda p=p, r=r: self.loss_fn(
                        self._output(p, X[r]), y[r]))
                    want.append(self._user("the gradient of the loss", lambda p=p, part=part: torch.autograd.grad(
                        part, p)[0]))
            want = torch.stack(want)
            g.mean = self._is_mean(x0, some, eps)
            tol = 1e3 * eps * max(float(want.abs().max()), torch.finfo(self.dtype).tiny)
            for mean in (True, False) if g.mean else (False,):
                g.mean = mean
                try:
                    G = g.gradients(Y, X, y)
                except (Exception, SystemExit) as e:  # the traced forward fails where the model's own does not
                    from signsim.torch.model_file import culprit

                    raise NotGroupable(f"its traced forward fails ({culprit(e, self.path)})") from None
                if float((G - want).abs().max()) <= tol:
                    return
        finally:
            self.module.train()
        raise NotGroupable("its gradients grouped differ from each worker's own (its forward mixes the samples of a "
                           "batch, or the parameters are tied?)")

    def _is_mean(self, x0: torch.Tensor, some: torch.Tensor, eps: float) -> bool:
        """Whether the loss of the rows ``some`` at x0 equals the mean of its values on each row alone (10^3
        machine epsilons): a loss that is the unweighted mean of its rows' terms."""
        try:
            with torch.no_grad():
                whole = self.loss_fn(self._output(x0, self.X_train[some]), self.y_train[some])
                each = torch.stack([self.loss_fn(self._output(x0, self.X_train[i:i + 1]),
                                                 self.y_train[i:i + 1]).reshape(()) for i in some])
        except Exception:  # noqa: BLE001 - a loss that needs more than one row: one call per worker
            return False
        if whole.numel() != 1 or not bool(torch.isfinite(each).all()):
            return False
        scale = max(float(whole.abs()), float(each.abs().max()), torch.finfo(self.dtype).tiny)
        return abs(float(whole) - float(each.mean())) <= 1e3 * eps * scale

    # -- data ---------------------------------------------------------------------------------------------------
    def _features(self, X: torch.Tensor) -> torch.Tensor:
        return X.to(self.dtype) if X.is_floating_point() else X

    def _targets(self, y: torch.Tensor) -> torch.Tensor:
        if y.is_floating_point():
            return y.to(self.dtype)
        return y.long()

    # -- parameters ---------------------------------------------------------------------------------------------
    def flat(self) -> torch.Tensor:
        """The module's parameters as one vector (a copy)."""
        return torch.cat([p.detach().reshape(-1) for p in self.module.parameters() if p.requires_grad])

    def unflatten(self, v: torch.Tensor) -> dict[str, torch.Tensor]:
        """Views of the flat vector ``v`` (d,) or of each row of ``v`` (S, d), by parameter name."""
        o = self.offsets
        if v.ndim == 1:
            return {n: v[o[i]:o[i + 1]].view(s) for i, (n, s) in enumerate(zip(self.names, self.shapes, strict=True))}
        return {n: v[:, o[i]:o[i + 1]].unflatten(1, s) if s else v[:, o[i]]
                for i, (n, s) in enumerate(zip(self.names, self.shapes, strict=True))}

    def _x(self, x: np.ndarray) -> torch.Tensor:
        t = torch.from_numpy(np.ascontiguousarray(x))
        return t if t.dtype == self.dtype else t.to(self.dtype)

    def _write(self, g: dict[str, torch.Tensor], out: torch.Tensor) -> None:
        S = out.shape[0]
        o = self.offsets
        for i, n in enumerate(self.names):
            out[:, o[i]:o[i + 1]].copy_(g[n].reshape(S, -1))

    # -- gradients ----------------------------------------------------------------------------------------------
    @guarded("the workers' gradients")
    def worker_gradients(self, x: np.ndarray, rows: np.ndarray, lr: float, out: np.ndarray,
                         checkpoint: Callable[[], None] | None = None) -> None:
        """``out[j]`` <- worker j's pseudo-gradient of the round (docs/theory.md §12): with H = 1 (``rows`` of shape
        (1, S, tau)) its minibatch gradient at x; with H > 1 the sum of the gradients of its H local SGD steps
        y <- y - lr g(y) from x, step h on the minibatch ``rows[h, j]``. ``checkpoint()``, if given, is called
        between two steps' gradient passes (the engine's signal check: it may raise)."""
        H, S = rows.shape[0], rows.shape[1]
        dest = torch.from_numpy(out[:S])
        xt = self._x(x)
        self.module.train()
        between = checkpoint or (lambda: None)
        if self.grouped is not None:
            self._grouped_steps(xt, rows, lr, dest, between)
            return
        if H == 1:
            r = torch.from_numpy(rows[0])
            g = self._shared(self.unflatten(xt), self.X_train[r], self.y_train[r])
            self._write(g, dest)
            return
        Y = xt.unsqueeze(0).repeat(S, 1)
        U = torch.zeros_like(Y)
        G = torch.empty_like(Y)
        for h in range(H):
            r = torch.from_numpy(rows[h])
            self._write(self._own(self.unflatten(Y), self.X_train[r], self.y_train[r]), G)
            U += G
            if h < H - 1:
                Y -= lr * G
                between()
        dest.copy_(U)

    def _grouped_steps(self, xt: torch.Tensor, rows: np.ndarray, lr: float, dest: torch.Tensor,
                       between: Callable[[], None]) -> None:
        """``worker_gradients`` with each step's S minibatch gradients from one forward and backward pass."""
        H, S = rows.shape[0], rows.shape[1]
        Y = xt.unsqueeze(0).expand(S, -1)
        U = None
        for h in range(H):
            r = torch.from_numpy(rows[h].reshape(-1))
            G = self.grouped.gradients(Y, self.X_train[r], self.y_train[r])
            U = G if U is None else U.add_(G)
            if h < H - 1:
                Y = Y - lr * G
                between()
        dest.copy_(U)

    def _groups(self, xt: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        """The gradient of the mean loss over each row of ``r`` (G x s rows) at x: vmap over the groups, or grouped."""
        if self.grouped is not None:
            return self.grouped.gradients(xt.unsqueeze(0).expand(r.shape[0], -1), self.X_train[r.reshape(-1)],
                                          self.y_train[r.reshape(-1)])
        out = torch.empty((r.shape[0], self.dim), dtype=self.dtype)
        self._write(self._shared(self.unflatten(xt), self.X_train[r], self.y_train[r]), out)
        return out

    @guarded("the per-sample gradients")
    def sample_gradients(self, x: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Per-sample gradients of the training rows ``rows`` at x, one row each (float64)."""
        r = torch.as_tensor(np.asarray(rows, dtype=np.int64))
        self.module.eval()
        try:
            return self._groups(self._x(x), r.unsqueeze(1)).to(torch.float64).numpy()
        finally:
            self.module.train()

    @guarded("the gradients of the workers' shards")
    def group_gradients(self, x: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The gradient of the mean loss over each row of ``rows`` (G groups of s training rows each) at x, one row
        each (float64): ``torch.func.vmap`` over the groups, the model in evaluation mode (as ``sample_gradients``)."""
        r = torch.as_tensor(np.asarray(rows, dtype=np.int64))
        self.module.eval()
        try:
            return self._groups(self._x(x), r).to(torch.float64).numpy()
        finally:
            self.module.train()

    # -- evaluation ---------------------------------------------------------------------------------------------
    def _output(self, xt: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
        return functional_call(self.module, (self.unflatten(xt), self.buffers), (X,))

    def _pass(self, xt: torch.Tensor, X: torch.Tensor, y: torch.Tensor, want_grad: bool):
        """(mean loss, number of correct predictions, gradient of the mean loss or None) over (X, y), in chunks."""
        n = X.shape[0]
        p = xt.clone().requires_grad_(want_grad)
        total = 0.0
        hits = 0
        g = torch.zeros_like(xt) if want_grad else None
        for lo in range(0, n, EVAL_CHUNK):
            Xc, yc = X[lo:lo + EVAL_CHUNK], y[lo:lo + EVAL_CHUNK]
            with torch.set_grad_enabled(want_grad):
                out = self._output(p, Xc)
                part = self.loss_fn(out, yc) * (Xc.shape[0] / n)
            if want_grad:
                (gc,) = torch.autograd.grad(part, p)
                g += gc
            total += float(part.detach())
            if self.classifier:
                hits += int((out.detach().argmax(dim=1) == yc).sum())
        return total, hits, g

    @guarded("the evaluation on the whole data set (loss, gradient, accuracy)")
    def evaluate(self, x: np.ndarray) -> tuple[float, float, float, float, np.ndarray]:
        """(f(x), training accuracy, test accuracy, test loss, grad f(x)) on the whole training and test sets, the
        model in evaluation mode (dropout off); accuracies NaN for a model that is not a classifier, the test
        values NaN without a test set."""
        xt = self._x(x)
        self.module.eval()
        try:
            loss, hits, g = self._pass(xt, self.X_train, self.y_train, True)
            train_acc = hits / self.n if self.classifier else math.nan
            test_loss = test_acc = math.nan
            m = self.X_test.shape[0]
            if m:
                test_loss, test_hits, _ = self._pass(xt, self.X_test, self.y_test, False)
                test_acc = test_hits / m if self.classifier else math.nan
        finally:
            self.module.train()
        return loss, train_acc, test_acc, test_loss, g.to(torch.float64).numpy()

    @guarded("the loss on the whole training set")
    def loss(self, x: np.ndarray) -> float:
        self.module.eval()
        try:
            with torch.no_grad():
                return self._pass(self._x(x), self.X_train, self.y_train, False)[0]
        finally:
            self.module.train()
