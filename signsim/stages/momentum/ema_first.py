"""EMA momentum from the first gradient (SSDM): m_0 = g_hat(x_0), then m <- beta m + (1 - beta) g_hat; v = m
(docs/theory.md §3). beta = --momentum."""

NAME = "ema-first"
PARAMS = ()
SUMMARY = "m_0 = g_hat(x_0), then m <- beta m + (1 - beta) g_hat; v = m"
THEORY = "§8.3"
STATE = True


def kernel(k, g, m, p):
    beta = p[0]
    if k == 0:
        for i in range(m.shape[0]):  # a loop, not m[:] = g: no shape-mismatch error to compile
            m[i] = g[i]
    else:
        for i in range(m.shape[0]):
            m[i] = beta * m[i] + (1.0 - beta) * g[i]
    return m


def reference(k, g, m, p):
    if k == 0:
        m[:] = g
    else:
        m[:] = p[0] * m + (1 - p[0]) * g
    return m.copy()
