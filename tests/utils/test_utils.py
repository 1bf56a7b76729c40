"""kerasflow.utils, the ``keras.utils`` names: ``to_categorical`` and ``normalize``;
``pad_sequences`` and ``Progbar`` against Keras 3, the windowed and split
datasets, and the top-level Keras classes; ``Config``, ``get_file``,
``get_source_inputs``, the image helpers, ``text_dataset_from_directory`` /
``image_dataset_from_directory``, ``legacy``; and ``keras.preprocessing``."""

from __future__ import annotations

import hashlib
import itertools
import re
import tarfile
import zipfile

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import utils
from kerasflow.utils import normalize, to_categorical
from tests.keras_oracle import keras_numpy

# -- to_categorical, normalize ------------------------------------------------------

def test_to_categorical_vector():
    out = to_categorical([0, 2, 1, 2])
    expected = np.array(
        [[1, 0, 0], [0, 0, 1], [0, 1, 0], [0, 0, 1]], dtype=np.float32
    )
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, expected)


def test_to_categorical_num_classes_and_dtype():
    out = to_categorical(np.array([1, 3], dtype=np.uint8), num_classes=5, dtype="int32")
    np.testing.assert_array_equal(out, [[0, 1, 0, 0, 0], [0, 0, 0, 1, 0]])
    assert out.dtype == np.int32


def test_to_categorical_column_vector_drops_trailing_axis():
    out = to_categorical([[1], [0]], num_classes=2)
    np.testing.assert_array_equal(out, [[0, 1], [1, 0]])


def test_to_categorical_multidimensional():
    y = np.array([[0, 1, 2], [2, 1, 0]])
    out = to_categorical(y)
    assert out.shape == (2, 3, 3)
    expected = np.array(
        [
            [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
            [[0, 0, 1], [0, 1, 0], [1, 0, 0]],
        ],
        dtype=np.float32,
    )
    np.testing.assert_array_equal(out, expected)


def test_to_categorical_scalar_and_whole_floats():
    np.testing.assert_array_equal(to_categorical(2, 4), [0, 0, 1, 0])
    np.testing.assert_array_equal(to_categorical([1.0, 0.0]), [[0, 1], [1, 0]])


def test_to_categorical_empty_with_num_classes():
    assert to_categorical(np.array([], dtype=int), 3).shape == (0, 3)


def test_to_categorical_negative_labels():
    with pytest.raises(ValueError, match=r">= 0.*\[-3, -1\]"):
        to_categorical([0, -1, 2, -3], num_classes=4)


def test_to_categorical_labels_too_large():
    with pytest.raises(ValueError, match=r"< num_classes=3.*\[3, 7\]"):
        to_categorical([0, 3, 7, 1], num_classes=3)


def test_to_categorical_bad_arguments():
    with pytest.raises(ValueError, match="whole numbers"):
        to_categorical([0.5, 1.0])
    with pytest.raises(ValueError, match="integers"):
        to_categorical(["a", "b"])
    with pytest.raises(ValueError, match="num_classes must be a positive integer"):
        to_categorical([0], num_classes=0)
    with pytest.raises(ValueError, match="empty"):
        to_categorical([])


def test_normalize_l2():
    out = normalize(np.array([[3.0, 4.0], [0.0, 0.0], [1.0, 0.0]]))
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0], [1.0, 0.0]])


def test_normalize_axis_and_order():
    x = np.array([[1.0, 2.0], [3.0, 6.0]], dtype=np.float32)
    out = normalize(x, axis=0, order=1)
    np.testing.assert_allclose(out, [[0.25, 0.25], [0.75, 0.75]])
    assert out.dtype == np.float32


def test_normalize_integer_input_and_errors():
    out = normalize([[3, 4]])
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [[0.6, 0.8]])
    with pytest.raises(ValueError, match="order"):
        normalize([[1.0]], order=0)
    with pytest.raises(ValueError, match="at least 1-D"):
        normalize(3.0)


# -- pad_sequences and Progbar, against Keras 3 -------------------------------------

SEQS = [[1, 2, 3], [4, 5], [], [6, 7, 8, 9, 10], [11]]


@pytest.mark.parametrize("maxlen, padding, truncating, value, dtype", [
    (m, p, t, v, d) for m, p, t, v, d in itertools.product(
        [None, 2, 4, 7], ["pre", "post"], ["pre", "post"], [0.0, -1.5],
        ["int32", "float32"])])
def test_pad_sequences_matches_keras(maxlen, padding, truncating, value, dtype):
    keras = keras_numpy()
    kwargs = dict(maxlen=maxlen, dtype=dtype, padding=padding,
                  truncating=truncating, value=value)
    ours = kf.utils.pad_sequences(SEQS, **kwargs)
    theirs = keras.utils.pad_sequences(SEQS, **kwargs)
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours, theirs)


def test_pad_sequences_items_with_shape_and_strings():
    keras = keras_numpy()
    seqs = [np.ones((2, 3)), np.arange(9.0).reshape(3, 3)]
    np.testing.assert_array_equal(
        kf.utils.pad_sequences(seqs, dtype="float32", padding="post"),
        keras.utils.pad_sequences(seqs, dtype="float32", padding="post"))
    words = [["a", "bb"], ["c"]]
    np.testing.assert_array_equal(
        kf.utils.pad_sequences(words, dtype=object, value="<pad>"),
        keras.utils.pad_sequences(words, dtype=object, value="<pad>"))


def test_pad_sequences_errors():
    with pytest.raises(ValueError, match="must be iterable"):
        kf.utils.pad_sequences(iter([[1]]))
    with pytest.raises(ValueError, match='Padding type "mid"'):
        kf.utils.pad_sequences([[1]], padding="mid")
    with pytest.raises(ValueError, match='Truncating type "x"'):
        kf.utils.pad_sequences([[1]], truncating="x")
    with pytest.raises(ValueError, match="dtype=object"):
        kf.utils.pad_sequences([["a"]], value="x")
    with pytest.raises(ValueError, match="position 1 is different"):
        kf.utils.pad_sequences([np.ones((1, 2)), np.ones((1, 3))])


def _metrics(text):
    return re.findall(r" - (\w+): ([-\d.e+]+)", text)


def test_progbar_averages_match_keras(capsys):
    keras = keras_numpy()
    steps = [(2, [("loss", 1.0), ("acc", 0.5)]), (5, [("loss", 0.25)]),
             (6, [("loss", 4.0), ("acc", 1.0)]), (10, [("acc", 0.0)])]
    for bar in (kf.utils.Progbar(10, verbose=2, stateful_metrics=["acc"]),
                keras.utils.Progbar(10, verbose=2, stateful_metrics=["acc"])):
        for current, values in steps:
            bar.update(current, values=values)
    ours, theirs = capsys.readouterr().out.strip().splitlines()
    # loss: (1*2 + 0.25*3 + 4*1) / 6; acc: stateful, the last value.
    assert _metrics(ours) == _metrics(theirs) == [("loss", "1.1250"),
                                                  ("acc", "0.0000e+00")]
    assert ours.startswith("10/10")


def test_progbar_add_and_bar(capsys):
    bar = kf.utils.Progbar(4, width=8, verbose=1)
    bar.add(1, values=[("x", 2.0)])
    bar.add(2, values=[("x", 4.0)])
    bar.add(1)
    out = capsys.readouterr().out
    assert "4/4 [========]" in out and " - x: 3.3333" in out  # (2 + 4 * 2) / 3
    assert np.isclose(bar.average("x"), 10 / 3) and bar.average("y") is None
    kf.utils.Progbar(3, verbose=0).update(3)
    assert capsys.readouterr().out == ""


# -- datasets --------------------------------------------------------------------------
def test_timeseries_windows_as_documented_by_keras():
    # keras.utils.timeseries_dataset_from_array's docstring examples (Keras
    # needs TensorFlow for this function, so the expected values are written out).
    ds = kf.utils.timeseries_dataset_from_array(
        np.arange(99), None, sequence_length=10, sequence_stride=3,
        sampling_rate=2, batch_size=None)
    assert isinstance(ds, kf.data.Dataset)
    windows = [np.asarray(w) for w in ds]
    assert len(windows) == 27
    np.testing.assert_array_equal(windows[0], np.arange(0, 20, 2))
    np.testing.assert_array_equal(windows[1], np.arange(3, 23, 2))
    np.testing.assert_array_equal(windows[-1], np.arange(78, 98, 2))
    data = np.arange(100)
    batches = list(kf.utils.timeseries_dataset_from_array(
        data, data[10:], sequence_length=10, batch_size=16))
    assert [len(x) for x, _ in batches] == [16] * 5 + [10]
    x, y = batches[0]
    np.testing.assert_array_equal(x[3], np.arange(3, 13))
    assert y[3] == 13 and x.shape == (16, 10)


def test_timeseries_start_end_and_shuffle():
    data = np.arange(50, dtype="float32").reshape(25, 2)
    ds = kf.utils.timeseries_dataset_from_array(
        data, np.arange(25), 3, sampling_rate=2, start_index=4, end_index=20,
        batch_size=4)
    x, y = next(iter(ds))
    np.testing.assert_array_equal(x[0], data[[4, 6, 8]])
    np.testing.assert_array_equal(y, [4, 5, 6, 7])
    assert sum(len(b[0]) for b in ds) == 20 - 4 - 4
    def shuffled():
        return kf.utils.timeseries_dataset_from_array(
            data, np.arange(25), 3, batch_size=5, shuffle=True, seed=3)

    firsts = [list(map(int, y)) for _, y in shuffled()]
    assert firsts == [list(map(int, y)) for _, y in shuffled()]  # seeded
    assert sorted(sum(firsts, [])) == list(range(23)) and firsts[0] != [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="Received: start_index=30"):
        kf.utils.timeseries_dataset_from_array(data, None, 3, start_index=30)
    with pytest.raises(ValueError, match="Received: sampling_rate=0"):
        kf.utils.timeseries_dataset_from_array(data, None, 3, sampling_rate=0)


def test_split_dataset_sizes_and_order():
    x, y = np.arange(10), np.arange(10) * 2
    left, right = kf.utils.split_dataset((x, y), left_size=0.3)
    assert [int(a) for a, _ in left] == [0, 1, 2]
    assert [int(b) for _, b in right] == [6, 8, 10, 12, 14, 16, 18]
    left, right = kf.utils.split_dataset(x, left_size=2, right_size=3)
    assert [int(v) for v in right] == [7, 8, 9]  # the right part is the tail
    ds = kf.data.Dataset.from_tensor_slices({"a": x})
    left, right = kf.utils.split_dataset(ds, right_size=0.25, shuffle=True, seed=1)
    values = sorted(int(e["a"]) for e in list(left) + list(right))
    assert values == list(range(10)) and len(list(right)) == 2  # round(2.5)
    again, _ = kf.utils.split_dataset(ds, right_size=0.25, shuffle=True, seed=1)
    assert [int(e["a"]) for e in again] == [int(e["a"]) for e in left]


@pytest.mark.parametrize("kwargs, error, match", [
    ({}, ValueError, "At least one of"),
    ({"left_size": 1.5}, ValueError, "Received: left_size=1.5"),
    ({"left_size": 10}, ValueError, "smaller than 10"),
    ({"left_size": 0.6, "right_size": 0.6}, ValueError, "greater than 1"),
    ({"left_size": 6, "right_size": 6}, ValueError, "should be smaller"),
    ({"left_size": "3"}, TypeError, "Invalid `left_size` Type"),
    ({"left_size": 0.01}, ValueError, "left side dataset split will be empty"),
])
def test_split_dataset_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        kf.utils.split_dataset(np.arange(10), **kwargs)


# -- top level ------------------------------------------------------------------------
def test_top_level_classes():
    assert kf.Layer is kf.layers.Layer and kf.InputSpec is kf.layers.InputSpec
    assert kf.Loss is kf.losses.Loss and kf.Metric is kf.metrics.Metric
    assert kf.Optimizer is kf.optimizers.Optimizer
    assert isinstance(kf.Input((3,)), kf.KerasTensor)
    assert issubclass(kf.Variable, kf.backend.Variable)
    assert kf.Initializer is kf.initializers.Initializer
    assert kf.Regularizer is kf.regularizers.Regularizer
    assert kf.version() == kf.__version__
    with kf.name_scope("block"):
        node = kf.backend.placeholder("float32", shape=(2,)) * 2.0
    assert node.name.startswith("block/")


@pytest.mark.parametrize("args", [
    dict(initializer=np.arange(3)),
    dict(initializer=np.ones((2, 2), "float64")),
    dict(initializer=[1.5, 2.5], trainable=False),
    dict(initializer="ones", shape=(2, 3)),
    dict(initializer="zeros", shape=(4,), dtype="int32"),
])
def test_variable_matches_keras(args):
    keras = keras_numpy()
    ours, theirs = kf.Variable(**args, name="v"), keras.Variable(**args, name="v")
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert str(ours.dtype) == str(theirs.dtype)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.trainable == theirs.trainable and ours.name.startswith("v")


def test_variable_errors():
    with pytest.raises(ValueError, match="`shape` argument should be specified"):
        kf.Variable("ones")
    with pytest.raises(TypeError, match="Unrecognized keyword"):
        kf.Variable(1.0, colocate=True)


# -- small helpers ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [None, "int", "float32", "int8", "bool", float, int,
                                   bool, np.float16, np.dtype("int32"), "uint8",
                                   "bfloat16", "string", str, "float64",
                                   "complex64"])
def test_standardize_dtype_matches_keras(dtype):
    keras = keras_numpy()
    assert kf.utils.standardize_dtype(dtype) == keras.utils.standardize_dtype(dtype)


def test_standardize_dtype_rejects_like_keras():
    keras = keras_numpy()
    for bad in ("float", "int128"):
        with pytest.raises(ValueError, match=f"Invalid dtype: {bad}"):
            keras.utils.standardize_dtype(bad)
        with pytest.raises(ValueError, match=f"Invalid dtype: {bad}"):
            kf.utils.standardize_dtype(bad)


@pytest.mark.parametrize("data", [1, (1,), [1, 2], (1, 2, 3), ([1, 2],)])
def test_unpack_and_pack_match_keras(data):
    keras = keras_numpy()
    assert kf.utils.unpack_x_y_sample_weight(data) == \
        keras.utils.unpack_x_y_sample_weight(data)
    x, y, w = kf.utils.unpack_x_y_sample_weight(data)
    assert kf.utils.pack_x_y_sample_weight(x, y, w) == \
        keras.utils.pack_x_y_sample_weight(x, y, w)
    with pytest.raises(ValueError, match="found: \\(1, 2, 3, 4\\)"):
        kf.utils.unpack_x_y_sample_weight((1, 2, 3, 4))


def test_is_keras_tensor_and_sequence():
    assert kf.utils.is_keras_tensor(kf.Input((2,)))
    assert not kf.utils.is_keras_tensor(kf.Variable(1.0))
    assert not kf.utils.is_keras_tensor(np.ones(2))
    assert kf.utils.Sequence is kf.utils.PyDataset


def test_config_matches_keras_and_is_the_backend_setting():
    keras = keras_numpy()
    for name in ("floatx", "epsilon", "image_data_format",
                 "is_interactive_logging_enabled"):
        assert getattr(kf.config, name)() == getattr(keras.config, name)()
    try:
        kf.config.set_epsilon(1e-5)
        kf.config.set_image_data_format("channels_first")
        assert kf.backend.epsilon() == 1e-5
        assert kf.backend.image_data_format() == "channels_first"
    finally:
        kf.config.set_epsilon(1e-7)
        kf.config.set_image_data_format("channels_last")


def test_progbar_stateless_metrics_match_keras(capsys):
    keras = keras_numpy()
    for bar in (kf.utils.Progbar(4, verbose=2, stateless_metrics=["loss"]),
                keras.utils.Progbar(4, verbose=2, stateless_metrics=["loss"])):
        bar.update(2, values=[("loss", 1.0), ("lr", 0.5)])
        bar.update(4, values=[("loss", 3.0), ("lr", 0.25)])
    ours, theirs = capsys.readouterr().out.strip().splitlines()
    # The final update's value is shown as given, averaged or not (Keras 3.15).
    assert _metrics(ours) == _metrics(theirs) == [("loss", "3.0000"),
                                                  ("lr", "0.2500")]
    for bar in (kf.utils.Progbar(4, verbose=2, stateless_metrics=["loss"]),
                keras.utils.Progbar(4, verbose=2, stateless_metrics=["loss"])):
        bar.update(1, values=[("loss", 1.0), ("lr", 0.5)])
        bar.update(3, values=[("loss", 3.0), ("lr", 0.25)])
        bar.update(4, values=[("lr", 0.1)])
    ours, theirs = capsys.readouterr().out.strip().splitlines()
    # loss: (1 * 1 + 3 * 2) / 3, averaged; lr: stateful, the last value.
    assert _metrics(ours) == _metrics(theirs) == [("loss", "2.3333"),
                                                  ("lr", "0.1000")]
    with pytest.raises(ValueError, match="Only one of `stateful_metrics`"):
        kf.utils.Progbar(1, stateful_metrics=["a"], stateless_metrics=["b"])


def test_unsupported_keras_arguments_say_so(tmp_path):
    with pytest.raises(ValueError, match="Received: format=grain"):
        kf.utils.timeseries_dataset_from_array(np.arange(9), None, 2,
                                               format="grain")
    with pytest.raises(NotImplementedError, match="Received: layout=x"):
        kf.Variable(1.0, layout="x")
    model = kf.Sequential([kf.layers.Dense(1, input_shape=(2,))])
    with pytest.raises(NotImplementedError, match="max_shard_size=5"):
        kf.saving.save_weights(model, tmp_path / "w.npz", max_shard_size=5)


# -- Config, get_file, image and text helpers, legacy names -------------------------

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
