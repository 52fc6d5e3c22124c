"""The loop's calls on its problem's and noise model's kernels, by the problem's and the noise model's integer codes,
made for the family of problems (or one problem kernel module of it) and the noise model that the plan's problems
name (``signsim.engine.plan``).

Numba compiles every branch of a dispatch on integer codes, so a loop able to run every problem compiles every
problem's kernels: on the first run of the default Rosenbrock problem, more than half of the compile time went to
the kernels of the MLP and the GLMs. So the problem kernel modules come in families (``FAMILIES``), and each call
here (``problem_oracle(problems, code, ...)``, ``problem_evaluate(problems, code, ...)``, ...) is a function with one
Numba overload that, for the type of ``problems``, makes the branch over that family's modules only (``RULES``: what
each module is asked, by the functions it has), and ``noise_draw`` over the one noise model it names (or every one).
Nothing is copied: the branches are made from this table when a loop is compiled for a new plan, and inlined into
it. A composition's own loop narrows the branch to its run's problem kernel module (``Problems``' ``module``: a first
default run then compiles Rosenbrock's kernels, not the four analytic problems'). A problem of another family (or
module), or another noise model, is an unknown code there, refused before the loop by ``check_problem`` and
``compose.check_codes``.

No dispatch falls through silently: the ones outside parallel loops raise for a code they do not know; the ones
that run inside parallel loops (oracles, per-sample gradients, noise draws) cannot raise without making the loop
serial, so they write NaN (and callers check their codes before the loop with ``check_problem`` and
``check_noise``). A new problem kernel module joins one family here; a new noise model joins ``NOISE_MODELS``.
"""

import functools
import os
import re
import warnings

import numba
import numpy as np
from numba import njit, types
from numba.core.errors import NumbaIRAssumptionWarning
from numba.extending import NativeValue, models, overload, register_model, typeof_impl, unbox

from signsim import noise as noise_registry
from signsim.noise import bimodal, cauchy, gaussian, laplace, none, skewed, stable, student_t, uniform
from signsim.noise.base import N_NOISE_PARAMS
from signsim.problems import (
    external,
    glm,
    least_squares,
    logistic,
    mlp,
    quadratic,
    rosenbrock,
    sign_trap,
    vote_trap,
)


def _launch() -> None:
    """Launch Numba's threading layer, its libgomp waiting passively (``OMP_WAIT_POLICY``, unless set).

    Cached kernels may call parallel ones (the data problems' full-data passes): a process that loads them from
    the cache must have Numba's threading layer running first, or LLVM cannot resolve its scheduler's symbols
    ("Symbol not found: allocate_sched") and the process aborts. Every kernel module imports this one. Asking for
    the number of threads (public) launches the threading layer.

    Numba's parallel loops run on the system's libgomp (the "omp" layer), which reads ``OMP_WAIT_POLICY`` when
    it loads, here. By default a libgomp thread that finishes its share spins for ~300,000 iterations before
    sleeping; on a machine whose cores are busy with other work that spinning takes the CPU from the sibling thread
    the barrier waits for, and the engine's parallel loop over workers (two barriers per iteration) ran 4-10x
    slower than one thread (issue #17, 2 shared cores): passive waiting sleeps at once. The variable is removed
    again once the layer runs, so that processes started later do not inherit it. PyTorch's many short parallel
    regions on a small model ran 3x slower waiting passively (a gradient step of FLUTE's logistic regression,
    5.3 ms against 1.6 ms; 6 December 2026); torch links the same runtime by the name this libgomp answers to, and
    would share it, so a model's run imports torch first (``config._torch_first``) and torch's own libgomp serves
    it with its defaults. A value the user set is left as it is, for both."""
    ours = "OMP_WAIT_POLICY" not in os.environ
    if ours:
        os.environ["OMP_WAIT_POLICY"] = "passive"
    try:
        numba.get_num_threads()
    finally:
        if ours:
            del os.environ["OMP_WAIT_POLICY"]


_launch()

# Numba's inliner trips its own pedantic check of the code it inlines ("variable 'impl_v90__v26call_5_9.1' is not in
# scope. This warning came from an internal pedantic check. Please report ...") when a call made here is inlined into
# a parallel loop (the diagnostics' two-batch kernel): two notes of seven lines on the user's stderr at the kernel's
# first compile. The kernels are checked against NumPy references (tests/diagnostics); the note is Numba's to act on,
# not a user's (tests/diagnostics/test_diversity.py::test_a_first_compile_prints_no_numba_note). Only that message
# of that category, and after the filters already set (``-W error`` still turns it into an error)
warnings.filterwarnings("ignore", message=r"variable '.*' is not in scope", category=NumbaIRAssumptionWarning,
                        append=True)

#: the problem kernel modules of each family, each with the problem codes it serves; a run compiles only its
#: family's (a test checks that every problem code belongs to exactly one family)
FAMILIES: dict[str, tuple] = {
    "analytic": ((rosenbrock, (rosenbrock.CODE,)), (quadratic, (quadratic.CODE,)), (sign_trap, (sign_trap.CODE,)),
                 (vote_trap, (vote_trap.CODE,))),
    "glm": ((glm, (logistic.CODE, least_squares.CODE)),),
    "mlp": ((mlp, (mlp.CODE,)),),
    "external": ((external, (external.CODE,)),),
}
#: the noise models that draw (``none`` adds nothing), by the names of ``signsim.noise``'s list
NOISE_MODELS = {"gaussian": gaussian, "laplace": laplace, "uniform": uniform, "student_t": student_t,
                "bimodal": bimodal, "skewed": skewed, "cauchy": cauchy, "stable": stable}
#: the noise model modules' names (``signsim.noise``'s list), and the name of the one with an integer code
NOISE = noise_registry.MODULES
noise_name = noise_registry.module_of

class Problems:
    """The problem and noise kernels a loop can reach (a plan's ``problems``, ``signsim.engine.plan``): the family of
    problems (``FAMILIES``), the noise model (None: every model; a name of ``NOISE``: that one only, the others'
    codes refused before the loop) and the problem kernel module (None: every one of the family; a module's name,
    ``module_name``: that one only, the others' codes refused before the loop, as a composition's own loop takes it).
    Its Numba type, ``ProblemsType``, carries the three; nothing of it is read at run time."""

    __slots__ = ("family", "noise", "module")

    def __init__(self, family: str, noise: str | None = None, module: str | None = None):
        if family not in FAMILIES:
            raise ValueError(f"unknown problem family {family!r}")
        if noise is not None and noise not in NOISE:
            raise ValueError(f"unknown noise model {noise!r}")
        if module is not None and module not in module_names(family):
            raise ValueError(f"no problem module {module!r} in the family {family!r}")
        if len(FAMILIES[family]) == 1:
            module = None  # (the family's one module: nothing to narrow, and the family's loops keep their names)
        self.family, self.noise, self.module = family, noise, module

    def __repr__(self) -> str:
        return f"Problems({self.family!r}, {self.noise!r}, {self.module!r})"


class ProblemsType(types.Type):
    """The Numba type of ``Problems``: pickled into Numba's cache index with each compiled signature."""

    module = None  # (a type pickled before it named a module)

    def __init__(self, family: str, noise: str | None, module: str | None = None):
        self.family, self.noise, self.module = family, noise, module
        super().__init__(name=f"Problems({family},{noise or 'every noise'}{f',{module}' if module else ''})")


def _short(module) -> str:
    return module.__name__.rpartition(".")[2]


def module_names(family: str) -> list[str]:
    """The names of the problem kernel modules of ``family`` (``FAMILIES``), in order."""
    return [_short(module) for module, _ in FAMILIES[family]]


def module_name(code: int) -> str:
    """The name of the problem kernel module that serves the problem with this code (``FAMILIES``): what a
    ``Problems`` of one problem names."""
    for modules in FAMILIES.values():
        for module, codes in modules:
            if code in codes:
                return _short(module)
    raise ValueError(f"problem code {code} belongs to no family of engine/dispatch.py")


def family_in(text: str) -> str | None:
    """The family of problems named in the text of a type holding a ``ProblemsType`` (a plan's: the ledger's
    record of a loop, ``signsim.engine.ledger``), or None."""
    found = re.search(r"Problems\(([^,()]+),", text)
    return found.group(1) if found else None


def opaque(cls: type, numba_type: type, type_of) -> None:
    """Register the values of ``cls`` with Numba as values of no content whose Numba type (a ``numba_type``,
    ``type_of(value)``) carries everything: passed to a compiled function, they select what it compiles."""
    typeof_impl.register(cls)(lambda value, context: type_of(value))
    register_model(numba_type)(models.OpaqueModel)
    unbox(numba_type)(lambda typ, obj, c: NativeValue(c.context.get_dummy_value()))


opaque(Problems, ProblemsType, lambda value: ProblemsType(value.family, value.noise, value.module))


RAISE = 'raise ValueError("unknown problem code")'
# (no raise inside a parallel loop, which would then run serially: an unknown code poisons the result)
POISON = "for i in range(out.shape[0]):\n        out[i] = np.nan"


def _loss_grad(m, evaluate: bool = False) -> str:
    """f(x), with grad f(x) in ``out``: one pass over the data where the module allows it."""
    if hasattr(m, "loss_grad"):
        return "return M.loss_grad(x, pf, pi, A, b, out)"
    if hasattr(m, "evaluate"):
        return "return M.evaluate(x, pf, pi, A, b, out)[0]"
    return "M.grad(x, pf, pi, A, b, out)\n        return M.loss(x, pf, pi, A, b)" + (", np.nan" if evaluate else "")


#: each call: its arguments after (problems, code), what a kernel module is asked (None: nothing, the module's codes
#: fall to the end), and what an unknown code gets
RULES = {
    "problem_loss": ("x, pf, pi, A, b", lambda m: "return M.loss(x, pf, pi, A, b)", RAISE),
    "problem_grad": ("x, pf, pi, A, b, out", lambda m: "M.grad(x, pf, pi, A, b, out)\n        return", RAISE),
    "problem_loss_grad": ("x, pf, pi, A, b, out", _loss_grad, RAISE),
    # (f(x), training accuracy), with grad f(x) in ``out``: what a history row needs (accuracy NaN without data)
    "problem_evaluate": ("x, pf, pi, A, b, out", lambda m: ("return M.evaluate(x, pf, pi, A, b, out)"
                                                          if hasattr(m, "evaluate") else _loss_grad(m, True)), RAISE),
    "problem_oracle": ("x, worker, gen, tau, pf, pi, A, b, ptr, idx, out",
                       lambda m: "M.oracle(x, worker, gen, tau, pf, pi, A, b, ptr, idx, out)\n        return", POISON),
    # the per-sample gradient of training row j (finite-sum problems only)
    "problem_sample_grad": ("x, pf, pi, A, b, j, out", lambda m: ("M.sample_grad(x, pf, pi, A, b, j, out)\n"
                                                                  "        return")
                            if hasattr(m, "sample_grad") else None, POISON),
    # classification accuracy on the training (test=False) or held-out rows; NaN where it does not apply
    "problem_accuracy": ("x, pf, pi, A, b, test", lambda m: ("return M.accuracy(x, pf, pi, A, b, test)"
                                                            if hasattr(m, "accuracy") else "return np.nan"), RAISE),
    # the loss on the held-out samples of a data problem (NaN for the others, which have none)
    "problem_test_loss": ("x, pf, pi, A, b", lambda m: ("return M.test_loss(x, pf, pi, A, b)"
                                                       if hasattr(m, "test_loss") else None), "return np.nan"),
    # raise for a problem code outside the family (call before a parallel loop)
    "check_problem": ("", lambda m: "return", RAISE),
}


def _family_function(name: str, family: str, only: str | None = None):
    """``name`` (a call of ``RULES``) for the problem modules of ``family`` (the module named ``only``, when given):
    a branch over their codes."""
    args, ask, end = RULES[name]
    params = f"code, {args}" if args else "code"
    lines, ns = [f"def {name}__{family}({params}):"], {"np": np}
    for i, (module, codes) in enumerate(FAMILIES[family]):
        statement = ask(module)
        if statement is None or only not in (None, _short(module)):
            continue
        ns[f"M{i}"] = module
        test = " or ".join(f"code == {c}" for c in codes)
        lines.append(f"    if {test}:\n        " + statement.replace("M.", f"M{i}."))
    lines.append(f"    {end}")
    made: dict = dict(ns)
    exec("\n".join(lines) + "\n", made)  # noqa: S102 - text made from RULES and FAMILIES
    return made[f"{name}__{family}"]


def _noise_draw(noise: str | None):
    """One sample of the noise model with the code given, among ``noise`` only (None: every model): a branch."""
    models = NOISE_MODELS if noise is None else {n: m for n, m in NOISE_MODELS.items() if n == noise}
    lines, ns = ["def noise_draw(code, gen, p):"], {"np": np}
    for i, module in enumerate(models.values()):
        ns[f"M{i}"] = module
        lines.append(f"    if code == {module.CODE}:\n        return M{i}.draw(gen, p)")
    lines.append("    return np.nan  # no raise inside a parallel loop: an unknown code poisons the gradient")
    exec("\n".join(lines) + "\n", ns)  # noqa: S102 - text made from NOISE_MODELS
    return ns["noise_draw"]


def overloaded(name: str, params: str, module: str, key_of, make, inline: str = "always"):
    """A function ``name(params)`` that raises in Python and, compiled, is ``make(t)`` for the Numba type ``t`` of its
    first parameter (a function taking ``params``), made once per ``key_of(t)`` (None: not this overload's type) and
    inlined into its caller (``inline``: Numba's ``overload`` option; "never": a call of its own compiled function).
    The loop's calls on its problem (here) and on its stages (``signsim.engine.plan``)."""
    stub: dict = {}
    exec(f"def {name}({params}):\n    raise NotImplementedError\n", stub)  # noqa: S102 - a fixed signature
    fn = stub[name]
    fn.__module__ = module
    made: dict = {}

    def resolve(t):
        key = key_of(t)
        if key is None:
            return None
        if key not in made:
            made[key] = make(t)
        return made[key]

    typer: dict = {"resolve": resolve}
    exec(f"def typer({params}):\n    return resolve({params.partition(',')[0]})\n", typer)  # noqa: S102
    # compiled with the runtime (where returning an array a function was not passed is allowed); inlined (the
    # default), Numba compiles the chosen function alone first, to type it, and then again inside each caller, and
    # the worker step that takes it in runs without the runtime; with "never" (the server's stage calls, plan.py) the
    # caller calls the one compiled function
    overload(fn, inline=inline, jit_options={"_nrt": True})(typer["typer"])
    return fn


def _call(name: str, make):
    """``name(problems, code, ...)``: ``make(problems' type)``, made once per family, noise model and problem
    module."""
    args = RULES[name][0] if name in RULES else "gen, p"
    params = f"problems, code, {args}" if args else "problems, code"

    def impl(problems):
        ns = {"inner": njit(inline="always")(make(problems))}
        exec(f"def impl({params}):\n    return inner({params.partition(', ')[2]})\n", ns)  # noqa: S102
        return ns["impl"]

    return overloaded(name, params, __name__,
                      lambda t: (t.family, t.noise, t.module) if isinstance(t, ProblemsType) else None, impl)


def _problem_call(name: str):
    return _call(name, lambda problems: _family_function(name, problems.family, problems.module))


problem_loss = _problem_call("problem_loss")
problem_grad = _problem_call("problem_grad")
problem_loss_grad = _problem_call("problem_loss_grad")
problem_evaluate = _problem_call("problem_evaluate")
problem_oracle = _problem_call("problem_oracle")
problem_sample_grad = _problem_call("problem_sample_grad")
problem_accuracy = _problem_call("problem_accuracy")
problem_test_loss = _problem_call("problem_test_loss")
check_problem = _problem_call("check_problem")
noise_draw = _call("noise_draw", lambda problems: _noise_draw(problems.noise))


@njit(inline="always")
def add_noise(problems, code, p, gen, tau, out):
    """out_i += s_i * (mean of tau noise draws), coordinate by coordinate (tau draws for coordinate 0 first), from
    the noise models the plan's ``problems`` reach.

    ``p`` holds the model's three parameters, then optionally one scale s_i per coordinate
    (``--noise-scales``, docs/theory.md §10.2; s_i = 1 when absent). Every coordinate draws its variates
    whatever its scale, so the stream does not depend on the scales. Gaussian noise uses its exact shortcut:
    the mean of tau draws is sigma / sqrt(tau) N(0, 1), one draw. tau = FULL_BATCH (``--batch-size full``, an exact
    local gradient): one draw (``sampling.noise_draws``, docs/theory.md §5).
    """
    if code == none.CODE:
        return
    if tau < 1:
        tau = 1
    d = out.shape[0]
    scaled = p.shape[0] > N_NOISE_PARAMS
    if code == gaussian.CODE:
        s = p[0] / np.sqrt(tau)
        for i in range(d):
            z = s * gen.standard_normal()
            out[i] += p[N_NOISE_PARAMS + i] * z if scaled else z
        return
    for i in range(d):
        acc = 0.0
        for _ in range(tau):
            acc += noise_draw(problems, code, gen, p)
        z = acc / tau
        out[i] += p[N_NOISE_PARAMS + i] * z if scaled else z


@njit(inline="always")
def noisy_gradient(problems, code, ncode, x, w, gen, tau, data, out):
    """out <- worker w's stochastic gradient at x: the oracle of problem code ``code`` (a minibatch of tau of the
    worker's samples, from the problem's ``data``, an ``engine.loop.ProblemData``), then the mean of tau draws of
    the noise model of code ``ncode`` (``add_noise``). The run's workers and the diagnostics' estimators draw
    through it (docs/theory.md §5)."""
    problem_oracle(problems, code, x, w, gen, tau, data.pf, data.pi, data.A, data.b, data.ptr, data.idx, out)
    add_noise(problems, ncode, data.nparams, gen, tau, out)


@njit(cache=True)
def check_noise(code):
    """Raise for a noise code with no draw here (call before a parallel loop)."""
    if not (code == none.CODE or code == gaussian.CODE or code == laplace.CODE or code == uniform.CODE
            or code == student_t.CODE or code == bimodal.CODE or code == skewed.CODE or code == cauchy.CODE
            or code == stable.CODE):
        raise ValueError("unknown noise code")


@njit(cache=True)
def loss_grad(problems, code, x, pf, pi, A, b, out):
    """f(x), with grad f(x) written to ``out``, for callers in Python (the diagnostics' exact gradient): compiled
    and cached for each family of problems."""
    return problem_loss_grad(problems, code, x, pf, pi, A, b, out)


def family_of(code: int) -> str:
    """The family whose problem modules serve the problem with this code."""
    for family, modules in FAMILIES.items():
        if any(code in codes for _, codes in modules):
            return family
    raise ValueError(f"problem code {code} belongs to no family of engine/dispatch.py")


def check_code(code: int) -> None:
    """ValueError for a problem code no family serves (a Python caller's check before a parallel kernel)."""
    if not any(code in codes for modules in FAMILIES.values() for _, codes in modules):
        raise ValueError("unknown problem code")


@functools.cache
def compiled(name: str, family: str, noise: str | None = None, module: str | None = None):
    """``name`` (a call of ``RULES``) for ``family``'s problems (``Problems(family, noise, module)``) as a function
    Python can call (``code, ...``), compiled on first call, once per process (not cached on disk: for tests and
    one-off checks)."""
    args = RULES[name][0] if name in RULES else "gen, p"  # (noise_draw's)
    params = f"problems, code, {args}" if args else "problems, code"
    ns = {"call": globals()[name]}
    exec(f"def entry({params}):\n    return call({params})\n", ns)  # noqa: S102 - a fixed signature
    return functools.partial(njit(ns["entry"]), Problems(family, noise, module))
