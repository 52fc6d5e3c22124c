"""Sweeps: grids of runs, executed locally or on a Dask cluster, into tidy, resumable results (issue #7).

The package is also the API function: ``signsim.sweep(path, out=..., jobs=...)`` calls
``signsim.api.sweep`` (the name ``signsim.sweep`` is both, whichever Python's import system left there)."""

import sys
import types


class _CallableModule(types.ModuleType):
    def __call__(self, path, **options):
        from signsim.api import sweep

        return sweep(path, **options)


sys.modules[__name__].__class__ = _CallableModule
