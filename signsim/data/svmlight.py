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
        where = first_bad_line(path) or "a feature index is too large"
        raise InputError(f"--data {spec}: {where} (at most {MAX_INDEX})") from None
    except (EOFError, OSError, zlib.error) as e:
        msg = " ".join(str(e).split()) or type(e).__name__
        raise InputError(f"--data {spec}: broken or truncated file ({msg})") from None
    except (ValueError, IndexError, TypeError, UnicodeDecodeError) as e:
        where = first_bad_line(path)
        msg = " ".join(str(e).split()) or type(e).__name__
        raise InputError(f"--data {spec}: {where or 'not a valid LIBSVM/svmlight file'} ({msg})") from None
    if X.shape[1] > MAX_INDEX:
        raise InputError(f"--data {spec}: a feature index is too large ({X.shape[1] - 1}; at most {MAX_INDEX})")
    if X.nnz == 0 and not has_features(path):
        raise InputError(f"--data {spec}: no features: every line holds only a label (expected lines "
                         "LABEL INDEX:VALUE ...)")
    # the problems compute with dense rows: check the size before densifying
    check_dense(spec, X.shape, what=f"the dense feature matrix (largest index {X.shape[1] - 1})")
    return checked(path.name, X.toarray(), y, f"--data {spec}")


def _lines(path: Path):
    """(line number, fields) of the file's non-empty lines, comments removed (gunzipped if need be)."""
    import gzip

    with open(path, "rb") as f:
        gzipped = f.read(2) == b"\x1f\x8b"
    with (gzip.open if gzipped else open)(path, "rb") as f:
        for lineno, raw in enumerate(f, start=1):
            fields = raw.split(b"#", 1)[0].decode("utf-8").split()
            if fields:
                yield lineno, fields


def first_bad_line(path: Path) -> str | None:
    """``line N, field F: what`` for the first line the format does not allow, when one can be named."""
    try:
        for lineno, fields in _lines(path):
            for i, field in enumerate(fields, start=1):
                what = _bad_field(field, i == 1)
                if what:
                    return f"line {lineno}, field {i}: '{field[:40]}' {what}"
    except (OSError, EOFError, zlib.error, UnicodeDecodeError):
        return None
    return None


def has_features(path: Path) -> bool:
    """Some line holds an INDEX:VALUE field (a feature, even of value 0), not only its label."""
    try:
        return any(":" in f and not f.startswith("qid:") for _, fields in _lines(path) for f in fields[1:])
    except (OSError, EOFError, zlib.error, UnicodeDecodeError):
        return True  # the reader read it: let its result stand


def _bad_field(field: str, label: bool) -> str | None:
    if label:
        try:
            float(field)
        except ValueError:
            return "is not a numeric label"
        return None
    index, sep, value = field.partition(":")
    if not sep:
        return "is not INDEX:VALUE"
    if index == "qid":
        return None
    if not index.isdigit():
        return "has an index that is not a non-negative integer"
    if int(index) > MAX_INDEX:
        return "has a feature index that is too large"
    try:
        float(value)
    except ValueError:
        return "has a value that is not a number"
    return None


def matches(spec: str) -> bool:
    return Path(spec).suffix.lower() in {".svm", ".svmlight", ".libsvm", ".txt", ".t", ""}


SOURCE = DataSource("libsvm", "LIBSVM/svmlight text: FILE(.svm, .libsvm, .txt or no extension)", matches, load)
