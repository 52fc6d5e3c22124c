"""FedAdagrad (Reddi et al. 2021, Algorithm 2; docs/theory.md §12.4): with D the round's direction,
m <- beta1 m + (1 - beta1) D from m = 0, v <- v + D^2 from v = tau^2; U = m / (sqrt(v) + tau),
x <- x - eta_s gamma_k U."""

from signsim.stages.server_optimizers import adaptive

NAME = "fedadagrad"
PARAMS = adaptive.params()
SUMMARY = "m <- beta1 m + (1 - beta1) D; v <- v + D^2; U = m / (sqrt(v) + tau)"
THEORY = "§12.4"
STATE = True
RULE = adaptive.ADAGRAD


def update(direction, opt, p, k):
    return _step(direction, opt, p, k, RULE)


def reference(direction, opt, p, k):
    return adaptive.reference(direction, opt, p, k, RULE)


_step = adaptive.step  # a plain function in this module's namespace: compiled with the kernel
