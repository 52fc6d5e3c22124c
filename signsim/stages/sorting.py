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
