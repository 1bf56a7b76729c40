"""``keras.utils`` names added in round 4: ``Config``, ``get_file``,
``get_source_inputs``, the image helpers, ``text_dataset_from_directory`` /
``image_dataset_from_directory``, ``legacy``; and ``keras.preprocessing``."""

from __future__ import annotations

import hashlib
import tarfile
import zipfile

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import utils
from tests.keras_oracle import keras_numpy


def test_config_behaves_as_keras():
    keras = keras_numpy()
    for cls in (utils.Config, keras.utils.Config):
        c = cls(lr=0.1)
        c.epochs = 3
        c["batch"] = 8
        assert (c.lr, c.epochs, c["batch"], len(c), "lr" in c) == (0.1, 3, 8, 3, True)
        assert list(c) == ["batch", "epochs", "lr"]
        assert c.as_dict() == {"lr": 0.1, "epochs": 3, "batch": 8}
        assert c.to_json() == '{"lr": 0.1, "epochs": 3, "batch": 8}'
        c.freeze()
        with pytest.raises(ValueError, match="frozen"):
            c.lr = 0.2
        c.unfreeze()
        c.lr = 0.2
        with pytest.raises(AttributeError, match="Did you mean 'lr'"):
            c.lrr  # noqa: B018
        assert c.get("missing", 5) == 5 and c.pop("batch") == 8


@pytest.fixture
def served(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "data.txt").write_text("hello")
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "a.txt").write_text("A")
    with tarfile.open(src / "arch.tar.gz", "w:gz") as tar:
        tar.add(inner / "a.txt", arcname="pkg/a.txt")
    with zipfile.ZipFile(src / "arch.zip", "w") as z:
        z.writestr("pkg/b.txt", "B")
    return src


def test_get_file_fetches_caches_and_checks_the_hash(served, tmp_path):
    cache = tmp_path / "cache"
    url = (served / "data.txt").as_uri()
    path = utils.get_file(origin=url, cache_dir=str(cache))
    assert path == str(cache / "datasets" / "data.txt")
    assert open(path).read() == "hello"
    (served / "data.txt").write_text("changed")  # cached: not fetched again
    assert open(utils.get_file(origin=url, cache_dir=str(cache))).read() == "hello"
    sha = hashlib.sha256(b"changed").hexdigest()
    path = utils.get_file("data.txt", url, file_hash=sha, cache_dir=str(cache))
    assert open(path).read() == "changed"  # stale hash: fetched again
    with pytest.raises(ValueError, match="file hash does not match"):
        utils.get_file("other.txt", url, md5_hash="0" * 32, cache_dir=str(cache))


def test_get_file_extracts_archives(served, tmp_path):
    cache = str(tmp_path / "cache")
    out = utils.get_file("arch.tar.gz", (served / "arch.tar.gz").as_uri(),
                         extract=True, cache_dir=cache)
    assert out.endswith("arch_extracted")
    assert open(f"{out}/pkg/a.txt").read() == "A"
    out = utils.get_file(origin=(served / "arch.zip").as_uri(), extract=True,
                         cache_dir=cache)
    assert open(f"{out}/pkg/b.txt").read() == "B"


def test_get_file_errors(tmp_path):
    with pytest.raises(ValueError, match='specify the "origin"'):
        utils.get_file("x")
    with pytest.raises(ValueError, match="Paths are no longer accepted"):
        utils.get_file("a/b.txt", "file:///nowhere", cache_dir=str(tmp_path))
    with pytest.raises(Exception, match="URL fetch failure on file:///nowhere"):
        utils.get_file("b.txt", "file:///nowhere/b.txt", cache_dir=str(tmp_path))


def test_get_source_inputs():
    a, b = kf.Input((3,)), kf.Input((2,))
    y = kf.layers.Dense(2)(a) + b
    assert utils.get_source_inputs(y) == [a, b]
    assert utils.get_source_inputs(a) == [a]
    with pytest.raises(TypeError, match="symbolic tensor"):
        utils.get_source_inputs(np.ones(3))


def test_image_arrays_equal_keras():
    keras = keras_numpy()
    x = np.random.default_rng(0).random((2, 30, 47, 3)).astype("float32")
    for size, fmt, img in (((20, 20), "channels_last", x),
                           ((10, 25), "channels_first", x[0].transpose(2, 0, 1))):
        np.testing.assert_allclose(
            kf.preprocessing.image.smart_resize(img, size, data_format=fmt),
            keras.preprocessing.image.smart_resize(img, size, data_format=fmt),
            atol=1e-6)
    for fmt in ("channels_last", "channels_first"):
        for img in (x[0], x[0, :, :, 0]):
            np.testing.assert_array_equal(utils.img_to_array(img, fmt),
                                          keras.utils.img_to_array(img, fmt))
    with pytest.raises(ValueError, match="Unsupported image shape"):
        utils.img_to_array(np.ones(3))


def test_pil_functions_say_they_need_pillow():
    pytest.importorskip("numpy")
    try:
        import PIL  # noqa: F401
    except ImportError:
        for call in (lambda: utils.load_img("x.png"),
                     lambda: utils.array_to_img(np.ones((2, 2, 3))),
                     lambda: utils.save_img("x.png", np.ones((2, 2, 3)))):
            with pytest.raises(ImportError, match="requires PIL"):
                call()
    else:
        img = utils.array_to_img(np.ones((4, 5, 3)) * 3.0)
        assert utils.img_to_array(img).shape == (4, 5, 3)


@pytest.fixture
def text_dir(tmp_path):
    for cls, n in (("neg", 5), ("pos", 7)):
        (tmp_path / cls).mkdir()
        for i in range(n):
            (tmp_path / cls / f"{i:02d}.txt").write_text(f"{cls} text {i}")
    (tmp_path / "neg" / "skip.md").write_text("not text")
    return tmp_path


def test_text_dataset_from_directory(text_dir):
    ds = utils.text_dataset_from_directory(text_dir, batch_size=4, shuffle=False,
                                           verbose=False)
    assert ds.class_names == ["neg", "pos"]
    texts, labels = zip(*[(t, lab) for bx, by in ds for t, lab in zip(bx, by)])
    assert len(texts) == 12 and list(labels) == [0] * 5 + [1] * 7
    assert all(t.startswith(["neg", "pos"][lab]) for t, lab in zip(texts, labels))
    train, val = utils.text_dataset_from_directory(
        text_dir, label_mode="categorical", validation_split=0.25, subset="both",
        seed=3, batch_size=None, max_length=3, verbose=False)
    train_texts = [str(t) for t, _ in train]
    val_texts = [str(t) for t, _ in val]
    assert len(train_texts) == 9 and len(val_texts) == 3
    assert {len(t) for t in train_texts + val_texts} == {3}
    assert sorted(train.file_paths + val.file_paths) == sorted(
        str(p) for p in text_dir.glob("*/*.txt"))
    assert next(iter(val))[1].shape == (2,)


def test_text_dataset_bad_arguments(text_dir):
    with pytest.raises(ValueError, match="must provide a `seed`"):
        utils.text_dataset_from_directory(text_dir, validation_split=0.2,
                                          subset="training")
    with pytest.raises(ValueError, match="label_mode"):
        utils.text_dataset_from_directory(text_dir, label_mode="onehot")
    with pytest.raises(ValueError, match="class_names"):
        utils.text_dataset_from_directory(text_dir, class_names=["x"])


def test_image_dataset_needs_pillow_or_reads_images(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.png").write_bytes(b"")
    try:
        import PIL  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="requires PIL"):
            utils.image_dataset_from_directory(tmp_path, verbose=False)
    with pytest.raises(NotImplementedError, match="pad_to_aspect_ratio"):
        utils.image_dataset_from_directory(tmp_path, pad_to_aspect_ratio=True)


def test_legacy_and_preprocessing_namespaces():
    assert utils.legacy.serialize_keras_object is kf.saving.serialize_keras_object
    assert kf.legacy.saving.deserialize_keras_object is \
        kf.saving.deserialize_keras_object
    assert kf.preprocessing.sequence.pad_sequences is utils.pad_sequences
    assert kf.preprocessing.timeseries_dataset_from_array is \
        utils.timeseries_dataset_from_array
    assert kf.preprocessing.text_dataset_from_directory is \
        utils.text_dataset_from_directory
