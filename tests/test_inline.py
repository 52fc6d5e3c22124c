"""The worker step and the worker's stage kernels are inlined into their callers by LLVM (signsim.engine.inline).

The oracle is the caller's optimized LLVM IR: a kernel too large for LLVM's inlining threshold stays a call there,
unless its name carries one of ``inline.NAMES``. Two copies of the same large kernel, one named like a worker step and
one not, must end with no call in the first caller and a call in the second (so the check can fail). That results do
not change is the replay and engine-against-reference tests' job (every run goes through these loops).
"""

from __future__ import annotations

import types

import numpy as np
from numba import njit

from signsim.engine import inline

#: a kernel large enough that LLVM does not inline it by itself (12 unrolled passes of transcendental functions)
BODY = """
def body(x, out):
    s = 0.0
    for i in range(x.shape[0]):
        s += np.sqrt(x[i]) * np.sin(x[i])
        out[i] = s
""" + "".join(f"""
    for i in range(x.shape[0]):
        if out[i] > {j}.5:
            out[i] = np.tanh(out[i]) * np.sinh(s + {j}) - np.arcsinh(out[i] * s)
        else:
            out[i] = np.cosh(out[i] / {j + 1}) + np.expm1(s)
""" for j in range(12))


def _kernel(name: str):
    ns = {"np": np}
    exec(BODY, ns)  # noqa: S102 - the fixed source above
    fn = ns["body"]
    copy = types.FunctionType(fn.__code__.replace(co_name=name, co_qualname=name), ns, name)
    copy.__qualname__ = name
    return njit(_nrt=False)(copy)  # like the worker step: without Numba's runtime, called from a loop with it


def _calls_left(name: str) -> int:
    callee = _kernel(name)

    @njit
    def caller(x, out):
        for _ in range(3):
            callee(x, out)

    x, out = np.linspace(0.0, 1.0, 5), np.zeros(5)
    caller(x, out)
    expected = np.zeros(5)
    callee.py_func(x, expected)  # (the plain Python function, three times as the caller does)
    callee.py_func(x, expected)
    callee.py_func(x, expected)
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    (ir,) = caller.inspect_llvm().values()
    return sum(1 for line in ir.splitlines() if line.lstrip().startswith(("call", "%")) and "call" in line
               and name in line)


def test_a_kernel_named_as_a_worker_step_is_inlined_and_another_stays_a_call():
    assert inline.install() and inline.install()  # idempotent
    assert _calls_left("worker_step__probe") == 0
    assert _calls_left("kernel__probe__worker") == 0
    assert _calls_left("plain_step__probe") > 0
