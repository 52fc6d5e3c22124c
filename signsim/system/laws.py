"""The laws of a worker property in a system model (docs/theory.md §14.1): ``--compute``, ``--uplink`` and
``--downlink`` each take one.

- ``const:V``: every worker V;
- ``lognormal:V:SIGMA``: worker m's value V exp(SIGMA z_m), z_m standard normal, drawn once per run from the run's
  seed (its own stream for each property: ``signsim.seeding.system_stream``), so V is the median;
- ``trace:FILE.csv``: a CSV file with a header row naming its columns (``compute``, ``uplink``, ``downlink``; others
  are ignored) and one row per worker, in worker order: worker m takes row m (at least M rows; more are not read;
  blank lines are skipped), in the spirit of FedScale's device traces.

Pure Python and NumPy; a bad spec or file raises InputError naming what the user wrote.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass

import numpy as np

from signsim.errors import InputError
from signsim.numbers import to_float

#: the properties, in the order of the engine's per-worker rows (``signsim.engine.clock``), each with its unit
PROPERTIES = {"compute": "seconds per gradient", "uplink": "bits per second", "downlink": "bits per second"}
FORMS = "const:V | lognormal:V:SIGMA | trace:FILE.csv"


@dataclass(frozen=True)
class Law:
    """One property's law: ``kind`` const | lognormal | trace, its value V and SIGMA, or the trace file's path."""

    kind: str
    value: float = 0.0
    sigma: float = 0.0
    path: str = ""
    text: str = ""  # as the user wrote it ("" for a default)

    @property
    def spec(self) -> str:
        if self.kind == "trace":
            return f"trace:{self.path}"
        if self.text:
            return self.text
        if self.kind == "lognormal":
            return f"lognormal:{self.value!r}:{self.sigma!r}"
        return f"const:{self.value!r}"


def parse(prop: str, spec: str) -> Law:
    """The law of ``--prop spec``; InputError for a bad one. Compute times may be 0 (the messages alone take
    time); bandwidths must be > 0 (``inf``: an unlimited link)."""
    where = f"--{prop} {spec}"
    head, _, rest = str(spec).partition(":")
    if head == "trace":
        if not rest:
            raise InputError(f"{where}: give the trace file, trace:FILE.csv")
        from signsim.paths import home_expanded, input_file

        path = home_expanded(rest, f"--{prop}").absolute()  # absolute: a sweep's workers read the same file
        input_file(path, where, per_byte=0)  # (read row by row, M rows)
        return Law("trace", path=str(path))
    if head not in ("const", "lognormal"):
        raise InputError(f"{where}: not a law; give {FORMS}")
    parts = rest.split(":") if rest else []
    if len(parts) != (1 if head == "const" else 2):
        raise InputError(f"{where}: {head} takes {'V' if head == 'const' else 'V:SIGMA'} ({FORMS})")
    try:
        nums = [to_float(t) for t in parts]
    except ValueError:
        raise InputError(f"{where}: not a number in it ({FORMS})") from None
    value = nums[0]
    check_value(prop, value, where)
    sigma = nums[1] if head == "lognormal" else 0.0
    if not (0.0 <= sigma < math.inf):
        raise InputError(f"{where}: SIGMA must be a finite number >= 0")
    if head == "lognormal" and not 0.0 < value < math.inf:
        raise InputError(f"{where}: the median V of a lognormal law must be finite and > 0")
    return Law(head, value, sigma, text=str(spec))


def check_value(prop: str, value: float, where: str) -> None:
    if prop == "compute":
        if not 0.0 <= value < math.inf:
            raise InputError(f"{where}: a compute time must be a finite number of seconds >= 0")
    elif not 0.0 < value <= math.inf or math.isnan(value):
        raise InputError(f"{where}: a bandwidth must be a number of bits per second > 0 (inf: unlimited)")


def values(prop: str, law: Law, M: int, gen: np.random.Generator) -> np.ndarray:
    """Each of the M workers' value of ``prop`` under ``law`` (``gen``: the property's own stream)."""
    if law.kind == "const":
        return np.full(M, law.value)
    if law.kind == "lognormal":
        return law.value * np.exp(law.sigma * gen.standard_normal(M))
    return read_trace(prop, law.path, M)


def read_trace(prop: str, path: str, M: int) -> np.ndarray:
    """Column ``prop`` of the trace file, rows 1..M (the header row first); InputError naming the file for a
    missing column, too few rows or a bad value."""
    from signsim.paths import input_file

    where = f"--{prop} trace:{path}"
    input_file(path, where, per_byte=0)  # (read row by row, M rows)
    out = np.empty(M)
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:  # (a byte-order mark, as spreadsheets write it)
            reader = csv.reader(f)
            header = [h.strip() for h in next(reader, [])]
            if prop not in header:
                raise InputError(f"{where}: no column '{prop}' in its header row ({', '.join(header) or 'empty'})")
            col = header.index(prop)
            n = 0
            for row in reader:
                if n == M:
                    break
                if not row:
                    continue
                cell = row[col] if col < len(row) else ""
                try:
                    value = to_float(cell)
                except ValueError:
                    raise InputError(f"{where}: line {reader.line_num}: '{cell}' is not a number") from None
                check_value(prop, value, f"{where}: line {reader.line_num}")
                out[n] = value
                n += 1
    except UnicodeDecodeError:
        raise InputError(f"{where}: not a UTF-8 text file") from None
    except csv.Error as e:
        raise InputError(f"{where}: not a CSV file ({e})") from None
    if n < M:
        raise InputError(f"{where}: {n} worker rows, the run has {M} workers (one row per worker)")
    return out
