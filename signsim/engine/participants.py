"""Each round's participants, drawn ahead of a chunk of rounds in O(S) memory and time per round, whatever M
(docs/theory.md §12).

The law is the one the NumPy replay draws (``ReferenceRun.participants``): the first S positions of a partial
Fisher-Yates shuffle of 0..M-1 whose step i swaps position i with i + integers(0, M - i), sorted. A dense shuffle
holds all M positions; here only the positions a round has touched are kept, in a small open-addressing table
(an untouched position p holds p), so a round of S participants among a million workers costs O(S), and the
draws, in the same order, give the same participants. The driver draws the participants of a chunk of rounds
before the chunk (``sample_rounds``) and hands the loop one generator per participant and round
(``signsim.seeding.WorkerStreams``): the loop itself never touches a worker that does not take part.
"""

import numpy as np
from numba import njit
from numba.typed import List

from signsim import draws

EMPTY = -1


@njit(cache=True, inline="always")
def _find(keys, mask, key):
    h = key & mask
    while keys[h] != EMPTY and keys[h] != key:
        h = (h + 1) & mask
    return h


@njit(cache=True)
def sample_rounds(gen, M, out, ascending):
    """out[r, :] <- the S = out.shape[1] participants of round r among M workers (ascending, or in the order drawn:
    an asynchronous server's candidates, ``signsim.engine.buffered``), for each row r in order, drawn from ``gen``
    as ``ReferenceRun.participants`` draws them. Needs S < M."""
    R, S = out.shape
    T = 1
    while T < 4 * S:
        T *= 2
    mask = T - 1
    keys = np.empty(T, dtype=np.int64)
    vals = np.empty(T, dtype=np.int64)
    for r in range(R):
        keys[:] = EMPTY
        for i in range(S):
            j = i + draws.index(gen, M - i)
            hi = _find(keys, mask, i)
            a = vals[hi] if keys[hi] != EMPTY else i
            hj = _find(keys, mask, j)
            b = vals[hj] if keys[hj] != EMPTY else j
            keys[hi] = i
            vals[hi] = b
            hj = _find(keys, mask, j)  # (i's entry may have taken j's free slot)
            keys[hj] = j
            vals[hj] = a
        for i in range(S):
            h = _find(keys, mask, i)
            out[r, i] = vals[h]
        if ascending:
            out[r].sort()


@njit(cache=True)
def typed_list(gens):
    """A ``numba.typed.List`` of the generators in the (reflected) list ``gens``, filled in compiled code: the typed
    list's own ``append`` from Python types every item again (about 0.1 ms each)."""
    out = List()
    for g in gens:
        out.append(g)
    return out


@njit(cache=True)
def extend(out, gens):
    """Append the generators of the (reflected) list ``gens`` to the typed list ``out``, in compiled code: an
    asynchronous run's list grows as clients first take part (``Engine._candidates``)."""
    for g in gens:
        out.append(g)
