"""The contract test of a stage of any kind but a compressor (``signsim check-stage SPEC --kind KIND``): the stage
runs in a short run of the compiled loop and in the NumPy replay (``signsim.engine.reference``: each stage's step
there is its module's own NumPy ``reference``, which shares no code with its kernels), from the same seed; the two
must give the same iterates to rounding and the same bits, up and down, every round (docs/theory.md §2, §8).

The run: a noisy quadratic (d = 8, M = 9 workers, ``ITERS`` rounds, plain SGD's identity messages and mean), with
the stage in its kind's slot and what that kind needs to act (``CONTEXT``: Byzantine workers for an attack, a
momentum for a momentum rule, exact gradients for MARINA). A compressor's contract is ``signsim.diagnostics.
stage_check``'s (bias, variance, bits on standard vectors).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from signsim.errors import InputError

#: rounds of the short run
ITERS = 6
#: the run's options, whatever the kind
BASE = {"problem": "quadratic", "dim": 8, "workers": 9, "iters": ITERS, "eval_every": 1, "noise": "gaussian:0.1",
        "method": "sgd", "lr": 0.05}
#: what a stage of each kind needs beside it to act
CONTEXT = {"momentum": {"momentum": 0.5}, "attack": {"byzantine": 2}}
#: the kinds a method chooses (no option of their own): the stage replaces the method's in the run's settings
SET_BY_METHOD = ("momentum",)
#: relative tolerance of the iterates (the two sum in different orders in places: rounding only)
RTOL = 1e-10


@dataclass
class Replay:
    kind: str
    spec: str
    rounds: int
    max_rel_diff: float
    bits_up: tuple[int, int]
    bits_down: tuple[int, int]
    moved: bool

    @property
    def failures(self) -> list[str]:
        out = []
        if not self.max_rel_diff <= RTOL:  # (NaN fails)
            out.append(f"iterates differ from the NumPy reference (relative {self.max_rel_diff:.3g} > {RTOL:g})")
        if self.bits_up[0] != self.bits_up[1]:
            out.append(f"bits up differ: kernel {self.bits_up[0]}, reference {self.bits_up[1]}")
        if self.bits_down[0] != self.bits_down[1]:
            out.append(f"bits down differ: kernel {self.bits_down[0]}, reference {self.bits_down[1]}")
        return out


def options(kind: str, spec: str, seed: int) -> dict:
    """The short run's options with ``spec`` in ``kind``'s slot (its option, ``signsim.stages.base.OPTION``)."""
    from signsim.stages.base import OPTION

    out = {**BASE, **CONTEXT.get(kind, {}), "seed": seed}
    if kind not in SET_BY_METHOD:
        out[OPTION[kind][2:].replace("-", "_")] = spec
    name = spec.partition(":")[0]
    if kind == "aggregation" and name == "majority":
        out["method"] = "signsgd"  # a vote of signs
    if kind == "estimator" and name == "marina":
        out["noise"] = "none"  # MARINA's rounds of exact gradients
    return out


def replay(kind: str, spec: str, seed: int = 0) -> Replay:
    """The short run through the compiled loop and through the NumPy replay (InputError when the stage cannot run
    in it, naming why)."""
    from signsim.engine import loop
    from signsim.engine.build import build
    from signsim.engine.driver import simulate
    from signsim.engine.reference import ReferenceRun
    from signsim.interface import config

    cfg = config.resolve(options(kind, spec, seed))
    if kind in SET_BY_METHOD:  # the method's stage of this kind replaced by the one checked
        from dataclasses import replace

        from signsim.engine.build import prepare
        from signsim.engine.driver import Engine
        from signsim.stages import registry

        _, problem, model, params, settings = prepare(cfg)
        settings = replace(settings, **{"momentum_kind": registry.parse(kind, spec, option="check-stage")})
        engine = Engine(problem, model, params, settings, cfg.workers, cfg.iters, cfg.eval_every, cfg.seed,
                        dtype=cfg.dtype)
    else:
        b = build(cfg)
        engine, problem, model, params, settings = b.engine, b.problem, b.model, b.params, b.settings
    start = engine.x.copy()
    simulate(engine)
    ref = ReferenceRun(problem, model, params, settings, cfg.workers, cfg.seed)
    x = ref.x
    for _ in range(ITERS):
        x = ref.step()
    scale = max(float(np.max(np.abs(x))), 1e-300)
    diff = float(np.max(np.abs(engine.x - x))) / scale
    return Replay(kind, spec, ITERS, diff, (int(engine.tally[loop.T_UP]), int(ref.bits_up)),
                  (int(engine.tally[loop.T_DOWN]), int(ref.bits_down)), bool(np.any(engine.x != start)))


def table(r: Replay) -> list[str]:
    """The report's lines."""
    verdict = "ok" if not r.failures else "FAILED: " + "; ".join(r.failures)
    return [f"{r.kind} {r.spec}: {r.rounds} rounds of a noisy quadratic (d = 8, M = 9), compiled loop against the "
            "NumPy reference",
            f"  iterates: largest difference {r.max_rel_diff:.3g} of max |x| (tolerance {RTOL:g})",
            f"  bits up: kernel {r.bits_up[0]}, reference {r.bits_up[1]}",
            f"  bits down: kernel {r.bits_down[0]}, reference {r.bits_down[1]}",
            f"  {verdict}"]


def kind_of(name: str, kind: str | None) -> str:
    """The kind of the stage named ``name``: ``kind`` when given (InputError when it has no such stage); else the
    one kind that has it (a compressor first, as check-stage always took), or InputError naming the choices (the
    kinds, and the closest name of any kind to one no kind has)."""
    from signsim.stages import registry
    from signsim.stages.base import KINDS

    if kind is not None:
        if kind not in KINDS:
            raise InputError(f"--kind {kind}: choose from {', '.join(KINDS)}")
        return kind
    found = [k for k in KINDS if name in registry.stages(k)]
    if not found:  # the closest name of any kind, and its kind
        from signsim.suggest import closest

        names: dict[str, str] = {}
        for k in ("compressor", *KINDS):  # (a name several kinds share: a compressor's first)
            names.update({n: k for n in registry.stages(k) if n not in names})
        best = closest(name, names)
        near = f" (did you mean '{best}', a stage of the kind {names[best]}?)" if best else ""
        raise InputError(f"check-stage {name}: no stage of any kind has this name{near}; with --kind KIND the error "
                         f"names that kind's stages (kinds: {', '.join(KINDS)})")
    if "compressor" in found:
        return "compressor"
    if len(found) > 1:
        raise InputError(f"check-stage {name}: a stage of {len(found)} kinds ({', '.join(found)}); give --kind")
    return found[0]
