"""Sorting helpers the stage kernels share (written out: NumPy's sorts cost Numba seconds of compile time)."""


def _before(v, i, j):
    """Top-k order: larger |v_i| first, the lower index first among equal |v_i|."""
    a = abs(v[i])
    b = abs(v[j])
    return a > b or (a == b and i < j)


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


def top_k_order(v, k, heap):
    """Write to heap[:k] the indices of the k entries of largest |v_i| (ties: the lower index), in that order:
    a heap of the first k indices by the reverse order, then a heapsort of it."""
    d = v.shape[0]
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


def sort_in_place(a):
    """Heapsort of a small float array."""
    n = a.shape[0]
    for start in range(n // 2 - 1, -1, -1):
        _sift_max(a, start, n)
    for end in range(n - 1, 0, -1):
        t = a[0]
        a[0] = a[end]
        a[end] = t
        _sift_max(a, 0, end)


def stable_order(v, order):
    """Write to order[:n] the indices 0..n-1 of v sorted by increasing v_i, the lower index first among equal values
    (an insertion sort: the rules that call it order the few messages of a round)."""
    n = v.shape[0]
    for i in range(n):
        order[i] = i
    for i in range(1, n):
        j = i
        while j > 0 and v[order[j - 1]] > v[order[j]]:
            t = order[j]
            order[j] = order[j - 1]
            order[j - 1] = t
            j -= 1


def next_subset(idx, k, M):
    """idx[:k] <- the next k-subset of 0..M-1 in lexicographic order; False after the last (the subset rules, MDA and
    SMEA, walk every subset this way)."""
    j = k - 1
    while j >= 0 and idx[j] == M - k + j:
        j -= 1
    if j < 0:
        return False
    idx[j] += 1
    for c in range(j + 1, k):
        idx[c] = idx[c - 1] + 1
    return True


def network_size(M):
    """An upper bound on the comparators of ``sorting_network(M, ...)``."""
    n = 1
    lg = 0
    while n < M:
        n *= 2
        lg += 1
    return n * (lg * (lg + 1) // 2 + 1)



def sorting_network(M, pairs):
    """pairs[:c] <- the comparators (a < b: min to a, max to b) of Batcher's odd-even merge sort on the next power
    of 2 >= M, those that touch an index >= M left out (as if those entries were +inf: they never move). Returns c."""
    n = 1
    while n < M:
        n *= 2
    c = 0
    p = 1
    while p < n:
        k = p
        while k >= 1:
            j = k % p
            while j < n - k:
                for i in range(min(k, n - j - k)):
                    if (i + j) // (2 * p) == (i + j + k) // (2 * p) and i + j + k < M:
                        pairs[c, 0] = i + j
                        pairs[c, 1] = i + j + k
                        c += 1
                j += 2 * k
            k //= 2
        p *= 2
    return c



def sort_columns(buf, w, pairs, nc):
    """Sort each column buf[:, j] (j < w) in place by the comparators pairs[:nc] (every entry a number: no NaN).
    A column's values come out in increasing order; equal values (+0.0 and -0.0) may come out in either order."""
    for c in range(nc):
        a = pairs[c, 0]
        b = pairs[c, 1]
        for j in range(w):
            x = buf[a, j]
            y = buf[b, j]
            lt = y < x
            buf[a, j] = y if lt else x
            buf[b, j] = x if lt else y



def load_block(msg, i0, w, buf, chk):
    """buf[:, :w] <- msg[:, i0:i0 + w]; True when a column may hold a NaN (its sum, in chk[:w], is NaN: a NaN, or
    +inf and -inf, in the column)."""
    M = msg.shape[0]
    for j in range(w):
        chk[j] = 0.0
    for m in range(M):
        src = msg[m, i0:i0 + w]  # (a slice: indices j >= 0 that Numba need not wrap around)
        for j in range(w):
            x = src[j]
            buf[m, j] = x
            chk[j] += x
    bad = False
    for j in range(w):
        if chk[j] != chk[j]:
            bad = True
    return bad



def block_width(M, nbytes):
    """Columns per block: M x W doubles in about nbytes, a multiple of 8, at least 8."""
    return max(8, nbytes // (8 * M) // 8 * 8)

