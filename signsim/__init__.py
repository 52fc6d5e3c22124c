"""signsim: simulate sign-based, 1-bit distributed optimization and the statistics behind it.

The mathematics is in ``docs/theory.md`` (cited as "§N"). The Python API (docs/api.md):
``signsim.run``, ``signsim.check_spb``, ``signsim.diversity``, ``signsim.bound``, ``signsim.sweep``,
``signsim.spb_from_samples``, ``signsim.diversity_from_samples``; bad input raises ``signsim.InputError``.
They are loaded on first use, so ``import signsim`` stays fast (no NumPy, Numba or matplotlib).
"""

import os

from signsim.errors import InputError

# Numba's parallel loops run on libgomp (the "omp" threading layer). By default a libgomp thread that finishes
# its share spins for ~300,000 iterations before sleeping; on a machine whose cores are busy with other work
# that spinning takes the CPU from the sibling thread the barrier waits for, and the engine's parallel loop
# over workers (two barriers per iteration) ran 4-10x slower than one thread (issue #17, 2 shared cores).
# Passive waiting sleeps at once. Must be set before libgomp loads (at the first parallel kernel); a value
# the user set wins.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

__version__ = "0.1.0"

_API = ("run", "check_spb", "diversity", "bound", "spb_from_samples", "diversity_from_samples", "Result")
__all__ = ["InputError", "__version__", *_API, "sweep"]


def __getattr__(name: str):
    if name in _API:
        from signsim import api

        return getattr(api, name)
    if name == "sweep":  # the subpackage signsim.sweep, callable as signsim.api.sweep
        import importlib

        return importlib.import_module("signsim.sweep")
    raise AttributeError(f"module 'signsim' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
