"""The problem dispatchers specialized to one family of problems, from one source.

Numba compiles every branch of a dispatch on integer codes, so a loop able to run every problem compiles every
problem's kernels: on the first run of the default Rosenbrock problem, more than half of the compile time went to
the kernels of the MLP and the GLMs. Each family of problem kernel modules (``FAMILIES``) therefore gets its own
copy of ``dispatch``'s problem dispatchers, which the loop reaches through its plan's problems
(``signsim.engine.plan``: the loop itself is compiled once per plan, not copied). A composition's own plan narrows
them further to the run's noise model (``dispatchers(family, noise)``): the other models' draws are stand-ins there
(about 2 of a first run's 17 CPU-s; the family's one loop keeps every model, so that it runs every run of the
family).
In a family's copy, the names of the kernel modules of the other families point to a stand-in without code: its
kernels write NaN and its CODE matches no problem, so a problem of another family is an unknown code there, which
the checks before the loop reject. The copies carry their own names (``problem_oracle__analytic``, ...), so Numba
caches each family's in its own files, and a run compiles or loads only its family's. The diagnostics' kernels are
copied the same way (``kernel``), and Python callers take the family's dispatchers from ``dispatchers``. A new problem
module joins one family here (a test checks that every problem code belongs to exactly one, and that a run of one
family compiles none of another's kernels); a new dispatcher the loop calls joins ``DISPATCHERS``, and a new kind of
kernel on the problem modules gets its ``_absent_*`` stand-in.
"""

from __future__ import annotations

import functools
import types

import numpy as np
from numba import njit

from signsim import noise as noise_models
from signsim.engine import dispatch

#: the problem kernel modules, by the names ``engine/dispatch.py`` gives them, in families
FAMILIES: dict[str, tuple[str, ...]] = {
    "analytic": ("rosenbrock", "quadratic", "sign_trap", "vote_trap"),
    "glm": ("glm", "logistic", "least_squares"),
    "mlp": ("mlp",),
    "external": ("external",),
}
#: the dispatchers of ``engine/dispatch.py`` that the loops and the diagnostics call, directly or through each
#: other; a kernel module's stand-in must define every kernel these call on a module (``_stand_in``)
DISPATCHERS = ("analytic_loss_grad", "problem_loss", "problem_grad", "problem_loss_grad", "problem_evaluate",
               "problem_oracle", "problem_sample_grad", "problem_accuracy", "problem_test_loss", "check_problem")
NO_CODE = -1  # a stand-in's CODE: equal to no problem's code


@njit(cache=True)
def _absent_loss(x, pf, pi, A, b):
    return np.nan


@njit(cache=True)
def _absent_test_loss(x, pf, pi, A, b):
    return np.nan


@njit(cache=True)
def _absent_grad(x, pf, pi, A, b, out):
    for i in range(out.shape[0]):
        out[i] = np.nan


@njit(cache=True)
def _absent_loss_grad(x, pf, pi, A, b, out):
    for i in range(out.shape[0]):
        out[i] = np.nan
    return np.nan


@njit(cache=True)
def _absent_evaluate(x, pf, pi, A, b, out):
    for i in range(out.shape[0]):
        out[i] = np.nan
    return np.nan, np.nan


@njit(cache=True)
def _absent_oracle(x, worker, gen, tau, pf, pi, A, b, ptr, idx, out):
    for i in range(out.shape[0]):
        out[i] = np.nan


@njit(cache=True)
def _absent_sample_grad(x, pf, pi, A, b, j, out):
    for i in range(out.shape[0]):
        out[i] = np.nan


@njit(cache=True)
def _absent_accuracy(x, pf, pi, A, b, test):
    return np.nan


@njit(cache=True)
def _absent_draw(gen, p):
    return np.nan


def _stand_in(name: str) -> types.ModuleType:
    """A kernel module with no code, for a family that does not include ``name``."""
    mod = types.ModuleType(f"absent_{name}")
    mod.CODE = NO_CODE
    mod.loss, mod.grad, mod.loss_grad, mod.evaluate = _absent_loss, _absent_grad, _absent_loss_grad, _absent_evaluate
    mod.oracle, mod.sample_grad, mod.accuracy = _absent_oracle, _absent_sample_grad, _absent_accuracy
    mod.test_loss = _absent_test_loss
    return mod


def _copy(kernel, name: str, namespace: dict, **options):
    """``kernel`` (a Numba dispatcher, or a plain function) compiled under ``name`` with the globals
    ``namespace``, with its options and ``options`` (cached on disk unless ``options`` says ``cache=False``)."""
    fn = getattr(kernel, "py_func", kernel)
    copy = types.FunctionType(fn.__code__.replace(co_name=name, co_qualname=name), namespace, name)
    copy.__qualname__ = name
    copy.__doc__ = fn.__doc__
    opts = {k: v for k, v in getattr(kernel, "targetoptions", {}).items() if k not in ("nopython", "boundscheck")}
    return njit(**{"cache": True, **opts, **options})(copy)


def family_of(code: int) -> str:
    """The family whose loop runs the problem with this code."""
    for family, names in FAMILIES.items():
        if any(getattr(getattr(dispatch, n), "CODE", None) == code for n in names):
            return family
    raise ValueError(f"problem code {code} belongs to no family of engine/specialize.py")


#: the noise model modules, by the names ``engine/dispatch.py`` gives them (``signsim.noise``'s list)
NOISE = noise_models.MODULES
#: the name of the noise model module with an integer code (``signsim.noise.module_of``)
noise_name = noise_models.module_of


@functools.cache
def dispatchers(family: str, noise: str | None = None) -> dict:
    """The family's copies of ``dispatch``'s problem dispatchers (``DISPATCHERS``), by name; with ``noise`` (a name
    in ``NOISE``), also ``add_noise`` drawing from that noise model only (the other models' codes draw NaN there, and
    ``compose.check_codes`` refuses them before the loop)."""
    if family not in FAMILIES:
        raise ValueError(f"unknown problem family {family!r}")
    if noise is not None:
        if noise not in NOISE:
            raise ValueError(f"unknown noise model {noise!r}")
        made = dict(dispatchers(family))
        absent = types.ModuleType("absent_noise")
        absent.CODE, absent.draw = NO_CODE, _absent_draw
        nns = {**vars(dispatch), **{n: absent for n in NOISE if n not in (noise, "none")}}
        nns["noise_draw"] = _copy(dispatch.noise_draw, f"noise_draw__{noise}", nns)
        made["add_noise"] = _copy(dispatch.add_noise, f"add_noise__{noise}", nns)
        return made
    absent = {n: _stand_in(n) for other, names in FAMILIES.items() if other != family for n in names}
    dns = {**vars(dispatch), **absent}
    made = {name: _copy(getattr(dispatch, name), f"{name}__{family}", dns) for name in DISPATCHERS}
    dns.update(made)  # the dispatchers call each other by these names
    return made


@functools.cache
def kernel(compiled, family: str):
    """A copy of the compiled kernel ``compiled`` (a diagnostics kernel) whose calls to ``dispatch``'s problem
    dispatchers go to the family's copies."""
    ns = {**compiled.py_func.__globals__, **dispatchers(family)}
    return _copy(compiled, f"{compiled.py_func.__name__}__{family}", ns)
