"""Numba kernels for the stages of a method: what a worker sends, what Byzantine workers send instead, and
what the server broadcasts (docs/theory.md §2, §8).

Every compressor is defined here beside its encoding: ``compress_msg`` writes C(v) and returns the number
of bits of that message as it would be sent (``signsim.accounting`` restates each size formula on its own,
and the tests compare the two). With d coordinates, I = max(1, ceil(log2 d)) bits for an index, 32-bit
floats:

============  ==============================================================  ===============================
compressor    C(v)                                                             bits of one message
============  ==============================================================  ===============================
identity      v                                                                32 d
sign          sign(v), sign(0) by the SignZero policy                          d (2 d when sign(0) = 0)
sto-sign      +1 w.p. 1/2 + v_i / (2 ||v||_2), else -1; 0 for v = 0            d
scaled-sign   (||v||_1 / d) sign(v)                                            d (2 d ternary) + 32
qsgd:s        ||v||_2 sign(v_i) l_i / s, l_i = floor(s |v_i| / ||v||_2) + 1    32 (norm) + 1 (format flag) +
              w.p. the fractional part, else the floor                         min(d (1 + L), n (I + 1 + L)),
                                                                               L = ceil(log2(s + 1)), n = #{l_i > 0}
terngrad      s sign(v_i) b_i, s = max|v|, b_i ~ Bernoulli(|v_i| / s)          32 + 2 d
top-k:k       v_i on the k largest |v_i| (ties: the lower index), else 0       k (32 + I)
rand-k:k      (d / k) v_i on k coordinates drawn without replacement           k (32 + I)
natural       sign(v_i) 2^e or 2^(e+1) (2^e <= |v_i| < 2^(e+1)), unbiased      9 d (sign + 8-bit exponent)
onebit        mean of {v_j >= 0} where v_i >= 0, mean of {v_j < 0} elsewhere  d + 64
============  ==============================================================  ===============================

Random draws, when a compressor needs them, come from the generator it is given, in coordinate order (one
uniform per coordinate for sto-sign, qsgd, terngrad and natural; k uniforms for rand-k, a partial
Fisher-Yates shuffle); ``signsim.engine.reference`` does the same in NumPy and the tests compare the two.
No dispatch falls through silently for an unknown code: the kernels that run inside the parallel worker loop
cannot raise (a raise makes Numba run the loop serially), so they write NaN, and ``check_codes`` raises for any
unknown code before the loop starts; the others raise.
"""

import math

import numpy as np
from numba import njit

from signsim.codes import Aggregate, Attack, Compressor, SignZero, Tie

FLOAT_BITS = 32.0


@njit(cache=True, inline="always")
def sign_value(v, sign_zero, gen):
    """sign(v) with sign(0) by policy: RANDOM draws one uniform (< 1/2 -> +1), PLUS gives +1, ZERO gives 0."""
    if v > 0.0:
        return 1.0
    if v < 0.0:
        return -1.0
    if sign_zero == SignZero.PLUS:
        return 1.0
    if sign_zero == SignZero.ZERO:
        return 0.0
    if sign_zero == SignZero.RANDOM:
        return 1.0 if gen.random() < 0.5 else -1.0
    return np.nan  # unknown code (checked before the loop by ``check_codes``)


@njit(cache=True, inline="always")
def index_bits(d):
    """Bits of one coordinate index: max(1, ceil(log2 d))."""
    b = 1.0
    while 2.0 ** b < d:
        b += 1.0
    return b


@njit(cache=True)
def _before(v, i, j):
    """Top-k order: larger |v_i| first, the lower index first among equal |v_i|."""
    a = abs(v[i])
    b = abs(v[j])
    return a > b or (a == b and i < j)


@njit(cache=True)
def top_k_order(v, k, heap):
    """Write to heap[:k] the indices of the k entries of largest |v_i| (ties: the lower index), in that order:
    a heap of the first k indices by the reverse order, then a heapsort of it. Written out (not np.argsort)
    because NumPy's sorts cost Numba seconds of compile time."""
    d = v.shape[0]
    # heap[0] is the entry that would leave first (the "last" one kept)
    n = 0
    for i in range(d):
        if n < k:
            heap[n] = i
            c = n
            n += 1
            while c > 0:  # sift up: a parent is never kept ahead of its children
                p = (c - 1) // 2
                if _before(v, heap[p], heap[c]):
                    t = heap[p]
                    heap[p] = heap[c]
                    heap[c] = t
                    c = p
                else:
                    break
        elif _before(v, i, heap[0]):
            heap[0] = i
            _sift_down(v, heap, 0, n)
    for end in range(n - 1, 0, -1):  # heapsort: move the last kept entry to the end
        t = heap[0]
        heap[0] = heap[end]
        heap[end] = t
        _sift_down(v, heap, 0, end)


@njit(cache=True)
def _sift_down(v, heap, c, n):
    while True:
        left = 2 * c + 1
        if left >= n:
            return
        worst = left
        right = left + 1
        if right < n and _before(v, heap[left], heap[right]):
            worst = right
        if _before(v, heap[c], heap[worst]):
            t = heap[c]
            heap[c] = heap[worst]
            heap[worst] = t
            c = worst
        else:
            return


@njit(cache=True)
def sort_in_place(a):
    """Heapsort of a small float array (written out: NumPy's sorts cost Numba seconds of compile time)."""
    n = a.shape[0]
    for start in range(n // 2 - 1, -1, -1):
        _sift_max(a, start, n)
    for end in range(n - 1, 0, -1):
        t = a[0]
        a[0] = a[end]
        a[end] = t
        _sift_max(a, 0, end)


@njit(cache=True)
def _sift_max(a, c, n):
    while True:
        left = 2 * c + 1
        if left >= n:
            return
        big = left
        if left + 1 < n and a[left + 1] > a[left]:
            big = left + 1
        if a[big] > a[c]:
            t = a[c]
            a[c] = a[big]
            a[big] = t
            c = big
        else:
            return


@njit(cache=True, inline="always")
def compress_msg(kind, param, v, out, sign_zero, gen, iwork):
    """out <- C(v) for one worker (``param``: s for qsgd, k for top-k and rand-k); returns the message's bits.
    ``out`` must not alias ``v``; ``iwork`` is integer scratch of length d for top-k and rand-k (unused by the
    others), so that nothing here allocates: the worker step runs without Numba's reference counting."""
    d = v.shape[0]
    per_sign = 2.0 if sign_zero == SignZero.ZERO else 1.0
    if kind == Compressor.IDENTITY:
        for i in range(d):
            out[i] = v[i]
        return FLOAT_BITS * d
    if kind == Compressor.SIGN:
        for i in range(d):
            out[i] = sign_value(v[i], sign_zero, gen)
        return per_sign * d
    if kind == Compressor.STO_SIGN:
        nrm = 0.0
        for i in range(d):
            nrm += np.float64(v[i]) * np.float64(v[i])  # float64 products of a float32 v (--dtype)
        nrm = np.sqrt(nrm)
        if nrm == 0.0:
            for i in range(d):
                out[i] = 0.0
        else:
            for i in range(d):
                out[i] = 1.0 if gen.random() < 0.5 + v[i] / (2.0 * nrm) else -1.0
        return 1.0 * d
    if kind == Compressor.SCALED_SIGN:
        scale = 0.0
        for i in range(d):
            scale += abs(v[i])
        scale /= d
        for i in range(d):
            out[i] = scale * sign_value(v[i], sign_zero, gen)
        return per_sign * d + FLOAT_BITS
    if kind == Compressor.QSGD:
        s = param
        nrm = 0.0
        for i in range(d):
            nrm += np.float64(v[i]) * np.float64(v[i])  # float64 products of a float32 v (--dtype)
        nrm = np.sqrt(nrm)
        nnz = 0
        for i in range(d):
            u = gen.random()
            if nrm == 0.0:
                out[i] = 0.0
                continue
            r = s * abs(v[i]) / nrm
            lo = math.floor(r)
            level = lo + 1.0 if u < r - lo else lo
            if level > 0.0:
                nnz += 1
            out[i] = (nrm * level / s) * (1.0 if v[i] > 0.0 else -1.0) if level > 0.0 else 0.0
        lev = index_bits(s + 1.0)
        return FLOAT_BITS + 1.0 + min(d * (1.0 + lev), nnz * (index_bits(d) + 1.0 + lev))
    if kind == Compressor.TERNGRAD:
        s = 0.0
        for i in range(d):
            s = max(s, abs(v[i]))
        for i in range(d):
            if s == 0.0:
                out[i] = 0.0
            elif gen.random() < abs(v[i]) / s:
                out[i] = s if v[i] > 0.0 else -s
            else:
                out[i] = 0.0
        return FLOAT_BITS + 2.0 * d
    if kind == Compressor.TOP_K:
        k = int(param)
        top_k_order(v, k, iwork)  # ties: the lower index first
        for i in range(d):
            out[i] = 0.0
        for j in range(k):
            out[iwork[j]] = v[iwork[j]]
        return k * (FLOAT_BITS + index_bits(d))
    if kind == Compressor.RAND_K:
        k = int(param)
        perm = iwork
        for i in range(d):
            out[i] = 0.0
            perm[i] = i
        for j in range(k):
            r = j + int(gen.random() * (d - j))
            t = perm[j]
            perm[j] = perm[r]
            perm[r] = t
            out[perm[j]] = (d / k) * v[perm[j]]
        return k * (FLOAT_BITS + index_bits(d))
    if kind == Compressor.NATURAL:
        for i in range(d):
            u = gen.random()
            a = abs(np.float64(v[i]))
            if a == 0.0 or not np.isfinite(a):
                out[i] = v[i]
                continue
            _, e = math.frexp(a)  # a = f 2^e with f in [1/2, 1)
            lo = math.ldexp(1.0, e - 1)
            mag = 2.0 * lo if u < (a - lo) / lo else lo
            out[i] = mag if v[i] > 0.0 else -mag
        return 9.0 * d
    if kind == Compressor.ONEBIT:
        sp = 0.0
        np_ = 0
        sn = 0.0
        nn = 0
        for i in range(d):
            if v[i] >= 0.0:
                sp += v[i]
                np_ += 1
            else:
                sn += v[i]
                nn += 1
        mp = sp / np_ if np_ > 0 else 0.0
        mn = sn / nn if nn > 0 else 0.0
        for i in range(d):
            out[i] = mp if v[i] >= 0.0 else mn
        return d + 2.0 * FLOAT_BITS
    for i in range(d):  # unknown code (checked before the loop by ``check_codes``): poison, do not raise
        out[i] = np.nan
    return np.nan


@njit(cache=True, inline="always")
def compress_row(kind, v, out, sign_zero, gen):
    """out <- C(v) for the compressors without a parameter (see ``compress_msg``), with its own scratch."""
    compress_msg(kind, 0.0, v, out, sign_zero, gen, np.zeros(v.shape[0], dtype=np.int64))


@njit(cache=True, inline="always")
def attack_row(attack, out, gen):
    """A blind Byzantine worker's message: INVERT sends -msg; RANDOM sends |msg_i| with a fair random sign
    (one uniform per coordinate); the omniscient attacks (ALIE, IPM) are applied by ``omniscient_attack``
    once every message of the iteration is known."""
    if attack == Attack.INVERT:
        for i in range(out.shape[0]):
            out[i] = -out[i]
    elif attack == Attack.RANDOM:
        for i in range(out.shape[0]):
            out[i] = abs(out[i]) if gen.random() < 0.5 else -abs(out[i])
    elif attack != Attack.ALIE and attack != Attack.IPM:  # unknown (checked before the loop): poison
        for i in range(out.shape[0]):
            out[i] = np.nan


@njit(cache=True)
def omniscient_attack(attack, param, B, msg):
    """Rows m < B of ``msg`` become, per coordinate i, with mu_i and sd_i the mean and the population standard
    deviation of the honest rows m >= B: ALIE mu_i - z sd_i (z = param); IPM -eps mu_i (eps = param)."""
    M, d = msg.shape
    H = M - B
    for i in range(d):
        mu = 0.0
        for m in range(B, M):
            mu += msg[m, i]
        mu /= H
        if attack == Attack.ALIE:
            var = 0.0
            for m in range(B, M):
                var += (msg[m, i] - mu) ** 2
            value = mu - param * np.sqrt(var / H)
        elif attack == Attack.IPM:
            value = -param * mu
        else:
            raise ValueError("not an omniscient attack code")
        for m in range(B):
            msg[m, i] = value


@njit(cache=True)
def robust_aggregate(rule, param, msg, agg):
    """agg_i <- the coordinate-wise MEDIAN of msg[:, i] (mean of the two middle values for even M), or the
    TRIMMED mean: sort the column, drop t = floor(beta M) values at each end, average the rest in sorted
    order (beta = param)."""
    M, d = msg.shape
    t = int(math.floor(param * M)) if rule == Aggregate.TRIMMED else 0
    col = np.empty(M)
    for i in range(d):
        for m in range(M):
            col[m] = msg[m, i]
        sort_in_place(col)
        if rule == Aggregate.MEDIAN:
            if M % 2 == 1:
                agg[i] = col[M // 2]
            else:
                agg[i] = 0.5 * (col[M // 2 - 1] + col[M // 2])
        elif rule == Aggregate.TRIMMED:
            s = 0.0
            for m in range(t, M - t):
                s += col[m]
            agg[i] = s / (M - 2 * t)
        else:
            raise ValueError("not a robust aggregate code")


@njit(cache=True)
def finish_aggregate(rule, M, agg, tie, gen):
    """From the sum to the broadcast: MEAN divides by M; MAJORITY takes sign(sum), and a tied coordinate
    (sum exactly 0) becomes a fair +-1 from the server's stream (Tie.RANDOM, coordinate order) or 0."""
    d = agg.shape[0]
    if rule == Aggregate.MEAN:
        for i in range(d):
            agg[i] /= M
    elif rule == Aggregate.MAJORITY:
        for i in range(d):
            s = agg[i]
            if s > 0.0:
                agg[i] = 1.0
            elif s < 0.0:
                agg[i] = -1.0
            elif tie == Tie.ZERO:
                agg[i] = 0.0
            elif tie == Tie.RANDOM:
                agg[i] = 1.0 if gen.random() < 0.5 else -1.0
            else:
                raise ValueError("unknown tie code")
    else:
        raise ValueError("finish_aggregate: not a sum-based aggregate code")


@njit(cache=True)
def sparse_broadcast_bits(agg):
    """Bits of a broadcast sent as the cheaper of dense floats and (index, float) pairs of its non-zero
    entries, plus one format bit: 1 + min(32 d, n (32 + I))."""
    d = agg.shape[0]
    n = 0
    for i in range(d):
        if agg[i] != 0.0:
            n += 1
    return 1.0 + min(FLOAT_BITS * d, n * (FLOAT_BITS + index_bits(d)))


@njit(cache=True)
def check_codes(compressor, sign_zero, attack, aggregate, tie):
    """Raise for an unknown stage code (the loop calls this before its parallel part)."""
    if not (Compressor.IDENTITY <= compressor <= Compressor.ONEBIT):
        raise ValueError("unknown compressor code")
    if not (sign_zero == SignZero.RANDOM or sign_zero == SignZero.PLUS or sign_zero == SignZero.ZERO):
        raise ValueError("unknown sign-zero code")
    if not (Attack.INVERT <= attack <= Attack.IPM):
        raise ValueError("unknown attack code")
    if not (Aggregate.MEAN <= aggregate <= Aggregate.TRIMMED):
        raise ValueError("unknown aggregate code")
    if not (tie == Tie.RANDOM or tie == Tie.ZERO):
        raise ValueError("unknown tie code")
