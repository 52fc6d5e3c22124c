"""Federated rounds (docs/theory.md §12): how many workers take part in a round (the checks that involve the rounds'
options and other options are ``signsim.interface.composition``'s).

S, the participants per round: ``--clients-per-round S`` as given; else ``--participation P`` gives
S = max(1, floor(P M)) (``signsim.numbers.floor_share``: a product such as 0.7 x 10 that rounds below an integer
still counts as it, as it does for ``trimmed:BETA``); else S = M. Pure Python: the config checks, the engine, the
diagnostics, the memory estimate and the results read it.
"""

from __future__ import annotations

from signsim.errors import InputError
from signsim.errors import shown as _shown
from signsim.numbers import ceil_share, floor_share


def clients_per_round(workers: int, participation: float | None, clients: int | None) -> int:
    """S of the M = ``workers`` workers sampled each round (docs/theory.md §12)."""
    if clients is not None:
        return int(clients)
    if participation is not None:
        return max(1, min(workers, floor_share(participation, workers)))
    return int(workers)


def checked_clients(workers: int, participation: float | None, clients: int | None) -> int:
    """``clients_per_round``, after the checks that involve both options: not P and S together, S <= M."""
    if participation is not None and clients is not None:
        raise InputError(f"--participation {_shown(participation)} and --clients-per-round {clients}: give one of "
                         "the two")
    if clients is not None and clients > workers:
        raise InputError(f"--clients-per-round {clients}: more than the {workers} workers (--workers {workers})")
    return clients_per_round(workers, participation, clients)


def of_config(cfg) -> int:
    """The workers sampled each round for the resolved run config ``cfg``: S, or with ``--over-select F`` (docs/
    theory.md §14.5) S + ceil(F S), at most M, of which the server keeps the first S to finish (``kept``)."""
    S = clients_per_round(cfg.workers, getattr(cfg, "participation", None), getattr(cfg, "clients_per_round", None))
    return over_selected(S, getattr(cfg, "over_select", None), cfg.workers)


def over_selected(S: int, fraction: float | None, M: int) -> int:
    """S + ceil(fraction S), at most M (S without over-selection)."""
    return S if fraction is None else min(M, S + ceil_share(fraction, S))


def kept(cfg) -> int | None:
    """With ``--over-select``: S, the participants whose messages the server aggregates each round (the first to
    finish); None without."""
    if getattr(cfg, "over_select", None) is None:
        return None
    return clients_per_round(cfg.workers, getattr(cfg, "participation", None), getattr(cfg, "clients_per_round", None))
