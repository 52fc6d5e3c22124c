"""The kernel cache's ledger (``signsim.engine.ledger``): what it records of a dispatcher, when it forgets, and that
it agrees with Numba's own cache index after a real run (the oracle: Numba's index, read in this test only)."""

from __future__ import annotations

import importlib.util
import os
import sys

import numpy as np
import pytest

import signsim
from signsim.engine import ledger

SOURCE = """
from numba import njit


@njit(cache=True)
def total(a):
    return a.sum()
"""


@pytest.fixture
def kernel_module(tmp_path, monkeypatch):
    """A module of one cached kernel in a file of its own, with a kernel cache folder of its own."""
    monkeypatch.setattr(ledger, "root", lambda: None if signsim.UNCACHED else tmp_path / "cache" / ledger.FOLDER)
    monkeypatch.setattr(signsim, "UNCACHED", None)
    path = tmp_path / "ledger_kernel.py"
    path.write_text(SOURCE)
    spec = importlib.util.spec_from_file_location("ledger_kernel", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["ledger_kernel"] = mod
    spec.loader.exec_module(mod)
    yield mod, path
    sys.modules.pop("ledger_kernel", None)


def test_what_ran_is_recorded_and_nothing_else(kernel_module):
    from numba import float32, float64, int64, types

    mod, _ = kernel_module
    f64, i64, f32 = (types.Array(t, 1, "C") for t in (float64, int64, float32))
    assert not ledger.holds(mod.total, (f64,)) and ledger.signatures_of(mod.total) == []
    mod.total(np.ones(3))
    mod.total(np.ones(3, dtype=np.int64))
    ledger.note(mod.total)
    ledger.note(mod.total)  # twice: the same two entries
    assert ledger.holds(mod.total, (f64,)) and ledger.holds(mod.total, (i64,))
    assert not ledger.holds(mod.total, (f32,))
    assert sorted(ledger.signatures_of(mod.total)) == [["array(float64, 1d, C)"], ["array(int64, 1d, C)"]]
    assert sorted(ledger.signatures("ledger_kernel", "total", mod.__file__)) == sorted(ledger.signatures_of(mod.total))


def test_an_edited_source_another_numba_python_or_cpu_forgets_as_numbas_cache_does(kernel_module, monkeypatch):
    from numba import float64, types

    mod, path = kernel_module
    mod.total(np.ones(3))
    ledger.note(mod.total)
    f64 = (types.Array(float64, 1, "C"),)
    assert ledger.holds(mod.total, f64)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # Numba's index checks the file's stamp
    assert not ledger.holds(mod.total, f64) and ledger.signatures_of(mod.total) == []
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert ledger.holds(mod.total, f64)
    monkeypatch.setattr(ledger, "_context", lambda: ["0.0.0", "cpython-311", "another CPU", ""])
    assert not ledger.holds(mod.total, f64) and ledger.signatures_of(mod.total) == []


def test_no_ledger_where_kernels_are_not_kept_and_no_error_where_it_cannot_be_written(kernel_module, monkeypatch,
                                                                                     tmp_path):
    mod, _ = kernel_module
    mod.total(np.ones(3))
    monkeypatch.setattr(signsim, "UNCACHED", (str(tmp_path / "full"),))
    ledger.note(mod.total)
    assert not (tmp_path / "cache" / ledger.FOLDER).exists()
    monkeypatch.setattr(signsim, "UNCACHED", None)
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / ledger.FOLDER).write_text("a file where the folder would be")
    ledger.note(mod.total)  # nothing written, nothing raised
    assert ledger.signatures_of(mod.total) == []


def test_after_a_run_the_ledger_lists_only_what_numbas_index_holds():
    """The run's loop is listed in the ledger (by the process that compiled it) and in Numba's own index (the
    oracle)."""
    from tests.conftest import make_engine

    engine = make_engine(iters=3)[0]
    from signsim.engine.driver import simulate

    simulate(engine)
    assert ledger.holds(engine.kernel, engine.signature)
    assert [str(t) for t in engine.signature] in ledger.signatures_of(engine.kernel)
    index = {tuple(str(t) for t in key[0]) for key in engine.kernel._cache._cache_file._load_index()}
    assert tuple(str(t) for t in engine.signature) in index
