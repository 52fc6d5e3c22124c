"""CSV files with the label in the first column and one sample per line. A first line that is not numeric
(and holds only printable text) is taken as a header; blank lines are skipped. Errors name the line and the field."""

import csv

import numpy as np

from signsim.data.base import Dataset, DataSource, checked
from signsim.data.files import existing, read_bytes
from signsim.errors import InputError


def load(spec: str) -> Dataset:
    path = existing(spec)
    try:
        text = read_bytes(path, spec).decode("utf-8-sig")  # a leading byte-order mark is not part of the first field
    except UnicodeDecodeError:
        raise InputError(f"--data {spec}: not a UTF-8 text file") from None
    check_text_size(spec, len(text))
    rows: list[list[float]] = []
    width = None
    reader = csv.reader(text.splitlines())
    for lineno, fields in _numbered(reader, spec):
        if not fields or all(not f.strip() for f in fields):
            continue
        try:
            values = [float(f) for f in fields]
        except ValueError:
            if not rows and lineno == 1 and _is_header(fields):
                continue  # header
            bad = next(i for i, f in enumerate(fields) if not _is_number(f))
            raise InputError(f"--data {spec}: line {lineno}, field {bad + 1}: '{fields[bad].strip()}' is not a "
                             "number") from None
        if width is None:
            width = len(values)
            if width < 2:
                raise InputError(f"--data {spec}: line {lineno}: need a label and at least one feature")
        elif len(values) != width:
            raise InputError(f"--data {spec}: line {lineno}: {len(values)} fields, expected {width}")
        if not all(np.isfinite(values)):
            bad = next(i for i, v in enumerate(values) if not np.isfinite(v))
            raise InputError(f"--data {spec}: line {lineno}, field {bad + 1}: non-finite value")
        rows.append(values)
    if not rows:
        raise InputError(f"--data {spec}: no data rows")
    a = np.array(rows)
    return checked(path.name, a[:, 1:], a[:, 0], f"--data {spec}")


def check_text_size(spec: str, chars: int) -> None:
    """Parsing keeps a Python float (32 bytes) per number of at least 2 characters, then the array."""
    from signsim.resources import require

    require(chars * 20, f"--data {spec}: parsing the CSV text", "use a smaller file")


def _numbered(reader, spec: str):
    """(line number, fields) pairs; a line the csv module cannot split becomes an InputError."""
    lineno = 0
    while True:
        lineno += 1
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise InputError(f"--data {spec}: line {lineno}: {e}") from None
        yield lineno, fields


def _is_header(fields: list[str]) -> bool:
    """A first line of printable names (column titles): no control character such as a NUL byte, which would
    make a damaged data row look like a header and drop it silently."""
    return all(c.isprintable() or c == "\t" for f in fields for c in f)


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


SOURCE = DataSource("csv", "CSV, label in the first column: FILE.csv (optionally .csv.gz)",
                    lambda spec: spec.lower().endswith((".csv", ".csv.gz")), load)
