"""What one federated round is, for the diagnostics (docs/theory.md §12): H local steps with the local step size
of the round, and S of the M workers sampled uniformly without replacement.

``of_config`` reads ``--local-steps``, ``--local-lr``, ``--server-lr``, ``--participation`` and
``--clients-per-round`` from a run config and checks the ones that involve several options (one range per
option is checked by ``signsim.interface.options``): S <= M, and not both P and S.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Round:
    local_steps: int  # H
    local_lr: float  # gamma_0 of the local schedule (--local-lr, default --lr)
    step: float  # gamma_k: the local step size of the round the diagnostics look at
    round_index: int  # k
    server_lr: float  # eta_s
    workers: int  # M
    clients: int  # S
    participation: float | None  # P as given (None when not given)

    @property
    def sampled(self) -> bool:
        """Does the server vote among a random subset (S < M)?"""
        return self.clients < self.workers

    @property
    def local(self) -> bool:
        return self.local_steps > 1

    @property
    def plain(self) -> bool:
        """One step per round and every worker: the parameter-server iteration of docs/theory.md §2."""
        return not self.local and not self.sampled

    def fields(self) -> dict[str, Any]:
        return {"local_steps": self.local_steps, "local_lr": self.local_lr, "local_step_size": self.step,
                "round_index": self.round_index, "server_lr": self.server_lr, "workers": self.workers,
                "clients_per_round": self.clients, "participation": self.participation}


def clients(cfg) -> int:
    """S: ``--clients-per-round``, or max(1, floor(P M)) from ``--participation P``, or M. Exits 2 (InputError)
    when both are given or S > M."""
    from signsim.rounds import checked_clients  # S from P and its checks: stated once, in signsim.rounds

    return checked_clients(int(cfg.workers), cfg.participation, cfg.clients_per_round)


def round_index(at: str) -> int:
    """k of the round evaluated: K for ``--at run:K`` (after K rounds), 0 otherwise."""
    at = (at or "").strip()
    if at.startswith("run:"):
        try:
            return max(0, int(at[4:]))
        except ValueError:
            return 0
    return 0


def of_config(cfg, at: str = "init") -> Round:
    """The round of ``cfg`` at ``--at``: its local step size is the schedule's value at the round index,
    gamma_k = gamma_0 (constant) or gamma_0 / sqrt(k + 1) (sqrt), gamma_0 = --local-lr (default --lr)."""
    S = clients(cfg)
    mu = float(getattr(cfg, "prox_mu", 0.0) or 0.0)
    scaffold = str(getattr(cfg, "grad_estimator", None) or "none").startswith("scaffold")
    if (mu > 0 or scaffold) and int(cfg.local_steps) > 1:
        from signsim.errors import InputError

        what = f"FedProx's proximal term (prox-mu {mu:g})" if mu > 0 else "SCAFFOLD's control variates"
        raise InputError(f"--method {cfg.method} with --local-steps {cfg.local_steps}: the diagnostics do not model "
                         f"{what} over local steps; use --local-steps 1")
    gamma0 = float(cfg.local_lr if cfg.local_lr is not None else cfg.lr)
    k = round_index(at)
    step = gamma0 / math.sqrt(k + 1) if cfg.lr_schedule == "sqrt" else gamma0
    return Round(int(cfg.local_steps), gamma0, step, k, float(cfg.server_lr), int(cfg.workers), S,
                 cfg.participation)
