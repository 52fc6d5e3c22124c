"""A model file (docs/api.md, "Your own PyTorch model"): a one-hidden-layer network on the 8 x 8 digits bundled with
scikit-learn. ``signsim run --model examples/digits_mlp.py --method signum --workers 16 --lr 0.001``."""

import numpy as np
from sklearn.datasets import load_digits
from torch import nn


def model():  # a fresh torch.nn.Module; its parameters are x (floating point, one dtype)
    return nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))


def loss(output, target):  # a scalar tensor: the MEAN loss over the batch
    return nn.functional.cross_entropy(output, target)


def data():  # (X, y) or (X_train, y_train, X_test, y_test): arrays or tensors, a row per sample
    X, y = load_digits(return_X_y=True)
    return (X / 16.0).astype(np.float32), y.astype(np.int64)
