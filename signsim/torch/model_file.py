"""A model file (``signsim run --model FILE.py``): the contract and its checks (docs/api.md, "Your own PyTorch model").

The file defines three functions::

    def model():            # -> a torch.nn.Module with floating-point parameters (a fresh one per call)
    def loss(output, target):   # -> a scalar tensor: the MEAN loss over the batch (torch.nn.functional style)
    def data():             # -> (X, y) or (X_train, y_train, X_test, y_test): NumPy arrays or tensors, one sample
                            #    per row of X (any trailing shape), one target per row of y

Every way the file can break the contract is one ``InputError`` naming the file and what is wrong (exit 2).
Pure Python until a model is made: loading a file imports torch only because the file does.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from signsim.errors import InputError

#: the functions a model file defines, with the number of arguments each takes
CONTRACT = {"model": 0, "loss": 2, "data": 0}


@dataclass
class ModelFile:
    path: str
    sha256: str
    module: ModuleType

    def fail(self, what: str) -> InputError:
        return InputError(f"--model {self.path}: {what}")


def _fail(path: str, what: str) -> InputError:
    return InputError(f"--model {path}: {what}")


#: a message's first line longer than this is cut to its first sentence
LONG = 160


def culprit(e: BaseException, path: str) -> str:
    """``e`` in one line (its first, or that line's first sentence when it is long), with the line of the model
    file where it arose when there is one."""
    import traceback

    where = ""
    for frame in traceback.extract_tb(e.__traceback__):
        if Path(frame.filename).resolve() == Path(path).resolve():
            where = f" (line {frame.lineno}: {(frame.line or '').strip()})"
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    if len(text) > LONG and ". " in text:  # a long first line (torch's): its first sentence
        text = text[: text.index(". ") + 1]
    return f"{type(e).__name__}{': ' + text if text else ''}{where}"


def load(path: str | Path) -> ModelFile:
    """The model file at ``path``, executed once per content (an edited file loads afresh), its contract checked."""
    shown = str(path)
    if shown.startswith(PREFIX):
        if shown not in IN_MEMORY:
            raise _fail(shown, "no model of that name was given in this Python process (signsim.torch.Model); a "
                        "sweep's worker processes need a model file")
        return _checked(IN_MEMORY[shown])
    p = Path(path).expanduser()
    if not p.is_file():
        raise _fail(shown, "no such file" if not p.exists() else "not a regular file")
    if p.suffix != ".py":
        raise _fail(shown, "must be a Python file (.py) defining model(), loss(output, target) and data()")
    from signsim.paths import input_file

    input_file(p, f"--model {shown}")  # (a source the memory cannot hold: one line, before reading it)
    try:
        source = p.read_bytes()
    except OSError as e:
        raise _fail(shown, f"cannot be read ({e.strerror or e})") from None
    sha = hashlib.sha256(source).hexdigest()
    name = f"signsim_model_{sha[:16]}"
    mod = sys.modules.get(name)
    if mod is None:
        spec = importlib.util.spec_from_file_location(name, p)
        mod = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(mod)
        except BaseException as e:  # noqa: BLE001 - the user's code failed (SystemExit too): one line naming it
            if isinstance(e, KeyboardInterrupt):
                raise
            raise _fail(shown, f"failed to load: {culprit(e, str(p))}") from None
        sys.modules[name] = mod
    return _checked(ModelFile(str(p.resolve()), sha, mod), shown)


def _checked(mf: ModelFile, shown: str | None = None) -> ModelFile:
    """``mf`` once its functions are checked against the contract (one error line naming it otherwise)."""
    shown = shown or mf.path
    mod = mf.module
    for fn, arity in CONTRACT.items():
        f = getattr(mod, fn, None)
        if f is None:
            raise _fail(shown, f"defines no {fn}(); a model file defines model(), loss(output, target) and data()")
        if not callable(f):
            raise _fail(shown, f"{fn} must be a function")
        try:
            sig = inspect.signature(f)
            sig.bind(*range(arity))
        except TypeError:
            want = "(output, target)" if arity == 2 else "()"
            raise _fail(shown, f"{fn}{sig} must take {arity} argument{'s' if arity != 1 else ''}: {fn}{want}") \
                from None
        except ValueError:
            pass  # a builtin without a signature: called as it is
    return mf


#: a ``--model`` value that names a model given as Python objects in this process (``signsim.torch.Model``)
PREFIX = "python:"
#: those models, by that value
IN_MEMORY: dict[str, ModelFile] = {}


def register(model) -> str:
    """The ``model`` option's value for a ``signsim.torch.Model``: ``python:NAME:N``, N counting the models
    registered in this process (a sweep's worker processes cannot load it: give them a file)."""
    from types import SimpleNamespace

    for key, (given, _) in _GIVEN.items():  # the same object: the same name (its runs record the same config)
        if given is model:
            return key
    key = f"{PREFIX}{model.name}:{len(IN_MEMORY) + 1}"
    module = SimpleNamespace(model=_maker(model.model), loss=model.loss, data=_data(model.data))
    IN_MEMORY[key] = ModelFile(key, "", module)  # no file, so no hash: the results record the name only
    _GIVEN[key] = (model, IN_MEMORY[key])
    return key


#: the Model objects registered, by their name
_GIVEN: dict[str, tuple] = {}


def _maker(model):
    """model(): a fresh module per call; a module given itself is copied (the runs start from its weights)."""
    if callable(model) and not hasattr(model, "parameters"):
        return model
    import copy

    return lambda: copy.deepcopy(model)


def _data(data):
    """data(): arrays as given, a function's result, or a torch Dataset's samples stacked (a TensorDataset's
    tensors as they are)."""
    def get():
        value = data() if callable(data) and not hasattr(data, "__getitem__") else data
        tensors = getattr(value, "tensors", None)
        if isinstance(tensors, tuple) and len(tensors) == 2:
            return tensors
        if hasattr(value, "__getitem__") and hasattr(value, "__len__") and not isinstance(value, (tuple, list)):
            import torch

            items = [value[i] for i in range(len(value))]
            return (torch.stack([torch.as_tensor(x) for x, _ in items]),
                    torch.stack([torch.as_tensor(y) for _, y in items]))
        return value

    return get


def call(mf: ModelFile, fn: str, *args) -> Any:
    """``fn(*args)`` of the model file, any exception one line naming the file, the function and its line."""
    try:
        return getattr(mf.module, fn)(*args)
    except BaseException as e:  # noqa: BLE001 - SystemExit from the user's code too
        if isinstance(e, KeyboardInterrupt):
            raise
        raise mf.fail(f"{fn}() raised {culprit(e, mf.path)}") from None
