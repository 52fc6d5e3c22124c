"""Random streams. ``SeedSequence(seed).spawn(4)`` gives a root for the workers (worker m draws from its m-th
child, so adding workers leaves the first workers' streams unchanged), one stream for the server (random
tie-breaks), one for the problem (test split, shards, network initialization) and one for diagnostics.
Every stream is a PCG64 ``numpy.random.Generator``; Numba reproduces NumPy's draws from it exactly."""

from __future__ import annotations

import numpy as np

WORKERS, SERVER, PROBLEM, DIAGNOSTICS = range(4)
CHILDREN = 4
#: the fifth root: the server's sampling of each round's participants (docs/theory.md §12); spawned after the
#: first four, so that they are the same as before it existed
PARTICIPATION = 4
#: the system model's draws (docs/theory.md §14.1): one stream per worker property, keyed apart from the others
SYSTEM = 5


def generator(ss: np.random.SeedSequence) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(ss))


class WorkerStreams:
    """Worker m's generator, made the first time it is asked for and kept (its draws continue across rounds):
    ``SeedSequence(seed, spawn_key=(WORKERS, m))`` is the m-th child of the workers' root, the same stream as
    ``SeedSequence(seed).spawn(CHILDREN)[WORKERS].spawn(M)[m]``, made without making the others. A run of M
    workers of which S take part per round therefore seeds only the workers that take part (docs/theory.md §12)."""

    def __init__(self, seed: int):
        self.seed = seed
        self.made: dict[int, np.random.Generator] = {}

    def __getitem__(self, m: int) -> np.random.Generator:
        gen = self.made.get(m)
        if gen is None:
            gen = self.made[m] = generator(np.random.SeedSequence(self.seed, spawn_key=(WORKERS, int(m))))
        return gen

    def __len__(self) -> int:  # the streams made so far
        return len(self.made)

    def __iter__(self):  # (without this, Python would iterate by __getitem__ 0, 1, 2, ... without end)
        raise TypeError("WorkerStreams are made on demand and cannot be iterated: index them by worker")


def server_stream(seed: int) -> np.random.Generator:
    """The server's stream (random tie-breaks, the binomial engine's counts)."""
    return generator(np.random.SeedSequence(seed, spawn_key=(SERVER,)))


def run_streams(seed: int, workers: int) -> tuple[WorkerStreams, np.random.Generator]:
    """(the workers' streams, made on first use; the server's stream). ``workers`` is not needed to make them."""
    return WorkerStreams(seed), server_stream(seed)


def participation_stream(seed: int) -> np.random.Generator:
    """The server's stream for sampling a round's participants, apart from its tie-breaking stream: a run in which
    every worker takes part draws nothing from it."""
    return generator(np.random.SeedSequence(seed).spawn(PARTICIPATION + 1)[PARTICIPATION])


def system_stream(seed: int, prop: int) -> np.random.Generator:
    """The stream of a system model's property ``prop`` (0 compute, 1 uplink, 2 downlink): each worker's value is
    drawn from it once per run. Keyed (seed, SYSTEM, prop), so a run without a system model draws nothing new."""
    return generator(np.random.SeedSequence(seed, spawn_key=(SYSTEM, int(prop))))


def problem_streams(seed: int, n: int) -> list[np.random.Generator]:
    """n independent generators for the problem's own randomness (split, shards, initialization...)."""
    return [generator(s) for s in np.random.SeedSequence(seed).spawn(CHILDREN)[PROBLEM].spawn(n)]


def diagnostic_streams(seed: int, n: int, salt: int = 0) -> list[np.random.Generator]:
    """n independent generators for a diagnostic (Monte Carlo estimates); ``salt`` separates repeated
    estimates within one run (e.g. the k-th tracked point)."""
    root = np.random.SeedSequence(seed).spawn(CHILDREN)[DIAGNOSTICS]
    return [generator(s) for s in np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, salt)).spawn(n)]
