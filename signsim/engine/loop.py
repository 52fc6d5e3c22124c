"""The compiled iteration loop: every iteration of a run happens inside ``run_chunk`` (math.md §2).

One iteration k, for each worker m (in parallel over workers when ``parallel`` is set):

    g   = oracle_m(x) + mean of tau noise draws          (problem kernel, then noise kernel)
    v   = g, or m_m <- beta m_m + (1 - beta) g  (m_0 = g for SSDM)
    msg = C(v), or for error feedback p = gamma_k v + e_m, msg = (||p||_1/d) sign p, e_m <- p - msg
    msg = attack(msg)                                    (the first ``n_byzantine`` workers only)

then the server sums the messages coordinate by coordinate in worker order (so the result does not depend
on the thread count), turns the sum into the broadcast (mean, or majority vote with its tie rule), and
x <- x - gamma_k * broadcast (x <- x - broadcast for error feedback, whose gamma sits inside the message);
with ``monotone`` the step is taken only if it does not increase f (signSGD's "option 2").

Each worker draws only from its own generator, the server only from its own, so a run is reproducible
whatever the number of Numba threads. The driver calls ``run_chunk`` for consecutive ranges of iterations
(the state lives in the arrays it passes), which lets a progress bar and Ctrl-C act between chunks.
"""

import numpy as np
from numba import njit, prange

from signsim.codes import Compressor, Schedule, Status
from signsim.engine.compress import attack_row, compress_row, finish_aggregate
from signsim.engine.dispatch import add_noise, problem_accuracy, problem_loss, problem_loss_grad, problem_oracle

# integer settings, in this order, in the ``icfg`` array
I_COMPRESSOR, I_AGGREGATE, I_SIGN_ZERO, I_TIE, I_SCHEDULE, I_BYZANTINE, I_ATTACK, I_EVAL_EVERY = range(8)
I_MOMENTUM, I_MOMENTUM_FIRST, I_PARALLEL, I_TAU, I_PROBLEM, I_NOISE, I_MONOTONE = range(8, 15)
N_ICFG = 15
# float settings in ``fcfg``
F_LR, F_BETA, F_STOP_LOSS = 0, 1, 2
N_FCFG = 3
# ``counters``: history rows written, iterations completed
C_ROWS, C_DONE = 0, 1
# history columns
H_ITER, H_LOSS, H_GRAD_L2, H_GRAD_L1, H_DIST, H_EXTRA, H_TRAIN_ACC, H_TEST_ACC = range(8)
N_HIST = 8


@njit(cache=True)
def step_size(schedule, lr0, k):
    """gamma_k = gamma_0 (constant) or gamma_0 / sqrt(k + 1) (sqrt), math.md §2."""
    if schedule == Schedule.SQRT:
        return lr0 / np.sqrt(k + 1.0)
    return lr0


@njit(cache=True, inline="always")
def worker_step(m, k, lr, x, mom, err, G, msg, gen, pf, pi, A, b, ptr, idx, nparams, icfg, beta):
    g = G[m]
    problem_oracle(icfg[I_PROBLEM], x, m, gen, icfg[I_TAU], pf, pi, A, b, ptr, idx, g)
    add_noise(icfg[I_NOISE], nparams, gen, icfg[I_TAU], g)
    v = g
    if icfg[I_MOMENTUM]:
        v = mom[m]
        if k == 0 and icfg[I_MOMENTUM_FIRST]:
            v[:] = g
        else:
            for i in range(v.shape[0]):
                v[i] = beta * v[i] + (1.0 - beta) * g[i]
    out = msg[m]
    if icfg[I_COMPRESSOR] == Compressor.SCALED_SIGN_EF:
        e = err[m]
        for i in range(e.shape[0]):
            e[i] += lr * v[i]
        compress_row(Compressor.SCALED_SIGN_EF, e, out, icfg[I_SIGN_ZERO], gen)
        for i in range(e.shape[0]):
            e[i] -= out[i]
    else:
        compress_row(icfg[I_COMPRESSOR], v, out, icfg[I_SIGN_ZERO], gen)
    if m < icfg[I_BYZANTINE]:
        attack_row(icfg[I_ATTACK], out, gen)


@njit(cache=True)
def record(k, x, err, gbuf, pf, pi, A, b, icfg, fcfg, x_star, hist, counters):
    """Append one history row at iterate x_k; return Status.DIVERGED when the loss or the iterate is not
    finite, Status.TARGET when the loss is at or below the stop-loss target, else Status.OK."""
    loss = problem_loss_grad(icfg[I_PROBLEM], x, pf, pi, A, b, gbuf)
    l1 = 0.0
    l2 = 0.0
    for i in range(gbuf.shape[0]):
        l1 += abs(gbuf[i])
        l2 += gbuf[i] * gbuf[i]
    dist = np.nan
    if x_star.shape[0] > 0:
        dist = 0.0
        for i in range(x.shape[0]):
            dist += (x[i] - x_star[i]) ** 2
        dist = np.sqrt(dist)
    extra = np.nan
    if icfg[I_COMPRESSOR] == Compressor.SCALED_SIGN_EF:  # mean over workers of ||e_m||_2
        extra = 0.0
        for m in range(err.shape[0]):
            extra += np.sqrt(np.sum(err[m] ** 2))
        extra /= err.shape[0]
    r = counters[C_ROWS]
    hist[r, H_ITER] = k
    hist[r, H_LOSS] = loss
    hist[r, H_GRAD_L2] = np.sqrt(l2)
    hist[r, H_GRAD_L1] = l1
    hist[r, H_DIST] = dist
    hist[r, H_EXTRA] = extra
    hist[r, H_TRAIN_ACC] = problem_accuracy(icfg[I_PROBLEM], x, pf, pi, A, b, False)
    hist[r, H_TEST_ACC] = problem_accuracy(icfg[I_PROBLEM], x, pf, pi, A, b, True)
    counters[C_ROWS] = r + 1
    if not (np.isfinite(loss) and np.isfinite(l2) and np.all(np.isfinite(x))):
        return Status.DIVERGED
    if loss <= fcfg[F_STOP_LOSS]:
        return Status.TARGET
    return Status.OK


@njit(cache=True, parallel=True, nogil=True)  # nogil: the driver keeps handling signals while a chunk runs
def run_chunk(k0, k1, K, x, mom, err, G, msg, agg, gbuf, gens, server_gen,
              pf, pi, A, b, ptr, idx, nparams, icfg, fcfg, x_star, hist, counters):
    """Run iterations k0 <= k < k1 of a K-iteration run; record history every ``eval_every`` iterations
    and at k = K. Returns a Status; ``counters`` holds the rows written and the iterations completed."""
    M, d = G.shape
    lr0 = fcfg[F_LR]
    beta = fcfg[F_BETA]
    every = icfg[I_EVAL_EVERY]
    ef = icfg[I_COMPRESSOR] == Compressor.SCALED_SIGN_EF
    for k in range(k0, k1):
        if k % every == 0:
            status = record(k, x, err, gbuf, pf, pi, A, b, icfg, fcfg, x_star, hist, counters)
            if status != Status.OK:
                return status
        lr = step_size(icfg[I_SCHEDULE], lr0, k)
        if icfg[I_PARALLEL]:
            for m in prange(M):
                worker_step(m, k, lr, x, mom, err, G, msg, gens.getitem_unchecked(m), pf, pi, A, b, ptr, idx,
                            nparams, icfg, beta)
            for i in prange(d):
                s = 0.0
                for m in range(M):
                    s += msg[m, i]
                agg[i] = s
        else:
            for m in range(M):
                worker_step(m, k, lr, x, mom, err, G, msg, gens.getitem_unchecked(m), pf, pi, A, b, ptr, idx,
                            nparams, icfg, beta)
            for i in range(d):
                s = 0.0
                for m in range(M):
                    s += msg[m, i]
                agg[i] = s
        finish_aggregate(icfg[I_AGGREGATE], M, agg, icfg[I_TIE], server_gen)
        scale = 1.0 if ef else lr
        if icfg[I_MONOTONE]:
            # signSGD "option 2": x <- argmin{f(x), f(x - step)}; G[0] is free scratch until the next iteration
            trial = G[0]
            for i in range(d):
                trial[i] = x[i] - scale * agg[i]
            if problem_loss(icfg[I_PROBLEM], trial, pf, pi, A, b) <= problem_loss(icfg[I_PROBLEM], x, pf, pi, A, b):
                for i in range(d):
                    x[i] = trial[i]
        else:
            for i in range(d):
                x[i] -= scale * agg[i]
        counters[C_DONE] = k + 1
    if k1 == K:
        return record(K, x, err, gbuf, pf, pi, A, b, icfg, fcfg, x_star, hist, counters)
    return Status.OK
