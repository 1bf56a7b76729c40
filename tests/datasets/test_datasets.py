"""Tests for kerasflow.datasets (MNIST, Fashion-MNIST, imdb, reuters) and the
shared loader (IDX files, downloads, checksums)."""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import socket
import struct
from pathlib import Path

import numpy as np
import pytest

from kerasflow.datasets import _loader, fashion_mnist, imdb, mnist, reuters

FILES = _loader.FILES
MNIST_TRAIN_COUNTS = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
MNIST_TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


def _find_data_dir() -> Path | None:
    env = os.environ.get("KERASFLOW_DATA_DIR")
    candidates = [Path(env)] if env else []
    root = Path(__file__).resolve().parents[2]
    candidates += [root / ".." / "shared" / "data", root / "shared" / "data"]
    for c in candidates:
        if (c / "mnist").is_dir() and (c / "fashion-mnist").is_dir():
            return c.resolve()
    return None


@pytest.fixture(scope="module")
def data_dir() -> Path:
    d = _find_data_dir()
    if d is None:
        pytest.skip("MNIST data not found: set KERASFLOW_DATA_DIR")
    return d


@pytest.fixture(scope="module")
def mnist_data(data_dir):
    return mnist.load_data(path=data_dir / "mnist")


@pytest.fixture(scope="module")
def fashion_data(data_dir):
    return fashion_mnist.load_data(path=data_dir / "fashion-mnist")


@pytest.fixture(scope="module")
def mirror(data_dir, tmp_path_factory, serve) -> str:
    """A local server serving a copy of the shared data (mnist, fashion-mnist)."""
    root = tmp_path_factory.mktemp("mirror")
    for name in ("mnist", "fashion-mnist"):
        shutil.copytree(data_dir / name, root / name)
    return serve(root)


# --------------------------------------------------------------------- real data


def test_mnist_shapes_and_dtypes(mnist_data):
    (x_train, y_train), (x_test, y_test) = mnist_data
    assert x_train.shape == (60000, 28, 28) and x_train.dtype == np.uint8
    assert y_train.shape == (60000,) and y_train.dtype == np.uint8
    assert x_test.shape == (10000, 28, 28) and x_test.dtype == np.uint8
    assert y_test.shape == (10000,) and y_test.dtype == np.uint8
    assert x_train.flags.writeable


def test_mnist_label_counts(mnist_data):
    (_, y_train), (_, y_test) = mnist_data
    assert np.bincount(y_train, minlength=10).tolist() == MNIST_TRAIN_COUNTS
    assert np.bincount(y_test, minlength=10).tolist() == MNIST_TEST_COUNTS


def _moments(x: np.ndarray) -> tuple[float, float]:
    """Exact mean/std of x / 255 from the pixel histogram (no float copy)."""
    counts = np.bincount(x.ravel(), minlength=256).astype(np.float64)
    values = np.arange(256) / 255.0
    mean = (counts * values).sum() / counts.sum()
    std = np.sqrt((counts * (values - mean) ** 2).sum() / counts.sum())
    return float(mean), float(std)


def test_mnist_pixel_statistics(mnist_data):
    (x_train, _), _ = mnist_data
    mean, std = _moments(x_train)
    assert round(float(mean), 3) == round(0.1307, 3)
    assert round(float(std), 3) == round(0.3081, 3)
    assert x_train.min() == 0 and x_train.max() == 255


def test_fashion_mnist(fashion_data):
    (x_train, y_train), (x_test, y_test) = fashion_data
    assert x_train.shape == (60000, 28, 28) and x_train.dtype == np.uint8
    assert x_test.shape == (10000, 28, 28) and x_test.dtype == np.uint8
    assert y_train.dtype == np.uint8 and y_test.dtype == np.uint8
    assert np.bincount(y_train, minlength=10).tolist() == [6000] * 10
    assert np.bincount(y_test, minlength=10).tolist() == [1000] * 10
    mean, std = _moments(x_train)
    assert round(mean, 3) == 0.286 and round(std, 3) == 0.353
    assert len(fashion_mnist.CLASS_NAMES) == 10


def test_env_data_dir_is_searched(isolated, monkeypatch, data_dir, mnist_data):
    monkeypatch.setenv("KERASFLOW_DATA_DIR", str(data_dir))
    (x_train, y_train), (x_test, _) = mnist.load_data()
    np.testing.assert_array_equal(y_train, mnist_data[0][1])
    np.testing.assert_array_equal(x_test, mnist_data[1][0])


def test_hardcoded_hashes_match_sha256sums(data_dir):
    sums = {}
    for line in (data_dir / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split()
        sums[name] = digest
    for f in FILES:
        assert mnist.SHA256[f] == sums[f"mnist/{f}"]
        assert fashion_mnist.SHA256[f] == sums[f"fashion-mnist/{f}"]


# --------------------------------------------------------------------- downloads


def test_download_from_local_server(isolated, mirror, mnist_data):
    (x_train, y_train), (x_test, y_test) = mnist.load_data(origin=mirror + "mnist/")
    cache = isolated / ".kerasflow" / "datasets" / "mnist"
    assert sorted(os.listdir(cache)) == sorted(FILES)  # no temp files left
    for f in FILES:
        digest = hashlib.sha256((cache / f).read_bytes()).hexdigest()
        assert digest == mnist.SHA256[f]
    np.testing.assert_array_equal(x_train, mnist_data[0][0])
    np.testing.assert_array_equal(y_test, mnist_data[1][1])
    # Second call: served from the cache, even with an unreachable origin.
    (_, y2), _ = mnist.load_data(origin="http://127.0.0.1:9/")
    np.testing.assert_array_equal(y2, y_train)


def test_download_fashion_via_env_origin(isolated, monkeypatch, mirror, tmp_path):
    monkeypatch.setenv("KERASFLOW_DATASETS_ORIGIN", mirror)
    cache = tmp_path / "cache"
    (x_train, y_train), _ = fashion_mnist.load_data(cache_dir=cache)
    assert x_train.shape == (60000, 28, 28)
    assert sorted(os.listdir(cache)) == sorted(FILES)


def test_download_only_missing_files(isolated, mirror, data_dir, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    for f in FILES[1:]:
        shutil.copy(data_dir / "mnist" / f, cache / f)
    (x_train, _), _ = mnist.load_data(origin=mirror + "mnist", cache_dir=cache)
    assert x_train.shape == (60000, 28, 28)
    assert sorted(os.listdir(cache)) == sorted(FILES)


def test_download_hash_mismatch_leaves_nothing(isolated, data_dir, tmp_path, serve):
    served = tmp_path / "served"
    shutil.copytree(data_dir / "mnist", served)
    bad = served / FILES[0]
    blob = bytearray(bad.read_bytes())
    blob[1000:1010] = bytes(b ^ 0xFF for b in blob[1000:1010])
    bad.write_bytes(bytes(blob))
    received = hashlib.sha256(blob).hexdigest()
    cache = tmp_path / "cache"
    with pytest.raises(ValueError, match="SHA-256 mismatch") as info:
        mnist.load_data(origin=serve(served), cache_dir=cache)
    msg = str(info.value)
    assert FILES[0] in msg and mnist.SHA256[FILES[0]] in msg and received in msg
    assert os.listdir(cache) == []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_offline_error_names_directories(isolated, tmp_path):
    port = _free_port()
    given = tmp_path / "given"
    given.mkdir()
    with pytest.warns(UserWarning, match="lacks"):
        with pytest.raises(OSError, match="not available offline") as info:
            mnist.load_data(path=given, origin=f"http://127.0.0.1:{port}/")
    assert isinstance(info.value, _loader.DownloadError)
    msg = str(info.value)
    cache = isolated / ".kerasflow" / "datasets" / "mnist"
    assert str(given) in msg and str(cache) in msg
    assert "KERASFLOW_DATA_DIR" in msg
    assert not any(cache.iterdir())


def test_offline_timeout(isolated, monkeypatch, tmp_path):
    monkeypatch.setattr(_loader, "DOWNLOAD_TIMEOUT", 0.3)
    with socket.socket() as s:  # listens but never answers
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        origin = f"http://127.0.0.1:{s.getsockname()[1]}/"
        with pytest.raises(_loader.DownloadError, match="timed out"):
            mnist.load_data(origin=origin, cache_dir=tmp_path / "c")
    assert os.listdir(tmp_path / "c") == []


def test_bad_origin_scheme(isolated, tmp_path):
    with pytest.raises(ValueError, match="Invalid dataset origin"):
        mnist.load_data(origin="ftp://127.0.0.1/", cache_dir=tmp_path)


# --------------------------------------------------------------------- IDX errors


def _idx(magic: int, dims: tuple[int, ...], payload: bytes) -> bytes:
    return struct.pack(f">{1 + len(dims)}I", magic, *dims) + payload


def _write_gz(path: Path, raw: bytes) -> Path:
    path.write_bytes(gzip.compress(raw))
    return path


def test_read_idx_roundtrip(tmp_path):
    pixels = np.arange(2 * 3 * 4, dtype=np.uint8)
    p = _write_gz(tmp_path / "i.gz", _idx(2051, (2, 3, 4), pixels.tobytes()))
    np.testing.assert_array_equal(_loader.read_idx(p, "images"),
                                  pixels.reshape(2, 3, 4))
    q = _write_gz(tmp_path / "l.gz", _idx(2049, (3,), bytes([7, 0, 9])))
    np.testing.assert_array_equal(_loader.read_idx(q, "labels"), [7, 0, 9])


def test_truncated_idx_payload(tmp_path):
    p = _write_gz(tmp_path / "short.gz", _idx(2051, (10, 28, 28), b"\0" * 100))
    match = r"short\.gz.*expected 7840 bytes, received 100"
    with pytest.raises(ValueError, match=match):
        _loader.read_idx(p, "images")


def test_wrong_magic(tmp_path):
    p = _write_gz(tmp_path / "m.gz", _idx(2051, (2,), b"\0\0"))
    with pytest.raises(ValueError, match=r"m\.gz.*expected 2049, received 2051"):
        _loader.read_idx(p, "labels")


def test_header_too_short(tmp_path):
    p = _write_gz(tmp_path / "h.gz", b"\0\0\x08")
    with pytest.raises(ValueError, match=r"h\.gz.*header too short.*expected 16"):
        _loader.read_idx(p, "images")


def test_truncated_gzip_stream(tmp_path, data_dir):
    src = (data_dir / "mnist" / FILES[1]).read_bytes()
    p = tmp_path / FILES[1]
    p.write_bytes(src[: len(src) // 2])
    with pytest.raises(ValueError, match="truncated gzip"):
        _loader.read_idx(p, "labels")


def test_not_gzip(tmp_path):
    p = tmp_path / "junk.gz"
    p.write_bytes(b"this is not gzip data at all")
    with pytest.raises(ValueError, match=r"junk\.gz.*not a valid gzip"):
        _loader.read_idx(p, "images")


def test_load_data_wrong_count_is_clear(isolated, tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    for f in FILES:
        if "images" in f:
            _write_gz(d / f, _idx(2051, (5, 28, 28), b"\0" * 5 * 784))
        else:
            _write_gz(d / f, _idx(2049, (5,), b"\0" * 5))
    # Files that are not the originals fail their SHA-256 first (issue 7)...
    with pytest.raises(ValueError, match=r"SHA-256 mismatch: expected "
                                         + mnist.SHA256[FILES[0]]):
        mnist.load_data(path=d)
    # ...and the shape check stays as a second line of defence.
    match = r"expected images of shape \(60000, 28, 28\)"
    with pytest.raises(ValueError, match=match):
        _loader.load_split(d, FILES[0], FILES[1], 60000)


# --------------------------------------------------------------------- shared helper


def test_local_mismatch_says_delete_and_download_again(isolated, tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    (d / "a.bin").write_bytes(b"abc")
    expected = hashlib.sha256(b"abd").hexdigest()
    with pytest.raises(ValueError, match="Delete it and download it again") as info:
        _loader.locate_or_download("x", "X", {"a.bin": expected},
                                   "http://127.0.0.1:9/", path=d)
    msg = str(info.value)
    assert str(d / "a.bin") in msg and expected in msg
    assert hashlib.sha256(b"abc").hexdigest() in msg


def test_download_mismatch_says_download_again(isolated, tmp_path, serve):
    served = tmp_path / "served"
    served.mkdir()
    (served / "a.bin").write_bytes(b"abc")
    with pytest.raises(ValueError, match="discarded. Download it again"):
        _loader.locate_or_download("x", "X", {"a.bin": "0" * 64}, serve(served),
                                   cache_dir=tmp_path / "cache")
    assert os.listdir(tmp_path / "cache") == []


@pytest.mark.parametrize("module", [imdb, reuters])
def test_pickled_datasets_raise_and_say_why(module):
    for fn in (module.load_data, module.get_word_index):
        with pytest.raises(NotImplementedError, match="only pickle can read"):
            fn()
