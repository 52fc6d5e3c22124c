"""Server momentum (FedAvgM, Hsu et al. 2019; docs/theory.md §12.4): v <- beta v + direction from v = 0;
x <- x - eta_s gamma_k v."""

from signsim.stages.base import Param

NAME = "fedavgm"
PARAMS = (Param("beta", default=0.9, low=0.0, high=1.0, high_open=True),)
SUMMARY = "v <- beta v + direction from v = 0; x <- x - eta_s gamma_k v"
THEORY = "§12.4"
STATE = True


def update(direction, opt, p, k):
    beta = p[0]
    v = opt[0]
    for i in range(direction.shape[0]):
        v[i] = beta * v[i] + direction[i]
    return v


def reference(direction, opt, p, k):
    opt[0] = p[0] * opt[0] + direction
    return opt[0].copy()
