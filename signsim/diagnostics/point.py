"""Where a diagnostic is evaluated: ``--at init | optimum | FILE.npy | run:K``."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from signsim.errors import InputError


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
        try:
            K = int(at[4:])
        except ValueError:
            K = -1
        if K < 0:
            raise InputError(f"--at {at}: expected run:K with an integer K >= 0")
        from dataclasses import replace

        from signsim.build import build
        from signsim.engine.driver import simulate

        run_cfg = replace(cfg, iters=K, eval_every=max(K, 1))
        out = simulate(build(run_cfg, problem).engine)
        if out.status != "ok":
            raise InputError(f"--at {at}: the run ended {out.status} after {out.iters_done} iterations")
        return out.x, f"after {K} iterations of {cfg.method}"
    path = Path(at)
    if path.suffix != ".npy":
        raise InputError(f"--at {at}: expected init, optimum, run:K or a .npy file")
    if not path.is_file():
        raise InputError(f"--at {at}: no such file")
    try:
        x = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise InputError(f"--at {at}: not a readable .npy file ({' '.join(str(e).split())})") from None
    if not np.issubdtype(x.dtype, np.number) or x.ndim != 1 or x.size != problem.dim:
        raise InputError(f"--at {at}: expected a numeric vector of length {problem.dim}, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise InputError(f"--at {at}: contains non-finite values")
    return x.astype(np.float64), str(path)
