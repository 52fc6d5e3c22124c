"""Generalized linear models on a finite sum (docs/theory.md §5): f(w) = (1/n) sum_j phi(a_j^T w, y_j) + (lam/2)||w||^2.

* logistic: phi(m, y) = log(1 + exp(-y m)), y in {-1, +1}, phi'(m, y) = -y sigma(-y m);
* least squares: phi(m, y) = (m - y)^2 / 2, phi'(m, y) = m - y.

Per-sample gradients are grad f_j = phi'_j a_j + lam w, so their squared norms need no n x d matrix:
||grad f_j||^2 = phi'_j^2 ||a_j||^2 + 2 lam phi'_j a_j^T w + lam^2 ||w||^2 (docs/theory.md §6).
Rows 0..n_train-1 of A are the training set, the rest the held-out set; b holds the labels.
"""

import numpy as np
from numba import njit, prange

from signsim.problems.prefetch import prefetch_row
from signsim.problems.sampling import (
    FULL_BATCH,
    P_FEATURES,
    P_MODE,
    P_NTEST,
    P_NTRAIN,
    P_OWN,
    draw_index,
    full_group,
    label_offset,
    minibatch_group,
)

LOGISTIC, LEAST_SQUARES = 0, 1
P_KIND = P_OWN


@njit(cache=True, fastmath={"reassoc", "nsz", "contract"})
def _margin(x, A, j):
    """a_j^T w. The sum may be reassociated so that LLVM vectorizes it (SIMD lanes and FMA; ~4x faster than
    four scalar partial sums): the result is the same on every call on one machine, and within rounding of
    any other order (CPUs with other vector widths may differ in the last bits). Not inlined into its callers
    at the Numba level, so that these flags stay on this loop alone."""
    s = 0.0
    for i in range(x.shape[0]):
        s += np.float64(A[j, i]) * np.float64(x[i])  # float64 (exact) products of float32 data and iterates (--dtype)
    return s


@njit(cache=True)
def sq_norm(x):
    """||x||^2 summed in float64 in index order (also for a float32 x: ``--dtype``)."""
    s = 0.0
    for i in range(x.shape[0]):
        xi = np.float64(x[i])
        s += xi * xi
    return s


@njit(cache=True, inline="always")
def _phi(kind, m, y):
    if kind == LOGISTIC:
        t = -y * m  # log(1 + exp(t)), stably
        return max(t, 0.0) + np.log1p(np.exp(-abs(t)))
    return 0.5 * (m - y) ** 2


@njit(cache=True, inline="always")
def _dphi(kind, m, y):
    if kind == LOGISTIC:
        t = y * m  # -y sigma(-t)
        if t >= 0:
            e = np.exp(-t)
            return -y * e / (1.0 + e)
        return -y / (1.0 + np.exp(t))
    return m - y


#: full-data passes (loss, gradient, accuracy) split the rows into this many fixed chunks, summed in chunk
#: order, so that the result does not depend on the number of threads
ROW_CHUNKS = 16
#: ... and run on all threads when they touch at least this many numbers (n d); below, on one thread
PARALLEL_WORK = 1 << 20
#: the chunks' partial gradients take at most this many doubles (fewer chunks for a very large d)
CHUNK_DOUBLES = 1 << 22


@njit(cache=True)
def _chunks(n, d):
    """How many row chunks a full-data pass over n rows of d features uses (1: the plain sequential loop)."""
    if n * d < PARALLEL_WORK or n < ROW_CHUNKS:
        return 1
    return max(1, min(ROW_CHUNKS, CHUNK_DOUBLES // max(d, 1)))


@njit(cache=True, inline="always")
def _loss_grad_rows(x, kind, n, A, b, lo, hi, out):
    """(sum_{lo <= j < hi} phi_j, #{j : sign(a_j^T w) = y_j}), and out += sum_j phi'_j a_j / n (out zeroed by
    the caller); each row is read once from memory, its axpy from L1 right after its margin."""
    d = x.shape[0]
    s = 0.0
    hits = 0
    for j in range(lo, hi):
        m = _margin(x, A, j)
        s += _phi(kind, m, b[j])
        hits += (1.0 if m >= 0 else -1.0) == b[j]
        c = _dphi(kind, m, b[j]) / n
        for i in range(d):
            out[i] += c * A[j, i]
    return s, hits


@njit(cache=True, parallel=True)
def _loss_grad_parallel(x, kind, n, A, b, part, sums, hits):
    C = part.shape[0]
    for c in prange(C):
        sums[c], hits[c] = _loss_grad_rows(x, kind, n, A, b, c * n // C, (c + 1) * n // C, part[c])


@njit(cache=True, parallel=True)
def _loss_parallel(x, kind, n, A, b, sums):
    C = sums.shape[0]
    for c in prange(C):
        s = 0.0
        for j in range(c * n // C, (c + 1) * n // C):
            s += _phi(kind, _margin(x, A, j), b[j])
        sums[c] = s


@njit(cache=True)
def loss(x, pf, pi, A, b):
    kind, n, d = pi[P_KIND], pi[P_NTRAIN], x.shape[0]
    C = _chunks(n, d)
    s = 0.0
    if C == 1:
        for j in range(n):
            s += _phi(kind, _margin(x, A, j), b[j])
    else:
        sums = np.zeros(C)
        _loss_parallel(x, kind, n, A, b, sums)
        for c in range(C):
            s += sums[c]
    return s / n + 0.5 * pf[0] * sq_norm(x)


@njit(cache=True)
def test_loss(x, pf, pi, A, b):
    """The loss on the held-out rows: (1/n_test) sum_{held-out j} phi(a_j^T w, y_j) + (lam/2)||w||^2, f with the
    held-out samples in place of the training ones (docs/theory.md §5); NaN without held-out rows."""
    kind, lo, m = pi[P_KIND], pi[P_NTRAIN], pi[P_NTEST]
    if m == 0:
        return np.nan
    C = _chunks(m, x.shape[0])
    s = 0.0
    if C == 1:
        for j in range(lo, lo + m):
            s += _phi(kind, _margin(x, A, j), b[j])
    else:
        sums = np.zeros(C)
        _loss_parallel(x, kind, m, A[lo:], b[lo:], sums)
        for c in range(C):
            s += sums[c]
    return s / m + 0.5 * pf[0] * sq_norm(x)


@njit(cache=True)
def add_chunks(part, sums, counts, out):
    """A chunked full-data pass's total: out += the chunks' partial gradients, and (sum of the losses, sum of
    the hit counts), in chunk order (the same result on any thread count)."""
    s = 0.0
    hits = 0
    for c in range(part.shape[0]):
        s += sums[c]
        hits += counts[c]
        for i in range(out.shape[0]):
            out[i] += part[c, i]
    return s, hits


@njit(cache=True)
def _loss_grad_hits(x, pf, pi, A, b, out):
    """f(w), grad f(w) into ``out`` and the number of training rows classified right, in one pass over the
    training rows (each row read once), on all threads for a large data set (fixed row chunks summed in order:
    the same result on any thread count)."""
    kind, n, d = pi[P_KIND], pi[P_NTRAIN], x.shape[0]
    out[:] = 0.0
    C = _chunks(n, d)
    if C == 1:
        s, hits = _loss_grad_rows(x, kind, n, A, b, 0, n, out)
    else:
        part = np.zeros((C, d))
        sums = np.zeros(C)
        counts = np.zeros(C, dtype=np.int64)
        _loss_grad_parallel(x, kind, n, A, b, part, sums, counts)
        s, hits = add_chunks(part, sums, counts, out)
    lam = pf[0]
    ww = 0.0
    for i in range(d):
        xi = np.float64(x[i])
        out[i] += lam * xi
        ww += xi * xi
    return s / n + 0.5 * lam * ww, hits


@njit(cache=True)
def loss_grad(x, pf, pi, A, b, out):
    """f(w), with grad f(w) written to ``out``, in one pass over the training rows."""
    return _loss_grad_hits(x, pf, pi, A, b, out)[0]


@njit(cache=True)
def evaluate(x, pf, pi, A, b, out):
    """(f(w), training accuracy), with grad f(w) written to ``out``, in one pass over the training rows: what
    a history row records, without a second pass for the accuracy (NaN for least squares, as ``accuracy``)."""
    loss, hits = _loss_grad_hits(x, pf, pi, A, b, out)
    if pi[P_KIND] != LOGISTIC:
        return loss, np.nan
    return loss, hits / pi[P_NTRAIN]


@njit(cache=True)
def grad(x, pf, pi, A, b, out):
    loss_grad(x, pf, pi, A, b, out)


@njit(cache=True)
def _full_rows(x, kind, A, b, lo, hi, idx, off, out):
    """out += (1/n_m) sum_{lo <= t < hi} phi'(a_j^T w, y_j) a_j over the rows j = idx[t] of one group (n_m = hi - lo),
    in index order, with the labels read at b[j + off]; each row read once, the next rows prefetched."""
    d = x.shape[0]
    n = hi - lo
    for t in range(lo, hi):
        j = idx[t]
        if t + 2 < hi:
            prefetch_row(A, idx[t + 2])
        c = _dphi(kind, _margin(x, A, j), b[j + off]) / n
        for i in range(d):
            out[i] += c * A[j, i]


@njit(cache=True)
def oracle(x, worker, gen, tau, pf, pi, A, b, ptr, idx, out):
    """Mean of tau per-sample gradients, rows drawn with replacement from the worker's group (docs/theory.md
    §5). Fused per row: rows are drawn two steps ahead (the same draws in the same order, as nothing else draws
    in between) and prefetched, so the wait for a row overlaps the work on the two before it; the margin
    a_j^T w reads row j from memory once, the axpy right after it from L1.

    tau = FULL_BATCH (``--batch-size full``): the exact gradient of the worker's local objective,
    grad f_m(w) = (1/n_m) sum_{j in group m} phi'(a_j^T w, y_j) a_j + lam w, every row of its group once, no draw
    (docs/theory.md §5); O(n_m d), nothing allocated. The first pi[P_FLIPPED] workers read flipped labels
    (``--attack label-flip``, §8.5; ``sampling.label_offset``)."""
    kind, d = pi[P_KIND], x.shape[0]
    for i in range(d):
        out[i] = pf[0] * x[i]
    off = label_offset(pi, A, worker)
    if tau == FULL_BATCH:
        g = full_group(pi[P_MODE], worker)
        if g < 0:  # no local objective (split-batch): no raise inside a parallel loop, poison the gradient
            for i in range(d):
                out[i] = np.nan
            return
        _full_rows(x, kind, A, b, ptr[g], ptr[g + 1], idx, off, out)
        return
    g = minibatch_group(pi[P_MODE], worker, gen)
    if tau <= 0:
        return
    j = draw_index(gen, ptr, idx, g)
    prefetch_row(A, j)
    j1 = j
    if tau > 1:
        j1 = draw_index(gen, ptr, idx, g)
        prefetch_row(A, j1)
    for t in range(tau):
        j2 = j1
        if t + 2 < tau:
            j2 = draw_index(gen, ptr, idx, g)
            prefetch_row(A, j2)
        c = _dphi(kind, _margin(x, A, j), b[j + off]) / tau
        for i in range(d):
            out[i] += c * A[j, i]
        j, j1 = j1, j2


@njit(cache=True)
def sample_grad(x, pf, pi, A, b, j, out):
    """out <- grad f_j(w) = phi'_j a_j + lam w for training row j."""
    c = _dphi(pi[P_KIND], _margin(x, A, j), b[j])
    for i in range(x.shape[0]):
        out[i] = c * A[j, i] + pf[0] * x[i]


@njit(cache=True, parallel=True)
def _hits_parallel(x, A, b, lo, hi, hits):
    C = hits.shape[0]
    n = hi - lo
    for c in prange(C):
        h = 0
        for j in range(lo + c * n // C, lo + (c + 1) * n // C):
            pred = 1.0 if _margin(x, A, j) >= 0 else -1.0
            h += pred == b[j]
        hits[c] = h


@njit(cache=True)
def accuracy(x, pf, pi, A, b, test):
    """Fraction of samples with sign(a_j^T w) = y_j (logistic; 0 counts as +1); NaN for least squares or an
    empty set. On all threads for a large set (integer counts: the same result on any thread count)."""
    if pi[P_KIND] != LOGISTIC:
        return np.nan
    lo = pi[P_NTRAIN] if test else 0
    hi = lo + (pi[P_NTEST] if test else pi[P_NTRAIN])
    if hi == lo:
        return np.nan
    C = _chunks(hi - lo, x.shape[0])
    hits = np.zeros(C, dtype=np.int64)
    if C == 1:
        for j in range(lo, hi):
            pred = 1.0 if _margin(x, A, j) >= 0 else -1.0
            hits[0] += pred == b[j]
    else:
        _hits_parallel(x, A, b, lo, hi, hits)
    return hits.sum() / (hi - lo)


@njit(cache=True)
def per_sample_sq_norms(x, pf, pi, A, b):
    """||grad f_j(w)||^2 for every training sample j, in O(n d) time and O(n) memory."""
    kind, n, lam = pi[P_KIND], pi[P_NTRAIN], pf[0]
    ww = np.sum(x * x)
    out = np.empty(n)
    for j in range(n):
        m = _margin(x, A, j)
        c = _dphi(kind, m, b[j])
        aa = 0.0
        for i in range(x.shape[0]):
            aa += A[j, i] * A[j, i]
        out[j] = c * c * aa + 2.0 * lam * c * m + lam * lam * ww
    return out


def per_sample_grads_ref(x, pf, pi, A, b, rows, labels=None) -> np.ndarray:
    """NumPy: the per-sample gradients of the given training rows, materialized (len(rows) x d); ``labels``: the
    rows' labels when not b[rows] (a Byzantine worker's flipped ones, ``--attack label-flip``)."""
    rows = np.asarray(rows)
    m = A[rows] @ x
    y = b[rows] if labels is None else np.asarray(labels, dtype=np.float64)
    if pi[P_KIND] == LOGISTIC:
        c = -y / (1.0 + np.exp(y * m))
    else:
        c = m - y
    return c[:, None] * A[rows] + pf[0] * x[None, :]


def loss_ref(x, pf, pi, A, b) -> float:
    n = pi[P_NTRAIN]
    m = A[:n] @ x
    y = b[:n]
    phi = np.logaddexp(0.0, -y * m) if pi[P_KIND] == LOGISTIC else 0.5 * (m - y) ** 2
    return float(phi.mean() + 0.5 * pf[0] * x @ x)


def n_features(pi) -> int:
    return int(pi[P_FEATURES])
