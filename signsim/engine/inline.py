"""The worker step inlined into the loop that calls it, and the worker's stage kernels into the step, by LLVM
rather than by Numba.

A loop calls its worker step once per participant and round. The step is compiled on its own (``compose._loops``:
one compile shared by the threaded and the serial loop, and done in this process while the split compile's helper
compiles the rest, ``signsim.engine.split_compile``), and Numba links its code into the loop, where LLVM may inline
it. It did not: the step holds the composition's stages and is larger than LLVM's inlining threshold, so each call
passed its arguments one by one (the four bundles' arrays, about 180 machine words) and cost about 40 ns. On
Rosenbrock (d = 10, M = 32) that was a quarter of an SSDM iteration (4 December 2026, 2-core machine: 0.08 us a
worker and round without noise, against 0.05 inlined). The stage kernels on a worker's path (``compose.stage_function``
names them ``...__worker``) are compiled on their own too, once for every composition that uses them; called rather
than inlined into the step, they took another 1 us of SSDM's 5.5 (momentum and the stochastic sign), and half of the
family's one loop's time, which calls them from its dispatch by code (9.3 us an iteration, 4.7 with both inlined).

Numba's own ``inline="always"`` cannot do it: it inlines Numba's IR, which the loop (compiled with Numba's runtime)
would then lower with reference counts, while the step's stage kernels (compiled without it) return views they did
not count, so the loop would free arrays it does not own. LLVM's inliner works on code already lowered, so the
step's calls keep their meaning. ``install`` therefore marks every definition of a function whose name holds one of
``NAMES`` ``alwaysinline`` in the code Numba links into a caller. Only code compiled after ``install`` is affected
(signsim's kernel cache is named by a hash of its sources, so no loop compiled without it is loaded), and the
results do not change: LLVM's inliner keeps each instruction's own fast-math flags, and the kernels on a worker's
path carry none (only the GLM's margin, ``problems/glm.py``, allows reassociation within itself, as it did as a call);
the replay and engine-against-reference tests, and runs compared bit for bit with the code before (the closing note
of issue 31), agree. With a Numba
whose internals differ, ``install`` does nothing and the loop calls the step as before.
"""

from __future__ import annotations

#: the kernels LLVM inlines into every caller: fragments of their (mangled) names, as ``compose._loops`` names the
#: worker step and ``compose.stage_function`` the stage kernels on a worker's path
NAMES = ("worker_step__", "__worker")

_installed = False


def install() -> bool:
    """Mark the kernels of ``NAMES`` ``alwaysinline`` wherever Numba links them into a caller; True when in effect.
    Idempotent."""
    global _installed
    if _installed:
        return True
    try:
        from numba.core.codegen import CPUCodeLibrary

        original = CPUCodeLibrary._get_module_for_linking
    except (ImportError, AttributeError):  # another Numba: the step stays a call
        return False

    def for_linking(self):
        module = original(self)
        for fn in module.functions:
            if not fn.is_declaration and any(n in fn.name for n in NAMES) and "cpython" not in fn.name:
                fn.add_function_attribute("alwaysinline")
        return module

    for_linking.__wrapped__ = original
    CPUCodeLibrary._get_module_for_linking = for_linking
    _installed = True
    return True
