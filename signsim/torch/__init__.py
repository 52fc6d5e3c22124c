"""Your own PyTorch model in signsim (docs/api.md, "Your own PyTorch model"; docs/theory.md §13).

``signsim run --model FILE.py`` (or ``signsim.run(model="FILE.py", ...)``, a config or sweep key ``model``) trains the
model that FILE.py defines with signsim's compiled worker and server stages: each round the participants' minibatch
gradients come from one batched ``torch.func`` call (``signsim.torch.oracle``), the stages, bits, rounds and budgets
from the engine. The file's contract is ``signsim.torch.model_file``. Needs ``pip install 'signsim[torch]'``; nothing
else in signsim imports torch.

In Python the model can also be objects of this process: ``signsim.run(model=signsim.torch.Model(net, loss, (X, y)),
...)`` (``Model``), with the same contract.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, eq=False)
class Model:
    """Your model as Python objects (docs/api.md, "Your own PyTorch model"): ``model`` a ``torch.nn.Module`` (each
    run starts from a copy of its weights) or a function returning a fresh one (made under signsim's seed, as a
    file's ``model()``); ``loss(output, target)`` the batch's mean loss; ``data`` ``(X, y)`` or ``(X_train,
    y_train, X_test, y_test)`` (arrays or tensors), a ``TensorDataset`` or any ``Dataset`` of (x, y) pairs, or a
    function returning one of these. ``name`` is what the results record (``problem.model_file`` is
    ``python:NAME:N``). It runs in this process only: a sweep's worker processes need a model file."""

    model: Any
    loss: Callable
    data: Any
    name: str = "model"
