"""Where a diagnostic is evaluated: ``--at init | optimum | FILE.npy | run:K``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from signsim.errors import InputError

#: the largest K of ``--at run:K`` (the same limit as --iters)
MAX_RUN_K = 10**15


def resolve_point(at: str, problem, cfg) -> tuple[np.ndarray, str]:
    """The point x and a description of it. ``run:K`` runs the configured run for K iterations."""
    at = at.strip()
    if at == "init":
        return problem.x0.astype(np.float64).copy(), "init"
    if at == "optimum":
        if problem.x_star is None:
            raise InputError(f"--at optimum: the optimum of {problem.name} is not known")
        return problem.x_star.astype(np.float64).copy(), "optimum"
    if at.startswith("run:"):
        digits = at[4:]  # plain ASCII digits only (no sign, space, '_' or other scripts' digits)
        K = int(digits) if len(digits) <= 20 and digits.isascii() and digits.isdigit() else -1
        if not 0 <= K <= MAX_RUN_K:
            raise InputError(f"--at {at}: expected run:K with an integer K from 0 to {MAX_RUN_K}")
        from dataclasses import replace

        from signsim.engine.build import build
        from signsim.engine.driver import simulate
        from signsim.resources import check_run

        run_cfg = replace(cfg, iters=K, eval_every=max(K, 1))
        check_run(run_cfg, problem.dim)
        from signsim.problems.finite_sum import oracle_rows
        from signsim.resources import check_work, note, run_work

        work = run_work(run_cfg, problem.dim, problem.finite_sum is not None, oracle_rows(problem, run_cfg.batch_size))
        note(check_work(work, f"--at {at}", "choose a smaller K"))
        out = simulate(build(run_cfg, problem).engine)
        if out.status == "interrupted":
            raise KeyboardInterrupt  # Ctrl-C or SIGTERM during the run: exit 130 / 143, not bad input
        if out.status != "ok":
            raise InputError(f"--at {at}: the run ended {out.status} after {out.iters_done} iterations")
        return out.x, f"after {K} iterations of {cfg.method}"
    path = Path(at)
    if path.suffix != ".npy":
        raise InputError(f"--at {at}: expected init, optimum, run:K or a .npy file")
    from signsim.paths import input_file

    input_file(path, f"--at {at}", per_byte=0)  # (load_npy checks the memory of the array it holds)
    from signsim.data.files import load_npy

    x = load_npy(path, f"--at {at}")
    from signsim.data.base import is_real

    if np.iscomplexobj(x):
        raise InputError(f"--at {at}: holds complex numbers; expected a real vector")
    if not is_real(x.dtype) or x.dtype == np.bool_:  # the cause first: strings, booleans, dates are no point
        raise InputError(f"--at {at}: holds {_kind_of(x.dtype)}, not numbers; expected a vector of {problem.dim} "
                         f"real numbers ({problem.name}'s dimension)")
    if x.ndim != 1 or x.size != problem.dim:
        shape = "a single number" if x.ndim == 0 else (f"a vector of length {x.size}" if x.ndim == 1 else
                                                       f"an array of shape {x.shape}")
        raise InputError(f"--at {at}: holds {shape}; expected a vector of length {problem.dim} ({problem.name}'s "
                         "dimension)")
    bad = ~np.isfinite(x)
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(f"--at {at}: entry {i} is {float(x[i])!r} ({int(bad.sum())} of {x.size} entries are not "
                         "finite); a point must be finite")
    return x.astype(np.float64), str(path)


def _kind_of(dtype: np.dtype) -> str:
    """What an array of ``dtype`` holds, in words."""
    names = {"b": "booleans", "U": "strings", "S": "bytes", "M": "dates", "m": "time spans", "V": "records",
             "O": "Python objects"}
    return names.get(dtype.kind, f"values of type {dtype}")
