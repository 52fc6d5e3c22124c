"""Loaders: every format round-trips a generated file; malformed files exit 2 with one line naming the file."""

import gzip

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.datasets import dump_svmlight_file

from signsim import data
from signsim.errors import InputError

from ..cli.test_cli import assert_one_line_error

RNG = np.random.default_rng(0)
X = np.round(RNG.normal(size=(12, 4)), 6)
Y = RNG.integers(0, 3, 12).astype(float)


def write_idx(path, arr, magic_dims, compress=False):
    header = bytes([0, 0, 0x08, magic_dims]) + b"".join(int(s).to_bytes(4, "big") for s in arr.shape)
    raw = header + arr.astype(np.uint8).tobytes()
    path.write_bytes(gzip.compress(raw) if compress else raw)


def test_svmlight_round_trip(tmp_path):
    p = tmp_path / "d.svm"
    dump_svmlight_file(X, Y, str(p))
    ds = data.load(str(p))
    np.testing.assert_allclose(ds.X, X)
    np.testing.assert_array_equal(ds.y, Y)


@pytest.mark.parametrize("compress", [False, True])
def test_csv_round_trip_with_header(tmp_path, compress):
    lines = [",".join(f"{v:.6f}" for v in [y, *row]) for y, row in zip(Y, X, strict=True)]
    text = "label,a,b,c,d\n" + "\n".join(lines) + "\n"
    p = tmp_path / ("d.csv.gz" if compress else "d.csv")
    p.write_bytes(gzip.compress(text.encode()) if compress else text.encode())
    ds = data.load(str(p))
    np.testing.assert_allclose(ds.X, X)
    np.testing.assert_array_equal(ds.y, Y)


def test_npz_round_trip(tmp_path):
    p = tmp_path / "d.npz"
    np.savez(p, X=X, y=Y)
    ds = data.load(str(p))
    np.testing.assert_array_equal(ds.X, X)


@pytest.mark.parametrize("compress", [False, True])
def test_idx_round_trip(tmp_path, compress):
    images = RNG.integers(0, 256, (6, 3, 2))
    labels = RNG.integers(0, 10, 6)
    suffix = ".gz" if compress else ""
    write_idx(tmp_path / f"train-images-idx3-ubyte{suffix}", images, 3, compress)
    write_idx(tmp_path / f"train-labels-idx1-ubyte{suffix}", labels, 1, compress)
    ds = data.load(str(tmp_path / f"train-images-idx3-ubyte{suffix}"))
    np.testing.assert_allclose(ds.X, images.reshape(6, 6) / 255.0)
    np.testing.assert_array_equal(ds.y, labels)
    explicit = data.load(f"{tmp_path}/train-images-idx3-ubyte{suffix},{tmp_path}/train-labels-idx1-ubyte{suffix}")
    np.testing.assert_array_equal(explicit.y, labels)


def test_builtin_sets_load_without_network():
    digits = data.load("builtin:digits")
    assert digits.X.shape == (1797, 64) and set(np.unique(digits.y)) == set(range(10))
    bc = data.load("builtin:breast-cancer")
    assert bc.X.shape == (569, 30)


BAD_FILES = [
    ("bad.csv", b"1,2,3\n4,five,6\n", ("bad.csv", "line 2", "field 2")),
    ("ragged.csv", b"1,2,3\n4,5\n", ("ragged.csv", "line 2")),
    ("nan.csv", b"1,2,3\n4,nan,6\n", ("nan.csv", "line 2")),
    ("empty.csv", b"", ("empty.csv", "no data")),
    ("bad.svm", b"1 1:0.5 2:x\n", ("bad.svm",)),
    ("bad.npz", b"not a zip", ("bad.npz",)),
    ("missing.npz", None, ("missing.npz", "no such file")),
    ("train-images-idx3-ubyte", b"\x00\x00\x08\x03\x00\x00\x00\x02", ("train-images-idx3-ubyte",)),
]


@pytest.mark.parametrize(("name", "content", "words"), BAD_FILES)
def test_malformed_files_exit_2(cli, tmp_path, name, content, words):
    p = tmp_path / name
    if content is not None:
        p.write_bytes(content)
    r = cli("run", "--problem", "least-squares", "--data", p, "--iters", "1")
    assert_one_line_error(r, *words)


@pytest.mark.parametrize(("arrays", "words"), [
    ({"X": np.ones((3, 2)), "y": np.ones(4)}, ("3 rows of X but 4 labels",)),
    ({"X": np.ones((3, 2))}, ("missing array 'y'",)),
    ({"X": np.array([[1.0, np.inf]]), "y": np.ones(1)}, ("non-finite",)),
    ({"X": np.ones(3), "y": np.ones(3)}, ("2-d",)),
    ({"X": np.array([["a", "b"]]), "y": np.ones(1)}, ("not numeric",)),
])
def test_inconsistent_npz_exits_2(cli, tmp_path, arrays, words):
    p = tmp_path / "bad.npz"
    np.savez(p, **arrays)
    assert_one_line_error(cli("run", "--problem", "least-squares", "--data", p, "--iters", "1"), "bad.npz", *words)


def test_unknown_builtin_and_split_exit_2(cli):
    assert_one_line_error(cli("run", "--problem", "logistic", "--data", "builtin:mnist"), "builtin:mnist")
    assert_one_line_error(cli("run", "--problem", "logistic", "--split", "dirichlet"), "--split")
    assert_one_line_error(cli("run", "--problem", "logistic", "--split", "label-skew:-1"), "--split")
    assert_one_line_error(cli("run", "--problem", "rosenbrock", "--data", "builtin:digits"), "--data")


TEXT = st.text(alphabet=st.sampled_from(list("0123456789.,-+e: \n\tabnif")), max_size=200)


@given(content=TEXT, suffix=st.sampled_from([".csv", ".svm"]))
def test_generated_text_files_load_or_fail_cleanly(tmp_path, content, suffix):
    """Any text either loads into a consistent, finite data set or raises InputError naming the file."""
    p = tmp_path / f"gen{suffix}"
    p.write_text(content)
    try:
        ds = data.load(str(p))
    except InputError as e:
        assert str(p) in str(e) and "\n" not in str(e)
        return
    assert ds.X.shape[0] == ds.y.shape[0] > 0
    assert np.isfinite(ds.X).all() and np.isfinite(ds.y).all()
