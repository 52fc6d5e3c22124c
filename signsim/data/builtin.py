"""Data sets that scikit-learn ships inside its package (no download): ``builtin:digits`` (1,797 8x8 images,
10 classes) and ``builtin:breast-cancer`` (569 samples, 30 features, 2 classes)."""

from signsim.data.base import Dataset, DataSource, checked
from signsim.errors import InputError

NAMES = {"digits": "load_digits", "breast-cancer": "load_breast_cancer"}


def load(spec: str) -> Dataset:
    import sklearn.datasets

    name = spec.removeprefix("builtin:")
    if name not in NAMES:
        raise InputError(f"--data {spec}: unknown built-in data set; choose from "
                         + ", ".join(f"builtin:{n}" for n in NAMES))
    bunch = getattr(sklearn.datasets, NAMES[name])()
    return checked(spec, bunch.data, bunch.target, f"--data {spec}")


SOURCE = DataSource("builtin", "builtin:digits, builtin:breast-cancer (shipped with scikit-learn)",
                    lambda spec: spec.startswith("builtin:"), load)
