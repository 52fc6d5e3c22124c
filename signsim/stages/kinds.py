"""The kinds of stage, declared once (docs/theory.md §2, §8): for each, where it sits in a worker's or the server's
step, the functions the loop calls on it (with their arguments, and whether they run on a worker's path), the
flags the loop reads, the state it may own, and what a module of that kind must declare (the plugin contract,
``signsim check-stage``).

Everything that names the kinds reads this table: the registry (folders, options), the plugin loader
(``plugins.REQUIRED``), the loop's calls on its stages (``signsim.engine.plan``, made from it at import), the
driver's state arrays, the
plugins' smoke test (``signsim.engine.smoke``: each call with its arguments and declared result), the docs' stage
tables (``signsim.render.stage_tables``). Pure Python: importing it costs nothing.

A round starts with the estimator's ``fresh``: True for a round in which every worker sends its exact gradient
uncompressed (MARINA's c_k = 1). A worker's step, in order: the local steps (with an estimator's CORRECTS, each
gradient + hbar[0] - h_m: SCAFFOLD's c - c_m; with its TWO_POINT, the gradient minus the worker's gradient at the
previous iterate hbar[2], from the same sample: MARINA's difference) ->
momentum -> estimator (before: the shift) -> error feedback (sends: with its LAZY flag, whether the worker sends
at all this round, else nothing and 0 bits: CLAG's trigger) -> error feedback (before) -> compressor ->
error feedback (after) -> estimator (after) -> attack (row); the server's: attack (rows, omniscient) -> the chain of
pre-aggregations (each may return fewer rows: bucketing) -> aggregation
(finish of the sum, or robust) -> error feedback (direction) -> estimator (direction) -> server optimizer (the
update x moves by) -> the downlink, when compressed: its error feedback (before) -> its compressor -> its error
feedback (after, direction): what the workers receive and x moves by (docs/theory.md §8.8). The downlink's two
kinds are slots (``Kind.of``) for the compressor's and the error feedback's modules.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Call:
    """One function the loop calls on a stage: the loop's name for it, the module's function, its arguments (the loop
    passes the plan's stages and the stage's code first: ``loop_name(stages, code, *args)``), what it returns, and
    whether it runs on a worker's path (compiled without Numba's runtime: nothing there may allocate)."""

    loop_name: str
    attr: str
    args: tuple[str, ...]
    #: what it returns (``RESULTS``): "vector" (a vector of length d), "bits" (the message's bits, a finite number
    #: > 0), "rows" (how many of its n rows it leaves, 1 to n), "flag" (a bool), or "" (nothing)
    result: str
    worker: bool
    #: a module may leave it out: then ``signsim.stages.defaults`` gives the function (a plugin written before it)
    optional: bool = False
    #: the module's flag under which the loop makes the call ("SUMMED"; "!SUMMED": when it is False); "" always
    when: str = ""

    @property
    def returns(self) -> bool:
        return bool(self.result)


#: the values ``Call.result`` takes
RESULTS = ("", "vector", "bits", "rows", "flag")


@dataclass(frozen=True)
class State:
    """An array a stage of this kind may own: allocated by the engine when the module sets ``flag`` to True (else a
    placeholder of shape (1, 1)), in the loop's bundle under ``slot``, of shape ``shape`` (in M workers, S
    participants per round, d coordinates), of the state's dtype ("state") or int64, filled with zeros. A flag a
    module does not set defaults to its ``STATE`` (an estimator with shifts also keeps the server's rows)."""

    flag: str
    slot: str
    shape: tuple[str, ...]
    dtype: str = "state"
    #: the module's attribute that multiplies the last dimension (CLAG keeps g_m and its last gradient: 2); 1 when
    #: absent
    width: str = ""
    #: the argument (``Call.args``) the loop hands it under, and whether as one row (a worker's, a slot's) or whole
    arg: str = ""
    row: bool = True
    #: allocated whatever the module's flag (the downlink's rows, allocated with the downlink)
    always: bool = False

    def dims(self, module, sizes: dict[str, int]) -> tuple[int, ...]:
        """Its shape for a stage of ``module`` (``sizes``: M, S, d): the declared one, its last dimension times the
        module's ``width`` attribute, when the module sets the flag (or ``always``), else the placeholder (1, 1)."""
        if not (self.always or getattr(module, self.flag, getattr(module, "STATE", False))):
            return (1, 1)
        shape = tuple(sizes[n] if n in sizes else int(n) for n in self.shape)
        if self.width:
            shape = (*shape[:-1], shape[-1] * int(getattr(module, self.width, 1)))
        return shape


@dataclass(frozen=True)
class Kind:
    name: str
    folder: str  # signsim/stages/<folder>/, one module per stage
    option: str  # the option that names a stage of this kind
    title: str  # its table's title in docs/reference.md and ``signsim list``
    place: str  # "worker" or "server": whose step calls it
    calls: tuple[Call, ...]
    #: loop flag -> the module's bool attribute it comes from (read at run time from ``icfg``); an attribute not in
    #: ``declares`` is optional for a module, False when absent
    flags: dict[str, str] = field(default_factory=dict)
    #: setup flag -> the module's bool attribute it comes from, read when the run's data is set up (never by the
    #: loop); optional for a module, False when absent (``setup_flag``)
    setup_flags: dict[str, str] = field(default_factory=dict)
    states: tuple[State, ...] = ()
    #: what a module of this kind declares besides NAME, PARAMS, SUMMARY and the calls' functions: attribute ->
    #: "function" or a type
    declares: dict[str, object] = field(default_factory=dict)
    #: a second slot for the stages of another kind (the downlink's compressor and error feedback): the same modules
    #: (folder, registry, plugins, docs table), under the slot's own option, code, parameters, state and loop names
    of: str | None = None
    #: whether its calls keep finite arrays finite (an attack may send infinities: ``inf``)
    finite: bool = True

    @property
    def required(self) -> dict[str, object]:
        """The plugin contract of this kind: every attribute a module must declare, with its type."""
        out: dict[str, object] = {"NAME": str, "PARAMS": tuple, "SUMMARY": str}
        out.update(self.declares)
        for c in self.calls:
            if not c.optional:
                out[c.attr] = "function"
        return out


TABLE: tuple[Kind, ...] = (
    Kind("momentum", "momentum", "--momentum-kind", "Momentum (`--momentum`, picked by the method)", "worker",
         (Call("momentum_step", "kernel", ("k", "g", "m", "p"), "vector", True),),
         states=(State("STATE", "mom", ("M", "d"), arg="m"),),
         declares={"STATE": bool, "reference": "function"}),
    Kind("compressor", "compressors", "--compressor", "Compressors (`--compressor`)", "worker",
         (Call("compress", "kernel", ("v", "out", "p", "sign_zero", "gen", "iwork"), "bits", True),),
         states=(State("SCRATCH", "iwork", ("S", "d"), "int64", arg="iwork"),),
         declares={"KIND": str, "SCRATCH": bool, "BROADCAST": str, "constant": "function", "may_be_zero": "function",
                   "bits": "function", "reference": "function"}),
    Kind("error_feedback", "error_feedback", "--error-feedback", "Error feedback (`--error-feedback`)", "worker",
         (Call("ef_sends", "sends", ("k", "v", "e", "p"), "flag", True, optional=True, when="LAZY"),
          Call("ef_before", "before", ("lr", "v", "g", "e"), "vector", True),
          Call("ef_after", "after", ("e", "out"), "", True),
          Call("ef_direction", "direction", ("agg", "srv"), "vector", False)),
         flags={"STEP_SCALED": "STEP_SCALED", "INCREMENTS": "INCREMENTS", "LAZY": "LAZY"},
         states=(State("STATE", "err", ("M", "d"), width="STATE_WIDTH", arg="e"),),
         declares={"STATE": bool, "STEP_SCALED": bool, "TRACK_ERROR": bool, "reference_before": "function",
                   "reference_after": "function", "reference_direction": "function"}),
    Kind("aggregation", "aggregation", "--aggregate", "Aggregation (`--aggregate`)", "server",
         (Call("finish_aggregate", "finish", ("agg", "M", "p", "tie", "gen"), "", False, when="SUMMED"),
          Call("robust_aggregate", "robust", ("msg", "agg", "p"), "", False, when="!SUMMED")),
         flags={"SUMMED": "SUMMED"},
         declares={"SUMMED": bool, "sparse": "function", "down_bits": "function", "reference": "function"}),
    Kind("attack", "attacks", "--attack", "Attacks (`--attack`, with `--byzantine`)", "worker",
         (Call("attack_row", "row", ("out", "p", "gen"), "", True),
          Call("attack_rows", "rows", ("msg", "B", "p"), "", False, when="OMNISCIENT")),
         flags={"OMNISCIENT": "OMNISCIENT", "SEARCH": "SEARCH"},
         # LABELS: the Byzantine workers compute honest gradients on flipped labels (label-flip, docs/theory.md §8.5);
         # the run's data setup gives them the flipped copy (``finite_sum.with_flipped_labels``)
         setup_flags={"LABELS": "LABELS"},
         declares={"OMNISCIENT": bool, "reference": "function", "reference_rows": "function"}, finite=False),
    Kind("server_optimizer", "server_optimizers", "--server-opt", "Server optimizers (`--server-opt`)", "server",
         (Call("server_update", "update", ("direction", "opt", "p", "k"), "vector", False),),
         states=(State("STATE", "opt", ("3", "d"), arg="opt", row=False),),
         declares={"STATE": bool, "reference": "function"}),
    Kind("estimator", "estimators", "--grad-estimator", "Gradient estimators (`--grad-estimator`)", "worker",
         (Call("est_fresh", "fresh", ("k", "hbar", "p", "gen"), "flag", False, optional=True),
          Call("est_before", "before", ("v", "g", "h", "p"), "vector", True),
          Call("est_after", "after", ("h", "hbar", "out", "p", "H"), "", True),
          Call("est_direction", "direction", ("agg", "hbar", "p", "S", "M", "H"), "vector", False)),
         flags={"CORRECTS": "CORRECTS", "TWO_POINT": "TWO_POINT"},
         states=(State("STATE", "shift", ("M", "d"), arg="h"),
                 State("SERVER_STATE", "hbar", ("3", "d"), arg="hbar", row=False)),
         declares={"STATE": bool, "extra_bits": "function", "reference_correct": "function",
                   "reference_before": "function", "reference_after": "function",
                   "reference_direction": "function"}),

    Kind("pre_aggregation", "pre_aggregation", "--pre-aggregate",
         "Pre-aggregation (`--pre-aggregate`, chained before `--aggregate`)", "server",
         (Call("pre_aggregate", "pre", ("msg", "n", "p", "gen"), "rows", False),),
         declares={"rows": "function", "reference": "function"}),
    # the second and third links of a --pre-aggregate chain: slots of the pre-aggregation's modules
    Kind("pre_aggregation_2", "pre_aggregation", "--pre-aggregate", "", "server",
         (Call("pre_aggregate_2", "pre", ("msg", "n", "p", "gen"), "rows", False),), of="pre_aggregation"),
    Kind("pre_aggregation_3", "pre_aggregation", "--pre-aggregate", "", "server",
         (Call("pre_aggregate_3", "pre", ("msg", "n", "p", "gen"), "rows", False),), of="pre_aggregation"),

    Kind("down_compressor", "compressors", "--down-compressor", "Downlink compressors (`--down-compressor`)", "server",
         (Call("compress_down", "kernel", ("v", "out", "p", "sign_zero", "gen", "iwork"), "bits", False),),
         states=(State("SCRATCH", "diwork", ("1", "d"), "int64", arg="iwork"),), of="compressor"),
    Kind("down_error_feedback", "error_feedback", "--down-feedback",
         "Downlink error feedback (`--down-feedback`)", "server",
         (Call("down_ef_before", "before", ("lr", "v", "g", "e"), "vector", False),
          Call("down_ef_after", "after", ("e", "out"), "", False),
          Call("down_ef_direction", "direction", ("agg", "srv"), "vector", False)),
         # (its memory is the row D_MEMORY of the downlink's five, d long whatever the module's STATE_WIDTH)
         states=(State("STATE", "down", ("5", "d"), arg="e", always=True),), of="error_feedback"),
)

BY_NAME: dict[str, Kind] = {k.name: k for k in TABLE}
#: every kind, slots included (each has its code and flags in the loop's settings)
NAMES: tuple[str, ...] = tuple(k.name for k in TABLE)
#: the kinds with modules of their own (a folder, a registry entry, a plugin's STAGE, a docs table)
PRIMARY: tuple[Kind, ...] = tuple(k for k in TABLE if k.of is None)


def base(kind: str) -> str:
    """The kind whose modules ``kind`` takes: itself, or the kind a slot is of."""
    return BY_NAME[kind].of or kind

#: every call of every kind, by the loop's name
CALLS: dict[str, tuple[Kind, Call]] = {c.loop_name: (k, c) for k in TABLE for c in k.calls}
#: every flag the loop reads, by the loop's name
FLAGS: dict[str, tuple[Kind, str]] = {flag: (k, attr) for k in TABLE for flag, attr in k.flags.items()}
#: every flag read when a run's data is set up, by its name
SETUP_FLAGS: dict[str, tuple[Kind, str]] = {flag: (k, attr) for k in TABLE for flag, attr in k.setup_flags.items()}


def setup_flag(flag: str, module) -> bool:
    """The setup flag ``flag`` of a stage's module (``Kind.setup_flags``): its attribute, False when absent."""
    return bool(getattr(module, SETUP_FLAGS[flag][1], False))


def code_setting(kind: str) -> str:
    """The name, in the loop's integer settings (``loop.ICFG``), of the code of the run's stage of ``kind``."""
    return f"code_{kind}"


def flag_setting(flag: str) -> str:
    """The name, in ``loop.ICFG``, of a stage flag (``SUMMED`` -> ``flag_summed``)."""
    return f"flag_{flag.lower()}"


#: the kinds of the links of a ``--pre-aggregate`` chain, in order (docs/theory.md §8.9): the pre-aggregation and its
#: slots in the table of kinds
PRE_KINDS = tuple(k.name for k in TABLE if base(k.name) == "pre_aggregation")
