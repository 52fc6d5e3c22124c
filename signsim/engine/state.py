"""What every engine shares between chunks of iterations (``driver.Engine``, ``binomial.BinomialEngine``):
the recorded history and the test for the end of a run. An engine sets ``K``, ``k``, ``status``, ``hist``,
``counters``, ``x``, ``err``, ``gbuf``, ``tally``, ``icfg``, ``fcfg``, ``x_star`` and ``problem``."""

from __future__ import annotations

import numpy as np

from signsim.codes import Status
from signsim.engine import loop, specialize


class ChunkedState:
    @property
    def finished(self) -> bool:
        return self.status != Status.OK or (self.k >= self.K and self.counters[loop.C_ROWS] > 0)

    def record_now(self) -> None:
        """Append a history row at the current iterate unless the last row already holds it."""
        rows = self.counters[loop.C_ROWS]
        if rows and self.hist[rows - 1, loop.H_ITER] == self.k or rows >= self.hist.shape[0]:
            return
        p = self.problem
        self.recorder()(self.k, self.x, self.err, self.gbuf, p.pf, p.pi, p.A, p.b, self.icfg, self.fcfg, self.x_star,
                        self.hist, self.counters, self.tally)

    def recorder(self):
        """The family's copy of ``loop.record``, compiled with the engine's loop (for its dtype): a row written
        between chunks (Ctrl-C) compiles nothing."""
        return specialize.recorder(specialize.family_of(self.problem.code))

    def history(self) -> np.ndarray:
        return self.hist[: self.counters[loop.C_ROWS]].copy()
