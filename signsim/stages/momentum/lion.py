"""Lion momentum (Chen et al. 2023; docs/theory.md §8): v = beta1 m + (1 - beta1) g_hat, then
m <- beta2 m + (1 - beta2) g_hat, m_0 = 0. beta1 = --momentum, beta2 = --momentum2."""

NAME = "lion"
PARAMS = ()
SUMMARY = "v = beta1 m + (1 - beta1) g_hat, then m <- beta2 m + (1 - beta2) g_hat"
THEORY = "§8.3"
STATE = True


def kernel(k, g, m, p):
    b1 = p[0]
    b2 = p[1]
    for i in range(g.shape[0]):
        c = b1 * m[i] + (1.0 - b1) * g[i]
        m[i] = b2 * m[i] + (1.0 - b2) * g[i]
        g[i] = c
    return g


def reference(k, g, m, p):
    c = p[0] * m + (1 - p[0]) * g
    m[:] = p[1] * m + (1 - p[1]) * g
    return c
