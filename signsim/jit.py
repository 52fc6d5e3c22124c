"""signsim's one way to compile a kernel: ``numba.njit`` without the C-callable (cfunc) wrapper.

Numba builds two wrappers around every function it compiles: one to call it from Python and one to call it
through a C function pointer, which only first-class function values (a dispatcher passed as an argument to a
jitted function) use. signsim never passes kernels as values, so the second is dropped. That shortened the
first ``signsim run --method ssdm --workers 32`` from an empty cache from 22.7 and 22.9 s to 18.4 and 18.8 s
(compiled in one process; back to back, alternating; 2-core VM, 2 December 05:05): a run compiles about 70
functions, problem kernels, noise models and stages included. Options pass through (``cache``, ``parallel``,
``inline``, ...), with or without arguments (``@njit`` and ``@njit(...)``).
"""

from numba import njit as _njit


def njit(*args, **options):
    options.setdefault("no_cfunc_wrapper", True)
    return _njit(*args, **options)
