"""What every engine shares between chunks of iterations (``driver.Engine``, ``binomial.BinomialEngine``):
the recorded history and the test for the end of a run. ``init_history`` sets ``problem``, ``x_star``,
``hist``, ``counters`` and ``status``; an engine sets ``K``, ``k``, ``x``, ``err``, ``gbuf``, ``tally``,
``icfg``, ``fcfg``, ``sp`` (its stages' parameters) and ``nparams`` (its noise model's)."""

from __future__ import annotations

import numpy as np

from signsim.codes import Status
from signsim.engine import dispatch, loop


class ChunkedState:
    def init_history(self, problem, iters: int, eval_every: int) -> None:
        """The state every engine starts a run with: the problem, x*, an empty history, no iteration done."""
        self.problem = problem
        self.x_star = problem.x_star.astype(np.float64) if problem.x_star is not None else np.zeros(0)
        self.hist = np.full((iters // eval_every + 2, loop.N_HIST), np.nan)
        self.counters = np.zeros(2, dtype=np.int64)
        self.status = Status.OK
        self.abandoned = None  # driver.Abandoned: the state before a chunk left running after an interrupt

    @property
    def finished(self) -> bool:
        return self.status != Status.OK or (self.k >= self.K and self.counters[loop.C_ROWS] > 0)

    def record_now(self) -> None:
        """Append a history row at the current iterate unless the last row already holds it."""
        rows = self.counters[loop.C_ROWS]
        if rows and self.hist[rows - 1, loop.H_ITER] == self.k or rows >= self.hist.shape[0]:
            return
        self.record_row()

    def record_row(self) -> Status:
        """Append a history row at the current iterate; its status (diverged, target reached, or ok)."""
        return Status(self.recorder()(self.k, self.x, self.err, self.gbuf, self.tally, *self.record_bundles()))

    def record_bundles(self, hist: np.ndarray | None = None, counters: np.ndarray | None = None) -> tuple:
        """``loop.record``'s bundles (``loop.ProblemData``, ``loop.RunState``) as the engine's compiled loop passes
        them, of the same types (a row recorded between chunks compiles nothing); ``hist`` and ``counters``: other
        arrays to write the row to."""
        return (loop.problem_data(self.problem, self.nparams),
                loop.RunState(self.icfg, self.fcfg, self.sp, self.x_star, self.hist if hist is None else hist,
                              self.counters if counters is None else counters))

    def recorder(self):
        """``loop.record`` for the problems of the engine's plan (``signsim.engine.plan``), compiled with its loop
        (for its dtype): a row written between chunks (Ctrl-C) compiles nothing. Before the loop is chosen, the
        family's problems for every noise model."""
        import functools

        plan = getattr(self, "plan", None)
        problems = plan.problems if plan is not None else dispatch.Problems(dispatch.family_of(self.problem.code))
        return functools.partial(loop.record, problems)

    def history(self) -> np.ndarray:
        return self.hist[: self.counters[loop.C_ROWS]].copy()
