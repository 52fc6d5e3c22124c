"""LIBSVM / svmlight text files (``label index:value ...``), read with scikit-learn's reader."""

import zlib
from pathlib import Path

from signsim.data.base import Dataset, DataSource, checked
from signsim.data.files import check_dense, check_file_size, existing
from signsim.errors import InputError

#: the largest feature index (the problems index features with 32-bit integers)
MAX_INDEX = 2**31 - 2


def load(spec: str) -> Dataset:
    from sklearn.datasets import load_svmlight_file

    path = existing(spec)
    check_file_size(spec, path, 8)  # gunzipped text, then index and value arrays
    try:
        X, y = load_svmlight_file(str(path))
    except OverflowError:
        raise InputError(f"--data {spec}: a feature index is too large (at most {MAX_INDEX})") from None
    except (EOFError, OSError, zlib.error) as e:
        msg = " ".join(str(e).split()) or type(e).__name__
        raise InputError(f"--data {spec}: broken or truncated file ({msg})") from None
    except (ValueError, IndexError, TypeError, UnicodeDecodeError) as e:
        msg = " ".join(str(e).split()) or type(e).__name__
        raise InputError(f"--data {spec}: not a valid LIBSVM/svmlight file ({msg})") from None
    if X.shape[1] > MAX_INDEX:
        raise InputError(f"--data {spec}: a feature index is too large ({X.shape[1] - 1}; at most {MAX_INDEX})")
    # the problems compute with dense rows: check the size before densifying
    check_dense(spec, X.shape, what=f"the dense feature matrix (largest index {X.shape[1] - 1})")
    return checked(path.name, X.toarray(), y, f"--data {spec}")


def matches(spec: str) -> bool:
    return Path(spec).suffix.lower() in {".svm", ".svmlight", ".libsvm", ".txt", ".t", ""}


SOURCE = DataSource("libsvm", "LIBSVM/svmlight text: FILE(.svm, .libsvm, .txt or no extension)", matches, load)
