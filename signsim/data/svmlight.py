"""LIBSVM / svmlight text files (``label index:value ...``), read with scikit-learn's reader."""

from pathlib import Path

from signsim.data.base import Dataset, DataSource, checked
from signsim.data.files import existing
from signsim.errors import InputError


def load(spec: str) -> Dataset:
    from sklearn.datasets import load_svmlight_file

    path = existing(spec)
    try:
        X, y = load_svmlight_file(str(path))
    except (ValueError, IndexError, TypeError, UnicodeDecodeError) as e:
        msg = " ".join(str(e).split()) or type(e).__name__
        raise InputError(f"--data {spec}: not a valid LIBSVM/svmlight file ({msg})") from None
    return checked(path.name, X.toarray(), y, f"--data {spec}")


def matches(spec: str) -> bool:
    return Path(spec).suffix.lower() in {".svm", ".svmlight", ".libsvm", ".txt", ".t", ""}


SOURCE = DataSource("libsvm", "LIBSVM/svmlight text: FILE(.svm, .libsvm, .txt or no extension)", matches, load)
