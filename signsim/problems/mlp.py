"""One-hidden-layer network with softmax cross-entropy (docs/theory.md §5; the seed's MNIST experiment):

    z = W1 a + b1,  h = act(z) (relu or tanh),  logits = W2 h + b2,
    f_j = logsumexp(logits) - logits[y_j] + (lam/2)||w||^2.

Parameters are one flat vector w = [W1 (H x p, row-major), b1 (H), W2 (C x H), b2 (C)], so the sign
methods act on every weight alike. Initialization (from the problem's random stream): W1 ~ N(0, 2/p) for
relu or N(0, 1/p) for tanh, W2 ~ N(0, 1/H), biases 0.

Per-sample squared norms without an n x d matrix (docs/theory.md §6): each dense layer's weight gradient is an
outer product delta h^T, so ||grad f_j||^2 = ||d2||^2 (||h||^2 + 1) + ||d1||^2 (||a||^2 + 1) for the data
part g_j, and the regularizer adds 2 lam <g_j, w> + lam^2 ||w||^2 with <g_j, w> = d2.logits + d1.z.
"""

import numpy as np
from numba import njit, prange

from signsim.codes import Problem
from signsim.errors import InputError
from signsim.problems.base import ProblemInstance, ProblemSpec
from signsim.problems.finite_sum import DATA_DEFAULTS, DATA_OPTIONS, FiniteSum, load_prepared, oracle_ref_from, pack
from signsim.problems.glm import _chunks, add_chunks, sq_norm
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

CODE = int(Problem.MLP)  # assigned in signsim.codes
P_HIDDEN, P_CLASSES, P_ACT = P_OWN, P_OWN + 1, P_OWN + 2
RELU, TANH = 0, 1
ACTIVATIONS = {"relu": RELU, "tanh": TANH}


@njit(cache=True, inline="always")
def _forward(x, A, j, p, H, C, act, z, h, logits):
    """Fill z, h, logits for sample j; return log-sum-exp of the logits."""
    ob1, ow2 = H * p, H * p + H
    ob2 = ow2 + C * H
    # four hidden units at a time: each A[j, i] is loaded once for four independent running sums (each unit's
    # sum keeps its order, so z is exactly what one unit at a time gives, without waiting on one add chain)
    k = 0
    while k + 4 <= H:
        # float64 sums and products whatever the type of x and A (float32 under --dtype float32)
        s0, s1 = np.float64(x[ob1 + k]), np.float64(x[ob1 + k + 1])
        s2, s3 = np.float64(x[ob1 + k + 2]), np.float64(x[ob1 + k + 3])
        r0 = k * p
        r1, r2, r3 = r0 + p, r0 + 2 * p, r0 + 3 * p
        for i in range(p):
            a = np.float64(A[j, i])
            s0 += x[r0 + i] * a
            s1 += x[r1 + i] * a
            s2 += x[r2 + i] * a
            s3 += x[r3 + i] * a
        z[k], z[k + 1], z[k + 2], z[k + 3] = s0, s1, s2, s3
        k += 4
    while k < H:
        s = np.float64(x[ob1 + k])
        row = k * p
        for i in range(p):
            s += x[row + i] * np.float64(A[j, i])
        z[k] = s
        k += 1
    for k in range(H):
        h[k] = max(z[k], 0.0) if act == RELU else np.tanh(z[k])
    top = -np.inf
    for c in range(C):
        s = np.float64(x[ob2 + c])
        row = ow2 + c * H
        for k in range(H):
            s += x[row + k] * h[k]
        logits[c] = s
        top = max(top, s)
    acc = 0.0
    for c in range(C):
        acc += np.exp(logits[c] - top)
    return top + np.log(acc)


@njit(cache=True, inline="always")
def _deltas(x, A, j, y, p, H, C, act, z, h, logits, d1, d2):
    """Forward pass, then the output error d2 = softmax - onehot(y) and hidden error d1; returns the loss."""
    lse = _forward(x, A, j, p, H, C, act, z, h, logits)
    for c in range(C):
        d2[c] = np.exp(logits[c] - lse)
    d2[y] -= 1.0
    ow2 = H * p + H
    for k in range(H):
        s = 0.0
        for c in range(C):
            s += x[ow2 + c * H + k] * d2[c]
        if act == RELU:
            d1[k] = s if z[k] > 0 else 0.0
        else:
            d1[k] = s * (1.0 - h[k] * h[k])
    return lse - logits[y]


@njit(cache=True, inline="always")
def _accumulate(A, j, p, H, C, h, d1, d2, weight, out):
    """out += weight * (per-sample gradient of the data term)."""
    ob1, ow2 = H * p, H * p + H
    ob2 = ow2 + C * H
    for k in range(H):
        c1 = weight * d1[k]
        if c1 != 0.0:
            row = k * p
            for i in range(p):
                out[row + i] += c1 * A[j, i]
        out[ob1 + k] += c1
    for c in range(C):
        c2 = weight * d2[c]
        row = ow2 + c * H
        for k in range(H):
            out[row + k] += c2 * h[k]
        out[ob2 + c] += c2


@njit(cache=True, inline="always")
def _loss_rows(x, A, b, lo, hi, p, H, C, act):
    z, h, logits = np.empty(H), np.empty(H), np.empty(C)
    s = 0.0
    for j in range(lo, hi):
        s += _forward(x, A, j, p, H, C, act, z, h, logits) - logits[int(b[j])]
    return s


@njit(cache=True, inline="always")
def _grad_rows(x, A, b, lo, hi, p, H, C, act, weight, out):
    z, h, logits, d1, d2 = np.empty(H), np.empty(H), np.empty(C), np.empty(H), np.empty(C)
    for j in range(lo, hi):
        _deltas(x, A, j, int(b[j]), p, H, C, act, z, h, logits, d1, d2)
        _accumulate(A, j, p, H, C, h, d1, d2, weight, out)


@njit(cache=True, parallel=True)
def _loss_parallel(x, A, b, n, p, H, C, act, sums):
    K = sums.shape[0]
    for c in prange(K):
        sums[c] = _loss_rows(x, A, b, c * n // K, (c + 1) * n // K, p, H, C, act)


@njit(cache=True, parallel=True)
def _grad_parallel(x, A, b, n, p, H, C, act, part):
    K = part.shape[0]
    for c in prange(K):
        _grad_rows(x, A, b, c * n // K, (c + 1) * n // K, p, H, C, act, 1.0 / n, part[c])


@njit(cache=True)
def loss(x, pf, pi, A, b):
    """f(w); on all threads for a large data set, in fixed row chunks summed in order (glm._chunks: the same
    result on any thread count)."""
    p, H, C, act, n = pi[P_FEATURES], pi[P_HIDDEN], pi[P_CLASSES], pi[P_ACT], pi[P_NTRAIN]
    K = _chunks(n, x.shape[0])
    if K == 1:
        s = _loss_rows(x, A, b, 0, n, p, H, C, act)
    else:
        sums = np.zeros(K)
        _loss_parallel(x, A, b, n, p, H, C, act, sums)
        s = 0.0
        for c in range(K):
            s += sums[c]
    return s / n + 0.5 * pf[0] * sq_norm(x)


@njit(cache=True)
def test_loss(x, pf, pi, A, b):
    """The loss on the held-out rows: mean cross-entropy over them + (lam/2)||w||^2, f with the held-out samples
    in place of the training ones (docs/theory.md §5); NaN without held-out rows. Chunked like ``loss``."""
    p, H, C, act, lo, m = pi[P_FEATURES], pi[P_HIDDEN], pi[P_CLASSES], pi[P_ACT], pi[P_NTRAIN], pi[P_NTEST]
    if m == 0:
        return np.nan
    K = _chunks(m, x.shape[0])
    if K == 1:
        s = _loss_rows(x, A, b, lo, lo + m, p, H, C, act)
    else:
        sums = np.zeros(K)
        _loss_parallel(x, A[lo:], b[lo:], m, p, H, C, act, sums)
        s = 0.0
        for c in range(K):
            s += sums[c]
    return s / m + 0.5 * pf[0] * sq_norm(x)


@njit(cache=True)
def grad(x, pf, pi, A, b, out):
    """grad f(w) into ``out``; chunked on all threads for a large data set, like ``loss``."""
    p, H, C, act, n = pi[P_FEATURES], pi[P_HIDDEN], pi[P_CLASSES], pi[P_ACT], pi[P_NTRAIN]
    dim = x.shape[0]
    K = _chunks(n, dim)
    if K == 1:
        for i in range(dim):
            out[i] = pf[0] * x[i]
        _grad_rows(x, A, b, 0, n, p, H, C, act, 1.0 / n, out)
        return
    part = np.zeros((K, dim))
    _grad_parallel(x, A, b, n, p, H, C, act, part)
    for i in range(dim):
        out[i] = pf[0] * x[i]
    for c in range(K):
        for i in range(dim):
            out[i] += part[c, i]


@njit(cache=True, inline="always")
def _evaluate_rows(x, A, b, lo, hi, p, H, C, act, weight, out):
    """One forward and backward pass per row: (sum of the rows' losses, rows classified right), and out +=
    weight * (sum of their data-term gradients); the same operations, in the same order, as ``_loss_rows``,
    ``_grad_rows`` and ``accuracy``."""
    z, h, logits, d1, d2 = np.empty(H), np.empty(H), np.empty(C), np.empty(H), np.empty(C)
    s = 0.0
    hits = 0
    for j in range(lo, hi):
        y = int(b[j])
        s += _deltas(x, A, j, y, p, H, C, act, z, h, logits, d1, d2)
        hits += np.argmax(logits) == y
        _accumulate(A, j, p, H, C, h, d1, d2, weight, out)
    return s, hits


@njit(cache=True, parallel=True)
def _evaluate_parallel(x, A, b, n, p, H, C, act, part, sums, hits):
    K = part.shape[0]
    for c in prange(K):
        sums[c], hits[c] = _evaluate_rows(x, A, b, c * n // K, (c + 1) * n // K, p, H, C, act, 1.0 / n, part[c])


@njit(cache=True)
def evaluate(x, pf, pi, A, b, out):
    """(f(w), training accuracy), with grad f(w) written to ``out``: what a history row records, in one pass
    over the training rows instead of three (loss, gradient, accuracy); chunked on all threads for a large data
    set like ``loss`` and ``grad``."""
    p, H, C, act, n = pi[P_FEATURES], pi[P_HIDDEN], pi[P_CLASSES], pi[P_ACT], pi[P_NTRAIN]
    dim = x.shape[0]
    K = _chunks(n, dim)
    for i in range(dim):
        out[i] = pf[0] * x[i]
    if K == 1:
        s, hits = _evaluate_rows(x, A, b, 0, n, p, H, C, act, 1.0 / n, out)
    else:
        part = np.zeros((K, dim))
        sums = np.zeros(K)
        counts = np.zeros(K, dtype=np.int64)
        _evaluate_parallel(x, A, b, n, p, H, C, act, part, sums, counts)
        s, hits = add_chunks(part, sums, counts, out)
    return s / n + 0.5 * pf[0] * sq_norm(x), hits / n


@njit(cache=True, _nrt=True)  # allocates its scratch: keeps Numba's runtime when called from the worker step
def oracle(x, worker, gen, tau, pf, pi, A, b, ptr, idx, out):
    """Mean of tau per-sample gradients (backpropagation), rows drawn with replacement from the worker's group;
    tau = FULL_BATCH (``--batch-size full``): the exact gradient of the worker's local objective, the mean over
    every row of its group once, in index order, no draw (docs/theory.md §5). The first pi[P_FLIPPED] workers read
    flipped labels (``--attack label-flip``, §8.5). Its scratch (five vectors of H or C) is allocated once a call,
    whatever tau."""
    p, H, C, act = pi[P_FEATURES], pi[P_HIDDEN], pi[P_CLASSES], pi[P_ACT]
    z, h, logits, d1, d2 = np.empty(H), np.empty(H), np.empty(C), np.empty(H), np.empty(C)
    for i in range(x.shape[0]):
        out[i] = pf[0] * x[i]
    off = label_offset(pi, A, worker)
    if tau == FULL_BATCH:
        g = full_group(pi[P_MODE], worker)
        if g < 0:  # no local objective (split-batch): no raise inside a parallel loop, poison the gradient
            for i in range(x.shape[0]):
                out[i] = np.nan
            return
        lo, hi = ptr[g], ptr[g + 1]
        for t in range(lo, hi):
            j = idx[t]
            if t + 1 < hi:
                prefetch_row(A, idx[t + 1])
            _deltas(x, A, j, int(b[j + off]), p, H, C, act, z, h, logits, d1, d2)
            _accumulate(A, j, p, H, C, h, d1, d2, 1.0 / (hi - lo), out)
        return
    g = minibatch_group(pi[P_MODE], worker, gen)
    if tau <= 0:
        return
    # the next row is drawn one step ahead (the same draws in the same order: nothing else draws in between)
    # and prefetched while this row's forward and backward passes run (docs/theory.md §5)
    j = draw_index(gen, ptr, idx, g)
    for t in range(tau):
        jn = draw_index(gen, ptr, idx, g) if t + 1 < tau else j
        prefetch_row(A, jn)
        _deltas(x, A, j, int(b[j + off]), p, H, C, act, z, h, logits, d1, d2)
        _accumulate(A, j, p, H, C, h, d1, d2, 1.0 / tau, out)
        j = jn


@njit(cache=True)
def sample_grad(x, pf, pi, A, b, j, out):
    """out <- grad f_j(w) for training row j (backpropagation plus lam w)."""
    p, H, C, act = pi[P_FEATURES], pi[P_HIDDEN], pi[P_CLASSES], pi[P_ACT]
    z, h, logits, d1, d2 = np.empty(H), np.empty(H), np.empty(C), np.empty(H), np.empty(C)
    for i in range(x.shape[0]):
        out[i] = pf[0] * x[i]
    _deltas(x, A, j, int(b[j]), p, H, C, act, z, h, logits, d1, d2)
    _accumulate(A, j, p, H, C, h, d1, d2, 1.0, out)


@njit(cache=True)
def accuracy(x, pf, pi, A, b, test):
    p, H, C, act = pi[P_FEATURES], pi[P_HIDDEN], pi[P_CLASSES], pi[P_ACT]
    lo = pi[P_NTRAIN] if test else 0
    hi = lo + (pi[P_NTEST] if test else pi[P_NTRAIN])
    if hi == lo:
        return np.nan
    z, h, logits = np.empty(H), np.empty(H), np.empty(C)
    hits = 0
    for j in range(lo, hi):
        _forward(x, A, j, p, H, C, act, z, h, logits)
        hits += np.argmax(logits) == int(b[j])
    return hits / (hi - lo)


@njit(cache=True)
def per_sample_sq_norms(x, pf, pi, A, b):
    p, H, C, act, n, lam = pi[P_FEATURES], pi[P_HIDDEN], pi[P_CLASSES], pi[P_ACT], pi[P_NTRAIN], pf[0]
    z, h, logits, d1, d2 = np.empty(H), np.empty(H), np.empty(C), np.empty(H), np.empty(C)
    ww = np.sum(x * x)
    out = np.empty(n)
    for j in range(n):
        _deltas(x, A, j, int(b[j]), p, H, C, act, z, h, logits, d1, d2)
        aa = 0.0
        for i in range(p):
            aa += A[j, i] * A[j, i]
        n2 = np.sum(d2 * d2) * (np.sum(h * h) + 1.0) + np.sum(d1 * d1) * (aa + 1.0)
        gw = np.sum(d2 * logits) + np.sum(d1 * z)
        out[j] = n2 + 2.0 * lam * gw + lam * lam * ww
    return out


def unpack(x, p, H, C):
    W1 = x[: H * p].reshape(H, p)
    b1 = x[H * p: H * p + H]
    W2 = x[H * p + H: H * p + H + C * H].reshape(C, H)
    b2 = x[H * p + H + C * H:]
    return W1, b1, W2, b2


def per_sample_grads_ref(x, pf, pi, A, b, rows, labels=None) -> np.ndarray:
    """NumPy backpropagation for the given rows, one gradient per row (materialized); ``labels``: the rows' class
    indices when not b[rows] (a Byzantine worker's flipped ones, ``--attack label-flip``)."""
    p, H, C, act = (int(pi[k]) for k in (P_FEATURES, P_HIDDEN, P_CLASSES, P_ACT))
    W1, b1, W2, b2 = unpack(x, p, H, C)
    a = A[np.asarray(rows)]
    y = (b[np.asarray(rows)] if labels is None else np.asarray(labels)).astype(int)
    z = a @ W1.T + b1
    h = np.maximum(z, 0) if act == RELU else np.tanh(z)
    logits = h @ W2.T + b2
    prob = np.exp(logits - logits.max(axis=1, keepdims=True))
    prob /= prob.sum(axis=1, keepdims=True)
    d2 = prob
    d2[np.arange(len(y)), y] -= 1
    d1 = (d2 @ W2) * ((z > 0) if act == RELU else (1 - h**2))
    gW1 = d1[:, :, None] * a[:, None, :]
    gW2 = d2[:, :, None] * h[:, None, :]
    g = np.hstack([gW1.reshape(len(y), -1), d1, gW2.reshape(len(y), -1), d2])
    return g + pf[0] * x[None, :]


def loss_ref(x, pf, pi, A, b) -> float:
    p, H, C, act, n = (int(pi[k]) for k in (P_FEATURES, P_HIDDEN, P_CLASSES, P_ACT, P_NTRAIN))
    W1, b1, W2, b2 = unpack(x, p, H, C)
    z = A[:n] @ W1.T + b1
    h = np.maximum(z, 0) if act == RELU else np.tanh(z)
    logits = h @ W2.T + b2
    top = logits.max(axis=1)
    lse = top + np.log(np.exp(logits - top[:, None]).sum(axis=1))
    return float(np.mean(lse - logits[np.arange(n), b[:n].astype(int)]) + 0.5 * pf[0] * x @ x)


def build(cfg) -> ProblemInstance:
    if cfg.activation not in ACTIVATIONS:
        raise InputError(f"--activation {cfg.activation}: choose from {', '.join(ACTIVATIONS)}")
    if cfg.hidden < 1:
        raise InputError(f"--hidden {cfg.hidden}: must be at least 1")
    loaded = load_prepared(cfg, intercept=False)
    prep = loaded.prep
    classes = np.unique(np.concatenate([prep.y_train, prep.y_test]))
    if classes.size < 2:
        raise InputError(f"--data {cfg.data}: a classifier needs at least two classes")
    y_train, y_test = np.searchsorted(classes, prep.y_train), np.searchsorted(classes, prep.y_test)
    p, H, C, act = prep.features, cfg.hidden, classes.size, ACTIVATIONS[cfg.activation]
    from signsim.problems import PROBLEM_VECTORS
    from signsim.resources import require

    dim = H * p + H + C * H + C
    require(8 * PROBLEM_VECTORS * dim, f"--hidden {H}: the network ({dim} parameters: {p} inputs, {C} classes)",
            "reduce --hidden")
    arrays = pack(prep, y_train, y_test, loaded.split, [H, C, act], [cfg.l2], cfg.dtype)
    rng = loaded.init_rng
    w1_scale = np.sqrt((2.0 if act == RELU else 1.0) / p)
    x0 = np.concatenate([w1_scale * rng.standard_normal(H * p), np.zeros(H),
                         rng.standard_normal(C * H) / np.sqrt(H), np.zeros(C)])
    pf, pi, A, b = arrays["pf"], arrays["pi"], arrays["A"], arrays["b"]
    n = prep.n_train

    def per_sample_grads(x, rows, labels=None):
        return per_sample_grads_ref(x, pf, pi, A, b, rows, labels)

    split = loaded.split
    return ProblemInstance(
        name="mlp", code=CODE, dim=x0.size, x0=x0,
        loss_ref=lambda x: loss_ref(x, pf, pi, A, b),
        grad_ref=lambda x: per_sample_grads(x, np.arange(n)).mean(axis=0),
        oracle_ref=oracle_ref_from(per_sample_grads, split, x0.size), heterogeneous=split.heterogeneous,
        finite_sum=FiniteSum(n, split, per_sample_grads, lambda x: per_sample_sq_norms(x, pf, pi, A, b), classes),
        classifier=True, flip_labels=lambda y, C=C: C - 1 - y, **arrays,
    )


SPEC = ProblemSpec(
    name="mlp", code=CODE,
    summary="one-hidden-layer network (--hidden, --activation relu|tanh), softmax cross-entropy on --data",
    options=DATA_OPTIONS | {"hidden", "activation"},
    defaults={**DATA_DEFAULTS, "data": "builtin:digits", "hidden": 32, "activation": "relu", "batch_size": 32},
    build=build, label_flip="y -> C - 1 - y (the class indices 0..C-1, ByzFL's convention)",
)
