"""Noisy signs of the local model change (docs/theory.md §12.7): FedAvg whose clients send sign(Delta + sigma xi),
Delta = x - y^H their model change after H local steps and xi uniform on [-1, 1] or standard normal, and whose
server steps x <- x - eta mean(signs), written out here in NumPy from the worker streams' convention (§2.4), against
the composition --local-steps H --compressor noisy-sign:[uniform:]sigma/gamma --aggregate mean --server-lr eta/gamma."""

from __future__ import annotations

import numpy as np
import pytest

import signsim
from signsim.seeding import WorkerStreams


@pytest.mark.parametrize("noise", ["uniform", "gaussian"])
def test_noisy_sign_of_the_model_change_equals_the_composition(noise):
    # every worker's f_m(y) = y^T A y / 2 with exact gradients (no draws), so the only draws are the compressor's:
    # worker m's stream, one per coordinate in coordinate order, round after round
    M, H, gamma, sigma, eta, iters, d = 4, 3, 0.05, 0.5, 0.01, 8, 5
    spec = f"noisy-sign:{noise}:{sigma / gamma!r}"
    r = signsim.run(problem="quadratic", dim=d, kappa=10, noise="none", x0=1.0, method="signsgd", compressor=spec,
                    aggregate="mean", workers=M, local_steps=H, lr=gamma, server_lr=eta / gamma, iters=iters, seed=3)
    A = np.logspace(0.0, 1.0, d)
    streams = WorkerStreams(3)
    x, split = np.ones(d), 0
    for _ in range(iters):
        signs = []
        for m in range(M):
            y = x.copy()
            for _ in range(H):
                y = y - gamma * A * y
            gen = streams[m]
            xi = np.array([2.0 * gen.random() - 1.0 if noise == "uniform" else gen.standard_normal()
                           for _ in range(d)])
            signs.append(np.sign(x - y + sigma * xi))
        split += int(np.sum(np.abs(np.sum(signs, axis=0)) < M))  # coordinates on which the workers disagree
        x = x - eta * np.mean(signs, axis=0)
    assert split > iters * d // 4  # the noise decides many signs (|Delta_i| is 0.14 to 0.88, sigma 0.5)
    np.testing.assert_allclose(np.asarray(r.to_dict()["x_final"]), x, rtol=1e-12, atol=1e-14)
    assert r.to_dict()["final"]["bits_up"] == iters * M * d  # one bit a coordinate up

