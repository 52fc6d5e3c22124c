"""EMA momentum (Signum): m <- beta m + (1 - beta) g_hat, m_0 = 0; v = m (docs/theory.md §2). beta = --momentum."""

NAME = "ema"
PARAMS = ()
SUMMARY = "m <- beta m + (1 - beta) g_hat from m_0 = 0; v = m"
THEORY = "§8.3"
STATE = True  # one vector of length d per worker


def kernel(k, g, m, p):
    beta = p[0]
    for i in range(m.shape[0]):
        m[i] = beta * m[i] + (1.0 - beta) * g[i]
    return m


def reference(k, g, m, p):
    m[:] = p[0] * m + (1 - p[0]) * g
    return m.copy()
