"""The options docs/theory.md §8.6 names as reproducing a peer's convention do reproduce it: signsim's run against a
NumPy transcription of the peer's update, written from the peer's source (cited per test), on the noiseless
diagonal quadratic f = 1/2 sum L_i x_i^2 (gradient L * x) from a start with zero coordinates, where the sign(0)
convention matters."""

import numpy as np

from signsim import api

DIM = 5
X0 = [0.0, 0.5, -1.0, 2.0, 0.0]
ITERS = 60


def _L():
    return np.geomspace(1.0, 10.0, DIM)  # the quadratic's L_i, log-spaced in [1, kappa] (docs/theory.md §5)


def _run(**options):
    r = api.run(problem="quadratic", dim=DIM, kappa=10.0, noise="none", workers=1, iters=ITERS, x0=X0,
                **options)
    return np.asarray(r["x_final"], dtype=float)


def optax_lion(lr: float, iters: int, b1=0.9, b2=0.99, weight_decay=1e-3) -> np.ndarray:
    """optax.lion's defaults (optax/_src/alias.py ``lion``: chain(scale_by_lion(b1, b2), add_decayed_weights(wd),
    scale_by_learning_rate(lr))) and optax/_src/transform.py ``scale_by_lion`` (mode 'hard'): mu_0 = 0;
    c = (1 - b1) g + b1 mu; u = sign(c) with jnp.sign (sign(0) = 0); mu <- b2 mu + (1 - b2) g;
    x <- x - lr (u + wd x)."""
    L, x, mu = _L(), np.array(X0, dtype=float), np.zeros(DIM)
    for _ in range(iters):
        g = L * x
        u = np.sign((1.0 - b1) * g + b1 * mu)
        mu = b2 * mu + (1.0 - b2) * g
        x = x - lr * (u + weight_decay * x)
    return x


def grace_signum(lr: float, iters: int, momentum=0.9) -> np.ndarray:
    """GRACE's Signum (grace_dl/torch/compressor/signum.py ``SignumCompressor.compress``): the first call stores
    the gradient itself as the momentum, later calls (1 - beta) g + beta m; the message is tensor >= 0 decoded
    to +-1 (sign(0) = +1); ``aggregate`` takes sum >= 0 (a tie to +1); one worker here."""
    L, x, m = _L(), np.array(X0, dtype=float), None
    for _ in range(iters):
        g = L * x
        m = g if m is None else (1.0 - momentum) * g + momentum * m
        x = x - lr * np.where(m >= 0, 1.0, -1.0)
    return x


def test_lion_with_sign_zero_zero_matches_optax():
    lr = 0.01
    ours = _run(method="lion", lr=lr, sign_zero="zero", tie="zero", weight_decay=1e-3)
    np.testing.assert_allclose(ours, optax_lion(lr, ITERS), rtol=0, atol=1e-15)
    assert ours[0] == 0.0 and ours[4] == 0.0  # sign(0) = 0 keeps the zero coordinates where they are


def test_lion_defaults_differ_from_optax():
    """signsim's defaults (a random sign(0) and tie, no weight decay) are not optax's."""
    ours = _run(method="lion", lr=0.01)
    assert not np.allclose(ours, optax_lion(0.01, ITERS), rtol=0, atol=1e-6)


def test_signum_from_the_first_gradient_matches_grace():
    lr = 0.7  # large enough that the first gradient's weight beta^k in the momentum changes some signs
    ours = _run(method="ssdm", compressor="sign", aggregate="majority", sign_zero="plus", lr=lr, momentum=0.9)
    np.testing.assert_allclose(ours, grace_signum(lr, ITERS), rtol=0, atol=1e-15)
    # signsim's own signum starts its momentum at 0: a different run
    theirs = _run(method="signum", sign_zero="plus", lr=lr, momentum=0.9)
    assert not np.allclose(theirs, ours, rtol=0, atol=1e-6)
