"""``signsim check-stage SPEC [--kind KIND] [--plugin FILE]``: a stage's contract test: a compressor's on standard
vectors (``signsim.diagnostics.stage_check``), a stage of any other kind in a short run of the compiled loop against
the NumPy replay (``signsim.diagnostics.stage_replay``)."""

from __future__ import annotations

from signsim.errors import InputError


def _integer(option: str, value: int | str) -> int:
    """An integer option's value: an int, or its plain ASCII text (``signsim.numbers.to_int``: not ``1_0``, not
    a no-break space)."""
    from signsim.numbers import to_int

    if isinstance(value, int) and not isinstance(value, bool):
        return value
    try:
        return to_int(value) if isinstance(value, str) else int(value.__index__())
    except (ValueError, AttributeError, TypeError):
        raise InputError(f"{option} {value!r}: not a valid integer") from None


def check_stage(spec: str, plugin: str | None = None, samples: int | str = 2000,
                seed: int | str = 0, kind: str | None = None) -> tuple[list[str], bool]:
    """(the table's lines, whether every declared property holds); ``kind``: the stage's kind, needed only when its
    name is a stage of several kinds (a compressor's name is taken as the compressor)."""
    from signsim.diagnostics import stage_check as check
    from signsim.engine.smoke import smoke_test
    from signsim.stages import plugins, registry

    samples, seed = _integer("--samples", samples), _integer("--seed", seed)
    if samples < 2 or samples > 10**7:
        raise InputError(f"--samples {samples}: must lie between 2 and 10000000")
    if seed < 0:
        raise InputError(f"--seed {seed}: must be >= 0")
    from signsim.interface.config import check_plugin_paths

    check_plugin_paths(plugin)
    plugins.load(plugins.absolute(plugin) if plugin is not None else None)
    from signsim.diagnostics import stage_replay
    from signsim.stages.registry import stage_spec

    kind = stage_replay.kind_of(str(spec).partition(":")[0], kind)
    if kind != "compressor":
        stage_spec(kind, spec, "check-stage")
        registry.parse(kind, spec, option="check-stage")  # its parameters, in one line
        r = stage_replay.replay(kind, spec, seed)
        return stage_replay.table(r), not r.failures
    stage_spec("compressor", spec, "check-stage")
    stage = registry.parse("compressor", spec, option="check-stage")
    d = check.DIMS[-1]  # a plugin's kernels compile and behave, or one error line naming it
    smoke_test(registry.parse("compressor", spec, d, option="check-stage"), d)
    try:
        rows = check.check(stage, samples, seed)
    except IndexError:  # a plugin's kernel, compiled with bounds checks, indexed outside an array off the smoke
        where = getattr(stage.module, "__file__", stage.spec)  # test's path (in some draws only)
        raise InputError(f"plugin {where}: its compressor kernel indexed outside an array (index out of bounds) "
                         "in one of check-stage's draws; unchecked, a run would corrupt memory") from None
    return check.table(stage, rows), all(not r.failures for r in rows)
