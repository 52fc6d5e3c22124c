"""Your own PyTorch model in signsim (docs/api.md, "Your own PyTorch model"; docs/theory.md §13).

``signsim run --model FILE.py`` (or ``signsim.run(model="FILE.py", ...)``, a config or sweep key ``model``) trains the
model that FILE.py defines with signsim's compiled worker and server stages: each round the participants' minibatch
gradients come from one batched ``torch.func`` call (``signsim.torch.oracle``), the stages, bits, rounds and budgets
from the engine. The file's contract is ``signsim.torch.model_file``. Needs ``pip install 'signsim[torch]'``; nothing
else in signsim imports torch.
"""
