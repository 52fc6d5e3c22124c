"""Researchers' own stages: a Python file written to the stage contract (``signsim.stages.base``) plus one line,
``STAGE = "compressor"`` (or "momentum", "error_feedback", "aggregation", "attack"), runs in signsim's engine
without touching the package (docs/api.md, "Your own stage"). Loaded from ``--plugin FILE`` (run, sweep,
check-stage), the ``plugin`` key of a config or sweep file, ``signsim.run(..., plugins=[...])``, or an
installed package's entry point in the group ``signsim.stages`` (the entry point names the module).

A plugin that breaks the contract gets one error line naming it (``InputError``): a missing or mistyped
declaration, a name that clashes with a stage already known, a kernel that does not compile, or a kernel that
writes or returns the wrong values (``signsim.engine.smoke``: out of bounds, non-finite output, a bit count that is not
a positive finite number)."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

from signsim.errors import InputError
from signsim.stages import kinds, registry
from signsim.stages.base import KINDS, Param

#: what each kind of stage must declare: attribute -> "function" or a type (the table of kinds)
REQUIRED: dict[str, dict[str, object]] = {k.name: k.required for k in kinds.PRIMARY}
#: what a module of a kind may declare besides (``signsim.stages.base``): checked when present
OPTIONAL: dict[str, dict[str, object]] = {
    "compressor": {"message_bits": "function", "moments": "function", "DEGREE": int, "COORDINATE_SIGN": bool,
                   "ALLREDUCE": bool},
    "attack": {"sign_law": "function"},
    "error_feedback": {"STATE_WIDTH": int},
}
#: what a module of any kind may declare: its author's word that its kernels stay within their arrays
#: (``bounds_checked``)
ANY_KIND = {"TRUSTED": bool}
COMPRESSOR_KINDS = ("unbiased", "contractive", "biased")
BROADCASTS = ("floats", "sparse", "sign-sum")

#: the plugin files loaded in this process, by resolved path (loading one twice is a no-op)
LOADED: dict[str, ModuleType] = {}
_ENTRY_POINTS_LOADED = False


def _fail(where: str, what: str) -> InputError:
    return InputError(f"--plugin '{where}': {what}")


def check_contract(mod: ModuleType, where: str) -> str:
    """The kind of the stage module ``mod``, or InputError naming ``where`` and what is wrong."""
    kind = getattr(mod, "STAGE", None)
    if kind not in KINDS:
        raise _fail(where, f"STAGE must be one of {', '.join(KINDS)} (got {kind!r})")
    for attr, want in REQUIRED[kind].items():
        if not hasattr(mod, attr):
            raise _fail(where, f"a {kind} stage must declare {attr}")
        value = getattr(mod, attr)
        if want == "function":
            if not callable(value) or not hasattr(value, "__code__"):
                raise _fail(where, f"{attr} must be a plain Python function (the engine compiles it)")
        elif not isinstance(value, want):
            raise _fail(where, f"{attr} must be a {want.__name__}")
    for attr, want in {**OPTIONAL.get(kind, {}), **ANY_KIND}.items():
        if not hasattr(mod, attr):
            continue
        value = getattr(mod, attr)
        if want == "function":
            if not callable(value) or not hasattr(value, "__code__"):
                raise _fail(where, f"{attr}, when declared, must be a plain Python function")
        elif not isinstance(value, want) or (want is int and isinstance(value, bool)):
            raise _fail(where, f"{attr}, when declared, must be a {want.__name__}")
    if kind == "error_feedback" and getattr(mod, "STATE_WIDTH", 1) < 1:
        raise _fail(where, f"STATE_WIDTH, when declared, must be >= 1 (got {mod.STATE_WIDTH})")
    if not isinstance(mod.NAME, str) or not mod.NAME or ":" in mod.NAME or mod.NAME != mod.NAME.strip():
        raise _fail(where, f"NAME {mod.NAME!r} must be a non-empty word without ':'")
    if not all(isinstance(p, Param) for p in mod.PARAMS):
        raise _fail(where, "PARAMS must be a tuple of signsim.stages.base.Param")
    if kind == "compressor":
        if mod.KIND not in COMPRESSOR_KINDS:
            raise _fail(where, f"KIND must be one of {', '.join(COMPRESSOR_KINDS)} (got {mod.KIND!r})")
        if mod.BROADCAST not in BROADCASTS:
            raise _fail(where, f"BROADCAST must be one of {', '.join(BROADCASTS)} (got {mod.BROADCAST!r})")
        if mod.BROADCAST == "sign-sum" and not callable(getattr(mod, "sum_values", None)):
            raise _fail(where, "a compressor whose BROADCAST is sign-sum must declare sum_values(M, sign_zero)")
    known = registry.stages(kind)
    if mod.NAME in known and known[mod.NAME] is not mod and not _same_file(known[mod.NAME], mod):
        other = known[mod.NAME]
        origin = "a built-in" if other.__name__.startswith("signsim.") else f"the plugin {other.__file__}:"
        raise _fail(where, f"the {kind} name '{mod.NAME}' clashes with {origin} {kind} of that name")
    return kind


#: what a stage's plain-Python declarations must return (``declared``): a check and its words
RESULTS = {
    "bits": (lambda v: _number(v) and _finite(v) and v >= 0, "a finite number >= 0"),
    "number": (lambda v: v is None or (_number(v) and v == v), "a number or None"),
    "pair": (lambda v: isinstance(v, tuple) and len(v) == 2 and all(_number(x) and _finite(x) and x >= 0
                                                                     for x in v), "a pair of finite numbers >= 0"),
}


def _number(v) -> bool:
    import numbers

    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _finite(v) -> bool:
    """A real number that is not infinite nor NaN (an integer of any size is)."""
    import numbers

    return isinstance(v, numbers.Integral) or math.isfinite(v)


def declared(mod: ModuleType, attr: str, *args, result: str = "bits", rows: int | None = None, default=None):
    """``mod.attr(*args)``, a stage's plain-Python declaration (its bits, its broadcast's bits, its rows, its
    constant, its extra bits), checked for a plugin: a call that raises, or a value that is not what the contract
    says (``RESULTS``; "rows": an integer 1..``rows``), is one error line naming the file. A built-in's value is
    returned as it is (its tests hold it). ``default``: the function of a module that leaves ``attr`` out."""
    fn = getattr(mod, attr, default)
    if not is_plugin(mod):
        return fn(*args)
    where = getattr(mod, "__file__", mod.__name__)
    try:
        value = fn(*args)
    except InputError:  # the plugin's own refusal of these arguments (rows: a link that needs more messages)
        raise
    except (Exception, SystemExit) as e:  # noqa: BLE001 - the plugin's own code (sys.exit() ended signsim with 0)
        raise _fail(where, f"{attr}() raised {type(e).__name__}: {e}") from None
    if result == "rows":
        import numbers

        if not (isinstance(value, numbers.Integral) and not isinstance(value, bool) and 1 <= value <= rows):
            raise _fail(where, f"{attr}() returned {value!r}: expected an integer from 1 to {rows}")
        return value
    ok, words = RESULTS[result]
    if not ok(value):
        raise _fail(where, f"{attr}() returned {value!r}: expected {words}")
    return value


def bounds_checked(mod: ModuleType) -> bool:
    """Whether the engine compiles the stage module ``mod``'s kernels with bounds checks: a plugin's, unless it
    declares ``TRUSTED = True`` (its author's word that its kernels stay within their arrays). An index outside an
    array then stops the run with one line naming the file, instead of corrupting memory; such a composition runs
    the serial loop."""
    return is_plugin(mod) and getattr(mod, "TRUSTED", False) is not True


#: the source digest of each plugin module loaded from a file (``load_file``), by module name
DIGESTS: dict[str, str] = {}


def _same_file(a: ModuleType, b: ModuleType) -> bool:
    """Two plugin modules loaded from one file (its edited source replaces the earlier one), or from two files of
    one source (a copy: the same stage, whichever file loaded last)."""
    fa, fb = getattr(a, "__file__", None), getattr(b, "__file__", None)
    if not (is_plugin(a) and is_plugin(b) and fa is not None and fb is not None):
        return False
    if Path(fa).resolve() == Path(fb).resolve():
        return True
    digest = DIGESTS.get(a.__name__)
    return digest is not None and digest == DIGESTS.get(b.__name__)


def load_file(path: str | Path) -> ModuleType:
    """Import the plugin file ``path`` and register its stage."""
    p = Path(path).expanduser()
    where = str(path)
    try:
        readable = p.is_file()
    except OSError as e:  # a name too long for the file system, a loop of links, ...
        raise _fail(where, f"not a readable .py file ({e.strerror})") from None
    if not readable or p.suffix != ".py":
        raise _fail(where, "not a readable .py file")
    from signsim.paths import input_file

    input_file(p, f"--plugin '{where}'")  # (a source the memory cannot hold: one line, before reading it)
    # named by its source, as its compiled kernels are: a cached loop refers to the module by this name, so the
    # same source loaded from another path must find the same module, and an edited file is a new module (in one
    # process too: a notebook that edits its plugin never runs it stale)
    full = hashlib.sha1(p.read_bytes()).hexdigest()
    digest = full[:10]
    key = f"{p.resolve()}:{digest}"
    if key in LOADED:
        return LOADED[key]
    name = f"signsim_plugin_{p.stem.replace('-', '_')}_{digest}"
    if name in sys.modules and is_plugin(sys.modules[name]):
        LOADED[key], DIGESTS[name] = sys.modules[name], full
        return LOADED[key]
    spec = importlib.util.spec_from_file_location(name, p)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # Numba's cache and pickling (sweep workers) find it by this name
    DIGESTS[name] = full
    try:
        spec.loader.exec_module(mod)
    except InputError:
        del sys.modules[name]
        raise
    except BaseException as e:  # noqa: BLE001 - the plugin's own code failed (SystemExit too): one line naming it
        del sys.modules[name]
        if isinstance(e, KeyboardInterrupt):  # Ctrl-C while it imports: an interrupt (exit 130), not a bad plugin
            raise
        raise _fail(where, f"cannot be imported: {type(e).__name__}: {e}") from None
    try:
        kind = check_contract(mod, where)
    except InputError:
        del sys.modules[name]  # refused: a second load checks it again
        raise
    registry.PLUGINS[kind][mod.NAME] = mod
    LOADED[key] = mod
    return mod


def load_module(module_name: str, where: str | None = None) -> ModuleType:
    """Register the stage of an installed module (an entry point's target)."""
    where = where or module_name
    try:
        mod = importlib.import_module(module_name)
    except BaseException as e:  # noqa: BLE001 - SystemExit from its code too
        sys.modules.pop(module_name, None)
        if isinstance(e, KeyboardInterrupt):
            raise
        raise _fail(where, f"cannot be imported: {type(e).__name__}: {e}") from None
    kind = check_contract(mod, where)
    registry.PLUGINS[kind][mod.NAME] = mod
    return mod


def paths(plugins) -> list[str]:
    """The files of ``plugins``: a path, several joined by commas (the ``plugin`` option), or a list."""
    if plugins is None:
        return []
    if isinstance(plugins, (str, Path)):
        items = str(plugins).split(",")
    elif isinstance(plugins, (list, tuple)) and all(isinstance(p, (str, Path)) for p in plugins):
        items = [str(p) for p in plugins]
    else:
        raise InputError(f"plugins {plugins!r}: expected a file name or a list of file names")
    return [p.strip() for p in items if p.strip()]


def absolute(plugins) -> str:
    """The ``plugin`` option with every path made absolute (a file that does not exist stays as written, for
    its error)."""
    out = []
    for p in paths(plugins):
        q = Path(p).expanduser()
        try:
            out.append(str(q.resolve()) if q.exists() else p)
        except OSError as e:  # a name too long for the file system, a loop of links, ...
            raise _fail(p, f"not a readable .py file ({e.strerror})") from None
    return ",".join(out)


def load(plugins) -> list[ModuleType]:
    """Load every plugin of ``plugins`` (see ``paths``)."""
    return [load_file(p) for p in paths(plugins)]


def load_entry_points() -> None:
    """Register the stages of installed packages (entry point group ``signsim.stages``), once per process."""
    global _ENTRY_POINTS_LOADED
    if _ENTRY_POINTS_LOADED:
        return
    _ENTRY_POINTS_LOADED = True
    import warnings
    from importlib.metadata import entry_points

    for ep in entry_points(group="signsim.stages"):
        try:
            load_module(ep.value.partition(":")[0], f"{ep.name} (entry point {ep.value})")
        except InputError as e:  # a broken entry point disables only itself
            warnings.warn(f"{str(e).replace('--plugin ', 'installed stage ', 1)}; it is left out", stacklevel=2)


registry.DISCOVER.append(load_entry_points)


def is_plugin(mod: ModuleType) -> bool:
    return not mod.__name__.startswith("signsim.")
