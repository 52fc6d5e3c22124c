"""Estimates of what a run needs (memory and work), checked before anything large is allocated against what this
process may still use (``signsim.memory``): over the limit is an InputError naming the estimate and the option to
reduce."""

from __future__ import annotations

from signsim.errors import InputError
from signsim.memory import require  # (callers take it from here too)

#: Python and Numba objects per worker stream made (its random generator and its entry in the chunk's list),
#: bytes; a stream is made when its worker first takes part (``signsim.seeding.WorkerStreams``)
PER_STREAM = 4096


def itemsize(dtype: str = "float64") -> int:
    """Bytes of one value of ``--dtype``."""
    return {"float64": 8, "float32": 4}[str(dtype)]


def data_bytes(values: int, dtype: str = "float64") -> int:
    """Peak memory while a data set of ``values`` numbers is loaded and packed: the loaded and the prepared
    float64 copies, and the packed matrix in ``dtype``, filled from the prepared copy (so with float32 a float64
    and a float32 copy exist together while it converts)."""
    return (8 + 8 + itemsize(dtype)) * values


def run_bytes(workers: int, dim: int, momentum: bool, error_feedback: bool, history_rows: int,
              data_values: int = 0, index_scratch: bool = False, dtype: str = "float64", clients: int | None = None,
              local_steps: int = 1, iters: int | None = None, slot_vectors: int = 0) -> int:
    """The memory a run allocates: per worker its momentum and error-feedback vectors (in ``dtype``), only when a
    stage keeps them; a generator per worker that takes part (every worker, or at most S ``iters`` of them); per
    participant of a round (``clients`` = S, default every worker) its gradient and message (in
    ``dtype``), the sparsifiers' int64 index scratch, and with ``local_steps`` H > 1 its local iterate and
    pseudo-gradient (docs/theory.md §12), and ``slot_vectors`` more (MARINA's gradient at the previous iterate); the
    server's vectors (x, EF21's g and the aggregate in ``dtype``; the full
    gradient, x*, x0 and the problem's vectors in float64); the recorded float64 history; the data while it is
    packed (``data_bytes``)."""
    v = itemsize(dtype)
    S = workers if clients is None else min(clients, workers)
    per_worker = v * dim * (int(momentum) + int(error_feedback)) + 8 * int(momentum)
    per_slot = v * dim * (2 + max(2 * int(local_steps > 1), slot_vectors)) + 8 * dim * int(index_scratch)
    streams = workers if S == workers or iters is None else min(workers, S * iters)
    return (workers * per_worker + streams * PER_STREAM + S * per_slot + (3 * v + 5 * 8) * dim + history_rows * 16 * 8
            + data_bytes(data_values, dtype))


def clock_bytes(cfg, workers: int) -> int:
    """What the simulated clock holds per worker (docs/theory.md §14): its five float64 rows (compute time, links,
    idle time, rounds) and the two temporaries a law's draw makes; and the catch-up rule's model version per worker
    (§12, int64) where clients are sampled."""
    from signsim.system.model import given

    sampled = getattr(cfg, "catch_up", None) not in (None, "none")
    return workers * ((5 + 2) * 8 * int(given(cfg)) + 8 * int(sampled))


def check_run(cfg, dim: int, data_values: int = 0) -> None:
    """InputError when the run described by ``cfg`` (with dimension ``dim``) cannot fit in memory. With
    ``--votes binomial`` no worker holds any state (docs/theory.md §11)."""
    from signsim import methods
    from signsim.stages import plan

    chosen = plan.of_config(cfg, methods.get(cfg.method))
    # the state each stage declares (its module): a momentum buffer, an error memory, integer scratch
    momentum = chosen.momentum.module.STATE
    ef_module = chosen.error_feedback.module
    ef = int(ef_module.STATE) * getattr(ef_module, "STATE_WIDTH", 1)  # vectors per worker (CLAG's g_m and y_m: 2)
    # an estimator's shift h_m (DIANA) is one more vector per worker; it never runs with error feedback
    estimator = chosen.estimator.module
    ef = ef or int(estimator.STATE)
    sparsifier = chosen.compressor.module.SCRATCH
    rows = cfg.iters // max(cfg.eval_every or 1, 1) + 2
    workers = 0 if getattr(cfg, "votes", "per-worker") == "binomial" else cfg.workers
    from signsim import rounds

    need = run_bytes(workers, dim, momentum, ef, rows, data_values, sparsifier, getattr(cfg, "dtype", "float64"),
                     min(rounds.of_config(cfg), workers), getattr(cfg, "local_steps", 1), cfg.iters,
                     int(getattr(estimator, "TWO_POINT", False)))
    need += clock_bytes(cfg, workers)
    hint = ""
    if workers and cfg.method == "signsgd" and not momentum:
        hint = "; for signSGD on a synthetic problem, --votes binomial simulates any number of workers in O(d)"
    if workers and getattr(cfg, "dtype", "float64") == "float64":
        hint += "; --dtype float32 halves the workers' vectors"
    require(need, f"this run ({cfg.workers} workers x dimension {dim}, {rows} history rows)",
            "reduce --workers, --dim, --iters (or raise --eval-every) or the data" + hint)
    _, server = server_cost(cfg, dim, min(rounds.of_config(cfg), cfg.workers))
    rules = f"--aggregate {cfg.aggregate or chosen.aggregate.name}" + (
        f" --pre-aggregate {cfg.pre_aggregate}" if chosen.pre_aggregation else "")
    require(need + server, f"this run's server stages ({rules} on {min(rounds.of_config(cfg), cfg.workers)} "
            f"messages of dimension {dim})",
            "reduce --workers (or --clients-per-round) or --dim, or choose a rule that does not compare every pair")


def sampling_bytes(workers: int) -> int:
    """Which law each of M workers follows (``diagnostics.estimators.Sampling``): two int64 vectors of length M."""
    return 16 * workers


def vote_bytes(workers: int, dim: int) -> int:
    """The law of the vote of M workers over d coordinates (``diagnostics.estimators.vote``): the M x d message
    laws (P(+1), P(0), P(-1)) and the d x (2M + 1) law of the sum of the messages, float64."""
    return 8 * dim * (3 * workers + 2 * workers + 1)


def check_workers(workers: int, dim: int | None = None) -> None:
    """InputError when the diagnostics' per-worker laws (``sampling_bytes``, and with ``dim`` the vote's
    ``vote_bytes``) of ``workers`` workers cannot fit in memory."""
    need = sampling_bytes(workers) + (vote_bytes(workers, dim) if dim is not None else 0)
    what = f"--workers {workers}: the law of their vote over dimension {dim}" if dim is not None else \
        f"--workers {workers}: which law each worker follows"
    require(need, what, "reduce --workers")


# --- work: estimates of the time a command takes, checked before it starts ------------------------------------

#: elementary operations per second (one coordinate of one sampled gradient drawn, compressed and voted) that one
#: core of a fast machine does at most: the work estimates below become a lower bound on the time
OPS_PER_SECOND = 1e9
#: work whose lower bound exceeds this many seconds (a year) is refused before it starts
MAX_WORK_SECONDS = 365 * 86400.0
#: work whose lower bound exceeds this many seconds (an hour) is announced with its estimate
NOTE_WORK_SECONDS = 3600.0


def duration(seconds: float) -> str:
    for unit, size in (("years", 365 * 86400.0), ("days", 86400.0), ("hours", 3600.0), ("minutes", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.2g} seconds"


def run_work(cfg, dim: int, finite_sum: bool, rows: float | None = None) -> float:
    """The elementary operations of the run ``cfg``: per iteration, each of its S participants' H local steps
    draw a gradient over dimension d (B rows of the data each for a finite sum, whose minibatch costs B times a
    row; a synthetic problem's minibatch noise is drawn at once; ``rows``, when given, the rows one call reads:
    ``finite_sum.oracle_rows``, n_m for ``--batch-size full``); ``--votes binomial`` draws one vote of d
    coordinates. A run with a budget or --stop-loss may stop earlier: its --iters is an upper bound and it is not
    estimated (0)."""
    from signsim import rounds

    if cfg.budget_mb is not None or cfg.budget_bits is not None or cfg.stop_loss is not None:
        return 0.0
    if getattr(cfg, "votes", "per-worker") == "binomial":
        return float(cfg.iters) * dim
    S = min(rounds.of_config(cfg), cfg.workers)
    if rows is None:
        rows = cfg.batch_size if finite_sum else 1
    per_call = float(dim) * rows
    server, _ = server_cost(cfg, dim, S)
    return float(cfg.iters) * (S * max(1, getattr(cfg, "local_steps", 1)) * per_call + server)


def server_cost(cfg, dim: int, S: int) -> tuple[float, float]:
    """(operations, bytes) of one round's server stages on S messages of dimension ``dim``: each pre-aggregation
    and the aggregation, as its module declares them (``work``, ``memory``; ``signsim.stages.defaults``: n d
    operations and nothing allocated when not declared). The rules that compare every pair of messages (Krum,
    NNM, the spectral and subset rules) cost n^2 d or more a round."""
    from signsim import methods
    from signsim.stages import defaults, plan
    from signsim.stages.plugins import declared

    chosen = plan.of_config(cfg, methods.get(cfg.method))
    ops = mem = 0.0
    n = S
    for stage in (*chosen.pre_aggregation, chosen.aggregate):
        params = tuple(stage.param_array())
        ops += float(min(declared(stage.module, "work", n, dim, params, default=defaults.work), 10**300))
        mem = max(mem, float(min(declared(stage.module, "memory", n, dim, params, default=defaults.memory),
                                 10**300)))
        if stage is not chosen.aggregate:
            n = int(declared(stage.module, "rows", n, stage.params, result="rows", rows=n))
    return ops, mem


def check_work(ops: float, what: str, reduce: str) -> str | None:
    """InputError when ``ops`` operations take more than MAX_WORK_SECONDS even at OPS_PER_SECOND (one line: what was
    asked, the estimate, the option to lower); the estimate as a note when it exceeds NOTE_WORK_SECONDS (the work
    stays interruptible: Ctrl-C keeps what is done); None otherwise."""
    seconds = ops / OPS_PER_SECOND
    estimate = f"about {ops:.2g} operations, at least {duration(seconds)} at {OPS_PER_SECOND:.0e} per second"
    if seconds > MAX_WORK_SECONDS:
        raise InputError(f"{what}: {estimate}; {reduce}")
    if seconds > NOTE_WORK_SECONDS:
        return f"{what}: {estimate}; Ctrl-C stops it and keeps what is done"
    return None


def note(text: str | None) -> None:
    """One line on stderr (a long command's estimate, before it starts)."""
    if text:
        import sys

        print(f"note: {text}", file=sys.stderr, flush=True)
