"""The columns of a run's history, declared once (docs/reference.md, "History row").

The compiled loop writes one row of floats per recorded iteration (``engine/loop.py``: ``HIST`` and the
``H_*`` indices are computed from ``COLUMNS``, in this order); ``run`` turns each row into a dict of the
results' field names; ``results.csv`` of a sweep, the plots' ``--y`` axes and the run summary table read the
same declarations. Pure Python, imports nothing: the compiled loop, the CLI and the renderers use it freely.
"""

from __future__ import annotations

from dataclasses import dataclass

#: when a column is in the results: every run, runs whose error feedback declares ``TRACK_ERROR`` (``ef``, or a
#: plugin that does), data problems (logistic, least squares, mlp: a held-out split), classifiers (logistic, mlp),
#: runs with a system model (``--compute``, ...)
ALWAYS, ERROR_FEEDBACK, DATA, CLASSIFIER, SYSTEM = "always", "error-feedback", "data", "classifier", "system"


@dataclass(frozen=True)
class Column:
    #: the name in the compiled loop's rows (``loop.HIST``)
    key: str
    #: the name in the results' history rows, in ``results.csv`` and in ``final``
    field: str
    #: what it is, with its units (a figure's axis label)
    label: str
    #: recorded in the results for: ALWAYS, ERROR_FEEDBACK, DATA or CLASSIFIER runs
    recorded: str = ALWAYS
    #: stored as an integer (the loop's row holds floats)
    integer: bool = False
    #: its row label in the run summary table, if it has one
    summary: str | None = None


#: the history's columns, in the order of the compiled loop's rows
COLUMNS = (
    Column("iter", "iter", "iteration k", integer=True),
    Column("loss", "loss", "loss f(x_k)", summary="loss f(x)"),
    Column("grad_l2", "grad_norm", "||grad f(x_k)||_2", summary="||grad f||_2"),
    Column("grad_l1", "grad_norm_l1", "||grad f(x_k)||_1", summary="||grad f||_1"),
    Column("distance", "distance", "||x_k - x*||_2", summary="distance to x*"),
    Column("grad_calls", "grad_calls", "stochastic-gradient oracle calls so far, summed over workers (S H per round)",
           integer=True),
    Column("extra", "ef_error_norm", "mean over workers of ||e_m||_2", recorded=ERROR_FEEDBACK),
    Column("train_acc", "train_acc", "training accuracy", recorded=CLASSIFIER),
    Column("test_acc", "test_acc", "test accuracy", recorded=CLASSIFIER),
    Column("test_loss", "test_loss", "test loss f_test(x_k) on the held-out samples", recorded=DATA),
    Column("bits_up", "bits_up", "bits sent up so far (all workers)", integer=True),
    Column("bits_down", "bits_down", "bits broadcast so far (times the participants)", integer=True),
    Column("time", "time", "simulated wall-clock seconds so far (the system model, docs/theory.md §14)",
           recorded=SYSTEM, summary="simulated time (s)"),
)

#: the loop's column names, in order (``loop.HIST``)
KEYS = tuple(c.key for c in COLUMNS)
N_COLUMNS = len(COLUMNS)

#: the order in which the optional columns follow the others: in a run's history rows (EF's error first) and
#: in a sweep's results.csv (the accuracies and the test loss first)
RESULTS_ORDER = (ALWAYS, ERROR_FEEDBACK, CLASSIFIER, DATA, SYSTEM)
CSV_ORDER = (ALWAYS, CLASSIFIER, DATA, ERROR_FEEDBACK, SYSTEM)


def index(key: str) -> int:
    """The position of the loop's column ``key`` in a history row."""
    return KEYS.index(key)


def column(field: str) -> Column:
    """The column whose results field is ``field`` (KeyError for an unknown one)."""
    for c in COLUMNS:
        if c.field == field:
            return c
    raise KeyError(field)


def _ordered(groups: tuple[str, ...], recorded: set[str]) -> tuple[Column, ...]:
    return tuple(c for g in groups if g in recorded for c in COLUMNS if c.recorded == g)


def recorded(error_feedback: bool, classifier: bool, data: bool = False, system: bool = False) -> tuple[Column, ...]:
    """The columns of a run's history rows, in the order of their fields (``data``: a data problem, whose
    held-out split gives a test loss; every classifier is one; ``system``: a run with a system model)."""
    groups = ({ALWAYS} | ({ERROR_FEEDBACK} if error_feedback else set()) | ({CLASSIFIER} if classifier else set())
              | ({DATA} if data or classifier else set()) | ({SYSTEM} if system else set()))
    return _ordered(RESULTS_ORDER, groups)


#: the history fields of a sweep's results.csv, in order (those present in some run are written)
CSV_FIELDS = tuple(c.field for c in _ordered(CSV_ORDER, set(CSV_ORDER)))
