"""``check-spb --grads FILE.npy`` and ``diversity --grads FILE.npy``: the diagnostics of the user's own
per-sample gradients (an n x d array saved with ``numpy.save``), read as a memory map block by block so that
the file never has to fit in memory (docs/api.md shows how to write one from a PyTorch model)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from signsim.errors import InputError

#: run options that still mean something for given gradients (the rest describe a simulated problem)
SPB_RUN_OPTIONS = {"workers", "batch_size", "sign_zero", "tie", "seed"}
#: sign_zero: sign(0) of the transformations that take a sign; seed: the streams of a sampled transformation; plugin:
#: compressors of your own as transformations
DIVERSITY_RUN_OPTIONS: set[str] = {"sign_zero", "seed", "plugin"}


def load(path: Path):
    """The n x d array in ``path``, memory-mapped (read-only)."""
    import numpy as np

    where = f"--grads {path}"
    if path.suffix.lower() != ".npy":
        raise InputError(f"{where}: expected a .npy file (numpy.save of an n x d array)")
    if not path.is_file():
        raise InputError(f"{where}: no such file")
    try:
        G = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise InputError(f"{where}: not a readable .npy file ({' '.join(str(e).split())})") from None
    from signsim.data.base import is_real

    if not is_real(G.dtype):
        raise InputError(f"{where}: expected real numbers, got dtype {G.dtype}")
    if G.ndim != 2 or G.shape[0] == 0 or G.shape[1] == 0:
        raise InputError(f"{where}: expected an n x d array of per-sample gradients, got shape {G.shape}")
    return G


def _reject(values: dict[str, Any], allowed: set[str], extra: dict[str, Any]) -> None:
    for name in sorted(values):
        if name not in allowed:
            raise InputError(f"--{name.replace('_', '-')} does not apply with --grads (the gradients are given)")
    for name, value in extra.items():
        if value is not None:
            raise InputError(f"--{name.replace('_', '-')} does not apply with --grads (the gradients are given)")


def check_spb(path: Path, values: dict[str, Any], spb: dict[str, Any]) -> dict[str, Any]:
    """``values``: run options from the file and flags; ``spb``: the check-spb options."""
    from signsim.diagnostics.samples import spb_document

    _reject(values, SPB_RUN_OPTIONS, {"at": spb.pop("at", None), "estimator": spb.pop("estimator", None)})
    o = {k: v for k, v in spb.items() if v is not None}
    doc = spb_document(load(path), workers=values.get("workers"), batch_size=values.get("batch_size", 1),
                       sign_zero=values.get("sign_zero", "random"), tie=values.get("tie", "random"),
                       seed=values.get("seed", 0),
                       where=f"--grads {path}", **o)
    doc["grads"] = str(path)
    return doc


def diversity(path: Path, values: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    from signsim.diagnostics.samples import diversity_document

    delta = options.pop("delta", None)
    specs = options.pop("transform", None)
    draws = options.pop("transform_draws", None)
    _reject(values, DIVERSITY_RUN_OPTIONS, options)
    if draws is not None and not specs:
        raise InputError(f"--transform-draws {draws}: has no effect without --transform")
    if values.get("plugin"):
        from signsim.stages import plugins

        plugins.load(values["plugin"])
    G = load(path)
    chosen = None
    if specs:
        from signsim.diagnostics.diversity_report import transforms_at

        chosen = transforms_at(specs, values.get("sign_zero", "random"), G.shape[1])  # before any work
    doc = diversity_document(G, 1.0 if delta is None else delta, where=f"--grads {path}")
    doc["grads"] = str(path)
    if specs:
        from signsim.diagnostics.diversity_report import transformed

        doc["transforms"] = transformed(lambda: blocks(G), specs, chosen, 1.0 if delta is None else delta,
                                        values.get("seed", 0), draws)
    return doc


def blocks(G, rows: int = 4096):
    """Row blocks of a (memory-mapped) n x d array."""
    import numpy as np

    for start in range(0, G.shape[0], rows):
        yield np.asarray(G[start:start + rows], dtype=np.float64)
