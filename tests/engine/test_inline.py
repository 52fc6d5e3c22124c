"""The worker step and the worker's stage kernels are inlined into their callers by LLVM (``forceinline=True``,
``signsim.engine.compose``).

The oracle is the caller's optimized LLVM IR: a kernel too large for LLVM's inlining threshold stays a call there
unless it is compiled with ``forceinline``. The same large kernel compiled with and without it must end with no call
in the first caller and a call in the second (so the check can fail); the engine's own worker-path kernels must carry
the option. That results do not change is the replay and engine-against-reference tests' job (every run goes through
these loops).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from signsim.engine import stage_kernels
from signsim.stages import registry

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


def _calls_left(force: bool) -> int:
    ns = {"np": np}
    exec(BODY, ns)  # noqa: S102 - the fixed source above
    callee = njit(_nrt=False, forceinline=force)(ns["body"])  # like the worker step: no runtime, called from a loop

    @njit
    def caller(x, out):
        for _ in range(3):
            callee(x, out)

    x, out = np.linspace(0.0, 1.0, 5), np.zeros(5)
    caller(x, out)
    expected = np.zeros(5)
    for _ in range(3):  # the plain Python function, three times as the caller does
        callee.py_func(x, expected)
    np.testing.assert_allclose(out, expected, rtol=1e-12)
    (ir,) = caller.inspect_llvm().values()
    return sum(1 for line in ir.splitlines() if "call" in line and "body" in line and not line.lstrip().startswith(
        ("declare", ";")))


def test_forceinline_leaves_no_call_and_without_it_the_call_stays():
    assert _calls_left(True) == 0
    assert _calls_left(False) > 0


def test_the_engine_compiles_worker_path_kernels_with_forceinline_and_server_kernels_without():
    sign = registry.builtin("compressor")["sign"]
    worker = stage_kernels.stage_function(sign, "kernel", True)
    server = stage_kernels.stage_function(sign, "kernel", False)
    assert worker.targetoptions.get("forceinline") is True
    assert not server.targetoptions.get("forceinline")
