"""Tests for kerasflow.datasets.cifar10 / cifar100 on small fixture archives in
the binary format, served from a local HTTP server."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
from pathlib import Path

import numpy as np
import pytest

from kerasflow.backend.keras_ops import image_data_format, set_image_data_format
from kerasflow.datasets import cifar10, cifar100


def _pixels(k: int) -> np.ndarray:
    """Record k's 3072 pixel bytes: channel c, pixel p holds (k + 3c + p) % 256."""
    c = np.arange(3)[:, None]
    p = np.arange(1024)[None, :]
    return ((k + 3 * c + p) % 256).astype(np.uint8).ravel()


def _records(labels: list[tuple[int, ...]], first: int) -> bytes:
    return b"".join(bytes(lab) + _pixels(first + i).tobytes()
                    for i, lab in enumerate(labels))


def _write_tar(path: Path, members: dict[str, bytes]) -> str:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def cifar10_mirror(tmp_path, serve, monkeypatch):
    """Serves a cifar-10-binary.tar.gz of 5 x 2 training and 3 test records."""
    root = tmp_path / "served"
    root.mkdir()
    members = {
        f"cifar-10-batches-bin/data_batch_{b}.bin":
            _records([((2 * b) % 10,), ((2 * b + 1) % 10,)], first=2 * (b - 1))
        for b in range(1, 6)
    }
    members["cifar-10-batches-bin/test_batch.bin"] = _records([(9,), (0,), (5,)], 100)
    members["cifar-10-batches-bin/batches.meta.txt"] = b"airplane\n"
    digest = _write_tar(root / cifar10.ARCHIVE, members)
    monkeypatch.setitem(cifar10.SHA256, cifar10.ARCHIVE, digest)
    return serve(root)


@pytest.fixture
def cifar100_mirror(tmp_path, serve, monkeypatch):
    """Serves a cifar-100-binary.tar.gz of 4 training and 2 test records."""
    root = tmp_path / "served"
    root.mkdir()
    digest = _write_tar(root / cifar100.ARCHIVE, {
        "cifar-100-binary/train.bin": _records([(0, 99), (19, 3), (4, 50), (7, 7)], 0),
        "cifar-100-binary/test.bin": _records([(11, 42), (2, 0)], 10),
    })
    monkeypatch.setitem(cifar100.SHA256, cifar100.ARCHIVE, digest)
    return serve(root)


def test_cifar10_download_shapes_dtypes_values(isolated, cifar10_mirror):
    (x_train, y_train), (x_test, y_test) = cifar10.load_data(origin=cifar10_mirror)
    assert x_train.shape == (10, 32, 32, 3) and x_test.shape == (3, 32, 32, 3)
    assert y_train.shape == (10, 1) and y_test.shape == (3, 1)
    assert x_train.dtype == y_train.dtype == np.uint8
    assert y_train.ravel().tolist() == [2, 3, 4, 5, 6, 7, 8, 9, 0, 1]
    assert y_test.ravel().tolist() == [9, 0, 5]
    # Record 0, row 1, column 2, green: pixel 34 of channel 1 = (0 + 3 + 34).
    assert x_train[0, 1, 2, 1] == 37
    # Test record 2 (k=102), row 0, column 0, blue: (102 + 6 + 0).
    assert x_test[2, 0, 0, 2] == 108
    np.testing.assert_array_equal(
        x_train[7], _pixels(7).reshape(3, 32, 32).transpose(1, 2, 0))
    cache = isolated / ".kerasflow" / "datasets" / "cifar-10"
    assert os.listdir(cache) == [cifar10.ARCHIVE]
    # Second call: from the cache, even with an unreachable origin.
    (_, y2), _ = cifar10.load_data(origin="http://127.0.0.1:9/")
    np.testing.assert_array_equal(y2, y_train)


def test_cifar10_channels_first(isolated, cifar10_mirror):
    before = image_data_format()
    set_image_data_format("channels_first")
    try:
        (x_train, _), _ = cifar10.load_data(origin=cifar10_mirror)
    finally:
        set_image_data_format(before)
    assert x_train.shape == (10, 3, 32, 32)
    np.testing.assert_array_equal(x_train[4], _pixels(4).reshape(3, 32, 32))


def test_cifar10_env_data_dir(isolated, monkeypatch, cifar10_mirror, tmp_path):
    data = tmp_path / "data"
    cifar10.load_data(origin=cifar10_mirror, cache_dir=data / "cifar-10")
    monkeypatch.setenv("KERASFLOW_DATA_DIR", str(data))
    (x_train, _), _ = cifar10.load_data(origin="http://127.0.0.1:9/")
    assert x_train.shape == (10, 32, 32, 3)
    assert not (isolated / ".kerasflow").exists()


@pytest.mark.parametrize("mode,train,test", [
    ("fine", [99, 3, 50, 7], [42, 0]),
    ("coarse", [0, 19, 4, 7], [11, 2]),
])
def test_cifar100_label_modes(isolated, cifar100_mirror, mode, train, test):
    (x_train, y_train), (x_test, y_test) = cifar100.load_data(
        label_mode=mode, origin=cifar100_mirror)
    assert x_train.shape == (4, 32, 32, 3) and x_test.shape == (2, 32, 32, 3)
    assert x_train.dtype == np.uint8
    assert y_train.shape == (4, 1) and y_test.shape == (2, 1)
    assert y_train.dtype == np.int64
    assert y_train.ravel().tolist() == train and y_test.ravel().tolist() == test
    np.testing.assert_array_equal(
        x_test[1], _pixels(11).reshape(3, 32, 32).transpose(1, 2, 0))


def test_cifar100_bad_label_mode(isolated):
    with pytest.raises(ValueError, match="Received: label_mode=medium"):
        cifar100.load_data(label_mode="medium")


def test_cifar10_download_mismatch_says_download_again(
        isolated, cifar10_mirror, monkeypatch, tmp_path):
    monkeypatch.setitem(cifar10.SHA256, cifar10.ARCHIVE, "0" * 64)
    cache = tmp_path / "cache"
    with pytest.raises(ValueError, match="SHA-256 mismatch.*Download it again"):
        cifar10.load_data(origin=cifar10_mirror, cache_dir=cache)
    assert os.listdir(cache) == []


def test_cifar10_local_mismatch_says_delete_and_download(
        isolated, cifar10_mirror, monkeypatch, tmp_path):
    cache = tmp_path / "cache"
    cifar10.load_data(origin=cifar10_mirror, cache_dir=cache)
    archive = cache / cifar10.ARCHIVE
    archive.write_bytes(archive.read_bytes() + b"\0")
    with pytest.raises(ValueError, match="Delete it and download it again") as info:
        cifar10.load_data(origin=cifar10_mirror, cache_dir=cache)
    assert str(archive) in str(info.value)


def test_cifar_partial_record_is_refused(isolated, tmp_path, monkeypatch):
    d = tmp_path / "d"
    d.mkdir()
    digest = _write_tar(d / cifar100.ARCHIVE, {
        "cifar-100-binary/train.bin": _records([(1, 2)], 0)[:-1],
        "cifar-100-binary/test.bin": _records([(1, 2)], 0),
    })
    monkeypatch.setitem(cifar100.SHA256, cifar100.ARCHIVE, digest)
    with pytest.raises(ValueError, match="whole number of 3074-byte records, "
                                         "received 3073 bytes"):
        cifar100.load_data(path=d)


def test_cifar_missing_member_is_refused(isolated, tmp_path, monkeypatch):
    d = tmp_path / "d"
    d.mkdir()
    digest = _write_tar(d / cifar100.ARCHIVE,
                        {"cifar-100-binary/train.bin": _records([(1, 2)], 0)})
    monkeypatch.setitem(cifar100.SHA256, cifar100.ARCHIVE, digest)
    with pytest.raises(ValueError, match="'cifar-100-binary/test.bin'"):
        cifar100.load_data(path=d)


def test_cifar_published_checksums():
    # TensorFlow Datasets' url_checksums for the binary archives.
    assert cifar10.SHA256 == {"cifar-10-binary.tar.gz": (
        "c4a38c50a1bc5f3a1c5537f2155ab9d68f9f25eb1ed8d9ddda3db29a59bca1dd")}
    assert cifar100.SHA256 == {"cifar-100-binary.tar.gz": (
        "58a81ae192c23a4be8b1804d68e518ed807d710a4eb253b1f2a199162a40d8ec")}
