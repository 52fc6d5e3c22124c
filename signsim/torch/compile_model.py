"""The model file ``signsim compile`` runs to compile the loop of your own PyTorch models (the family ``external``:
one loop whatever the model): the smallest model file, a linear model on 64 random rows. Model files to start
from are in the repository's ``examples/`` (docs/api.md, "Your own PyTorch model"). Read as a file, never imported
by signsim."""

import numpy as np
from torch import nn


def model():
    return nn.Linear(4, 2)


def loss(output, target):
    return nn.functional.cross_entropy(output, target)


def data():
    X = np.random.default_rng(0).standard_normal((64, 4)).astype(np.float32)
    return X, (X[:, 0] > 0).astype(np.int64)
