"""A model file (docs/api.md, "Your own PyTorch model"): a small convolutional network on the 8 x 8 digits bundled
with scikit-learn, with dropout (Yin et al.'s heuristic for raising gradient diversity)."""

import numpy as np
from sklearn.datasets import load_digits
from torch import nn


def model():
    return nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.Conv2d(8, 16, 3), nn.ReLU(), nn.Flatten(),
                         nn.Dropout(0.2), nn.Linear(16 * 4 * 4, 10))


def loss(output, target):
    return nn.functional.cross_entropy(output, target)


def data():
    X, y = load_digits(return_X_y=True)
    return (X / 16.0).astype(np.float32).reshape(-1, 1, 8, 8), y.astype(np.int64)
