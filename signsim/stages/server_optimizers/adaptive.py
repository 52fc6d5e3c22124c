"""What the adaptive server optimizers share (Reddi et al. 2021, Algorithm 2; docs/theory.md §12.4): with
Delta = direction, m <- beta1 m + (1 - beta1) Delta from m = 0, a second moment v from v = tau^2 (the paper's
v_{-1} >= tau^2), and the update m / (sqrt(v) + tau). ``rule`` 0 is Adam's v <- beta2 v + (1 - beta2) Delta^2,
1 Yogi's v <- v - (1 - beta2) Delta^2 sign(v - Delta^2), 2 Adagrad's v <- v + Delta^2. The defaults are the
paper's (beta1 = 0.9, beta2 = 0.99, tau = 1e-3)."""

import math

from signsim.stages.base import Param

ADAM, YOGI, ADAGRAD = 0, 1, 2


def params() -> tuple:
    return (Param("beta1", default=0.9, low=0.0, high=1.0, high_open=True),
            Param("beta2", default=0.99, low=0.0, high=1.0, high_open=True),
            Param("tau", default=1e-3, low=0.0, low_open=True, high=10.0))


def step(direction, opt, p, k, rule):
    beta1, beta2, tau = p[0], p[1], p[2]
    m, v, out = opt[0], opt[1], opt[2]
    for i in range(direction.shape[0]):
        if k == 0:
            m[i] = 0.0
            v[i] = tau * tau
        delta = direction[i]
        m[i] = beta1 * m[i] + (1.0 - beta1) * delta
        sq = delta * delta
        if rule == 0:
            v[i] = beta2 * v[i] + (1.0 - beta2) * sq
        elif rule == 1:
            diff = v[i] - sq
            sgn = 1.0 if diff > 0 else (-1.0 if diff < 0 else 0.0)
            v[i] = v[i] - (1.0 - beta2) * sq * sgn
        else:
            v[i] = v[i] + sq
        out[i] = m[i] / (math.sqrt(v[i]) + tau)
    return out


def reference(direction, opt, p, k, rule):
    import numpy as np

    beta1, beta2, tau = p[0], p[1], p[2]
    if k == 0:
        opt[0] = 0.0
        opt[1] = tau * tau
    opt[0] = beta1 * opt[0] + (1 - beta1) * direction
    sq = direction * direction
    if rule == ADAM:
        opt[1] = beta2 * opt[1] + (1 - beta2) * sq
    elif rule == YOGI:
        opt[1] = opt[1] - (1 - beta2) * sq * np.sign(opt[1] - sq)
    else:
        opt[1] = opt[1] + sq
    opt[2] = opt[0] / (np.sqrt(opt[1]) + tau)
    return opt[2].copy()
