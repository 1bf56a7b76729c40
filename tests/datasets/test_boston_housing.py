"""Tests for kerasflow.datasets.boston_housing on a fixture .npz served from a
local HTTP server."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from kerasflow.datasets import boston_housing


@pytest.fixture
def boston_mirror(tmp_path, serve, monkeypatch):
    """Serves a boston_housing.npz of 10 rows: x[i] = i * 100 + arange(13),
    y[i] = i + 0.5."""
    root = tmp_path / "served"
    root.mkdir()
    x = np.arange(10)[:, None] * 100.0 + np.arange(13)[None, :]
    y = np.arange(10) + 0.5
    np.savez(root / boston_housing.FILE, x=x, y=y)
    digest = hashlib.sha256((root / boston_housing.FILE).read_bytes()).hexdigest()
    monkeypatch.setitem(boston_housing.SHA256, boston_housing.FILE, digest)
    return serve(root)


def test_download_split_and_shuffle_as_keras(isolated, boston_mirror):
    (x_train, y_train), (x_test, y_test) = boston_housing.load_data(
        origin=boston_mirror)
    assert x_train.shape == (8, 13) and y_train.shape == (8,)
    assert x_test.shape == (2, 13) and y_test.shape == (2,)
    assert x_train.dtype == y_train.dtype == np.float64
    # Keras: RandomState(113).shuffle(arange(10)), then the first int(10 * 0.8).
    order = np.arange(10)
    np.random.RandomState(113).shuffle(order)
    np.testing.assert_array_equal(y_train, order[:8] + 0.5)
    np.testing.assert_array_equal(y_test, order[8:] + 0.5)
    np.testing.assert_array_equal(x_train[:, 0], order[:8] * 100.0)
    np.testing.assert_array_equal(x_test[:, 12], order[8:] * 100.0 + 12)
    assert (isolated / ".kerasflow" / "datasets" / "boston_housing"
            / boston_housing.FILE).is_file()


def test_test_split_and_seed(isolated, boston_mirror):
    (_, y_train), (_, y_test) = boston_housing.load_data(
        test_split=0.5, seed=1, origin=boston_mirror)
    order = np.arange(10)
    np.random.RandomState(1).shuffle(order)
    np.testing.assert_array_equal(y_train, order[:5] + 0.5)
    np.testing.assert_array_equal(y_test, order[5:] + 0.5)


def test_bad_test_split(isolated):
    with pytest.raises(ValueError, match="Received: test_split=1"):
        boston_housing.load_data(test_split=1)


def test_object_arrays_are_not_unpickled(isolated, tmp_path, monkeypatch):
    d = tmp_path / "d"
    d.mkdir()
    np.savez(d / boston_housing.FILE, x=np.array([[1], [2, 3]], dtype=object),
             y=np.zeros(2))
    digest = hashlib.sha256((d / boston_housing.FILE).read_bytes()).hexdigest()
    monkeypatch.setitem(boston_housing.SHA256, boston_housing.FILE, digest)
    with pytest.raises(ValueError, match="allow_pickle"):
        boston_housing.load_data(path=d)


def test_local_mismatch_says_delete_and_download(isolated, boston_mirror, tmp_path):
    cache = tmp_path / "cache"
    boston_housing.load_data(origin=boston_mirror, cache_dir=cache)
    (cache / boston_housing.FILE).write_bytes(b"not the file")
    with pytest.raises(ValueError, match="Delete it and download it again"):
        boston_housing.load_data(origin=boston_mirror, cache_dir=cache)


def test_keras_checksum():
    assert boston_housing.SHA256 == {"boston_housing.npz": (
        "f553886a1f8d56431e820c5b82552d9d95cfcb96d1e678153f8839538947dff5")}
