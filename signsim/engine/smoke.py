"""A plugin's kernels run once, bounds-checked, before the engine runs them unchecked: every call the loop makes on a
stage of its kind, read from the table of kinds (``signsim.stages.kinds``), with arguments of the shapes the loop
passes (``values``; the stage's state as its kind's ``State`` rows size it for the module, placeholders included),
over three rounds (k = 0, 1, 2) that keep that state. A slot's stage (the downlink's compressor or error feedback, a
link of the pre-aggregation chain) runs with the slot's row: the downlink's error memory is d long whatever the
module's STATE_WIDTH.

What each call must do follows from its row of the table: a "vector" result is a finite vector of length d; "bits"
a finite number > 0; "rows" how many of the n rows it leaves, 1 to n; "flag" a bool; and every array it is handed
stays finite (of a "rows" call, the rows it leaves; not for a kind whose stages may send infinities,
``Kind.finite``). A call the loop makes only under a module flag (``Call.when``: an aggregation's ``finish`` when it
is SUMMED, its ``robust`` otherwise) runs only under it. A compressor's NumPy ``reference`` must return a vector of
length d as well (the PyTorch path, ``signsim.torch.ddp``, sends what it returns).
"""

from __future__ import annotations

import math

import numpy as np

from signsim.stages import kinds

#: the largest dimension the smoke test runs a plugin's kernels at (the run's own d when smaller)
SMOKE_MAX_D = 100_000
#: the messages a server's call is handed (``msg``'s rows; ``n``, ``M`` and ``S`` of the calls)
ROWS = 4


def smoke_test(stage, d: int) -> None:
    """Compile a plugin's kernels with bounds checks and run them on a small vector and on one of the run's
    dimension d (up to ``SMOKE_MAX_D``): InputError naming the plugin when a kernel does not compile, reads or
    writes outside an array, or returns or writes wrong values (a contract broken at run time, never a crash, a
    corrupted heap or a silent NaN run). The calls run where Ctrl-C and SIGTERM still act
    (``interrupts.interruptible``). Built-in stages are checked by the test suite instead."""
    from signsim.stages.plugins import is_plugin

    if not is_plugin(stage.module):
        return
    for size in sorted({max(2, min(int(d), 64)), max(2, min(int(d), SMOKE_MAX_D))}):
        _smoke(stage, size)


def values(d: int, kind: kinds.Kind, module, p: np.ndarray) -> dict:
    """The loop's arguments by the table's names (``kinds.Call.args``) for one round at dimension d: finite
    vectors and ``ROWS`` messages, and the state a stage of ``module`` owns as ``kind``'s ``State`` rows size it
    (one worker's row, or the whole array; the (1, 1) placeholder when the module does not set the flag)."""
    v = np.linspace(-1.0, 1.5, d)
    msg = np.vstack([v, -v, 2.0 * v, v])[:ROWS]
    out = {
        "v": v.copy(), "g": v.copy(), "out": np.zeros(d), "direction": v.copy(),
        # what finish is handed: the sum of the messages (the loop's sum, then the rule's finish)
        "agg": msg.sum(axis=0), "msg": msg, "srv": np.zeros(d),
        "p": p, "gen": np.random.default_rng(0), "sign_zero": 0, "tie": 0,
        "lr": 0.1, "k": 0, "M": ROWS, "S": ROWS, "H": 2, "n": ROWS, "B": 1,
    }
    for st in kind.states:
        array = np.zeros(st.dims(module, {"M": 1, "S": 1, "d": d}), np.float64 if st.dtype == "state" else np.int64)
        out[st.arg] = array[0] if st.row else array
    return out


def kept(kind: kinds.Kind) -> tuple[str, ...]:
    """The arguments kept from one round to the next: the kind's state, and the server's error-feedback vector."""
    return (*(st.arg for st in kind.states), "srv")


def makes(call: kinds.Call, module) -> bool:
    """Whether the loop makes ``call`` on a stage of ``module`` (its ``when`` flag)."""
    if not call.when:
        return True
    flag = call.when.lstrip("!")
    return bool(getattr(module, flag, False)) != call.when.startswith("!")


def _smoke(stage, d: int) -> None:
    from signsim.engine.stage_kernels import stage_function
    from signsim.errors import InputError
    from signsim.interface.interrupts import interruptible
    from signsim.stages.plugins import _fail

    mod = stage.module
    where = mod.__file__
    kind = kinds.BY_NAME[stage.kind]  # a slot's stage (the downlink's compressor, a link) with the slot's calls
    p = stage.param_array()
    state: dict = {}
    try:
        for k in range(3):
            for call in kind.calls:
                if not makes(call, mod):
                    continue
                given = {**values(d, kind, mod, p), **state, "k": k}
                args = [given[a] for a in call.args]
                fn = stage_function(mod, call.attr, False, checked=True)  # (one compile: the function is cached)
                result = interruptible(lambda fn=fn, args=args: fn(*args))
                _check(call, result, given, d, kind.finite, lambda what: _fail(where, what))
                if kinds.base(stage.kind) == "compressor" and call.result == "bits":
                    _same_bits(stage, result, given, lambda what: _fail(where, what))
                state.update({a: given[a] for a in call.args if a in kept(kind)})
        if kinds.base(stage.kind) == "compressor":
            ref = np.asarray(mod.reference(np.linspace(-1.0, 1.5, d), stage.params, 0, np.random.default_rng(0)))
            if ref.shape != (d,):
                raise _fail(where, f"reference returned shape {ref.shape}, expected ({d},)")
    except InputError:
        raise
    except IndexError:
        raise _fail(where, f"its {stage.kind} kernel reads or writes outside an array it was given (an index out "
                           f"of bounds at d = {d}, found with bounds checks); the engine would corrupt memory") \
            from None
    except Exception as e:  # noqa: BLE001 - Numba's typing errors and the kernel's own: one line
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise _fail(where, f"its {stage.kind} kernel does not compile or run: {type(e).__name__}: {first}") from None


def _same_bits(stage, bits, given: dict, fail) -> None:
    """A compressor's kernel counts the bits of the message it wrote as its declared count does (``message_bits``
    where declared, else ``bits`` of its non-zero entries): the two disagreeing is a plugin fault that ``check-stage``
    shows and a run would have recorded silently, the kernel's count in the history and the declared one in the
    budgets and the clock."""
    from signsim import accounting

    counted = accounting.message_bits(stage, given["v"], given["out"], int(given["sign_zero"]))
    if bits != counted:
        raise fail(f"its kernel counts {bits:g} bits for a message whose declared count is {counted:g} (d = "
                   f"{given['v'].size}; signsim check-stage {stage.spec} shows both)")


def _check(call: kinds.Call, result, given: dict, d: int, finite: bool, fail) -> int | None:
    """Raise ``fail(what)`` when ``result`` or the arrays ``call`` was handed break its row of the table; the rows
    a "rows" call leaves."""
    name, kept = call.attr, None
    if call.result == "bits":
        if not (isinstance(result, (int, float)) and math.isfinite(result) and result > 0):
            raise fail(f"{name} must return the message's bits, a finite number > 0 (got {result!r})")
    elif call.result == "vector":
        if np.shape(result) != (d,) or not np.all(np.isfinite(result)):
            raise fail(f"{name} must return a finite vector of length d (d = {d})")
    elif call.result == "rows":
        n = given["n"]
        if not (isinstance(result, int) and 1 <= result <= n):
            raise fail(f"{name} must return the number of rows it leaves, 1 to n (got {result!r} for n = {n})")
        kept = result
    elif call.result == "flag" and not isinstance(result, (bool, np.bool_)):
        raise fail(f"{name} must return True or False (got {result!r})")
    for arg in call.args if finite else ():
        value = given[arg]
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            rows = value[:kept] if arg == "msg" and kept is not None else value
            if not np.all(np.isfinite(rows)):
                raise fail(f"{name} wrote non-finite values into {arg} for finite inputs (d = {d})")
    return kept
