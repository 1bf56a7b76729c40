"""window, reduce, make_csv_dataset, and errors raised inside an input
pipeline, against hand-computed tf.data results (TF 2.x docs for
``Dataset.window`` / ``reduce`` and ``tf.data.experimental.make_csv_dataset``)."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow.data import Dataset
from kerasflow.data.experimental import make_csv_dataset


def _windows(ds):
    return [[int(v) for v in w] for w in ds]


def test_window_shift_stride_and_remainder():
    assert _windows(Dataset.range(7).window(3, shift=2)) == \
        [[0, 1, 2], [2, 3, 4], [4, 5, 6], [6]]
    assert _windows(Dataset.range(7).window(3, 2, drop_remainder=True)) == \
        [[0, 1, 2], [2, 3, 4], [4, 5, 6]]
    # TF's docstring example: window(3, 1, 2, True) on range(7).
    assert _windows(Dataset.range(7).window(3, 1, 2, True)) == \
        [[0, 2, 4], [1, 3, 5], [2, 4, 6]]
    assert _windows(Dataset.range(5).window(2)) == [[0, 1], [2, 3], [4]]


@pytest.mark.parametrize("n,size,shift,stride,drop", [
    (7, 3, 2, 1, False), (7, 3, 2, 1, True), (7, 3, 1, 2, True), (10, 4, 3, 2, False),
    (10, 4, 3, 2, True), (2, 5, 1, 1, True), (0, 2, 1, 1, False)])
def test_window_cardinality_matches_the_count(n, size, shift, stride, drop):
    ds = Dataset.range(n).window(size, shift, stride, drop)
    assert ds.cardinality() == len(list(ds))


def test_window_of_tuples_gives_tuples_of_datasets():
    ds = Dataset.from_tensor_slices((np.arange(5), np.arange(5) * 10)).window(2)
    spec = ds.element_spec
    assert isinstance(spec, tuple) and spec[0].element_spec.dtype == np.int64
    pairs = [(_windows([a])[0], _windows([b])[0]) for a, b in ds]
    assert pairs == [([0, 1], [0, 10]), ([2, 3], [20, 30]), ([4], [40])]
    # The usual use: sliding windows batched back into arrays.
    batched = Dataset.range(5).window(3, 1, drop_remainder=True).flat_map(
        lambda w: w.batch(3))
    assert [b.tolist() for b in batched] == [[0, 1, 2], [1, 2, 3], [2, 3, 4]]


def test_window_rejects_bad_sizes():
    with pytest.raises(ValueError, match="size must be >= 1"):
        Dataset.range(3).window(0)
    with pytest.raises(ValueError, match="shift must be >= 1"):
        Dataset.range(3).window(2, shift=0)


def test_reduce_folds_in_order():
    assert int(Dataset.range(5).reduce(np.int64(0), lambda s, x: s + x)) == 10
    total, count = Dataset.from_tensor_slices(np.arange(4.0)).reduce(
        (0.0, 0), lambda s, x: (s[0] + x, s[1] + 1))
    assert (float(total), int(count)) == (6.0, 4)
    # Order matters for this fold: 0*10+1, then *10+2 ...
    assert int(Dataset.range(1, 4).reduce(0, lambda s, x: s * 10 + x)) == 123
    with pytest.raises(ValueError, match="finite"):
        Dataset.range(3).repeat().reduce(0, lambda s, x: s + x)
    with pytest.raises(TypeError, match="structure"):
        Dataset.range(3).reduce((0, 0), lambda s, x: s[0] + x)


IRIS_COLUMNS = ["SepalLength", "SepalWidth", "PetalLength", "PetalWidth", "Species"]


def test_make_csv_dataset_reads_iris_in_order(data_dir):
    path = data_dir / "iris" / "iris.csv"
    ds = make_csv_dataset(str(path), batch_size=32, column_names=IRIS_COLUMNS,
                          label_name="Species", num_epochs=1, shuffle=False)
    batches = list(ds)
    assert [len(labels) for _, labels in batches] == [32, 32, 32, 32, 22]
    features, labels = batches[0]
    assert sorted(features) == sorted(IRIS_COLUMNS[:4])
    assert features["SepalLength"].dtype == np.float32
    assert labels.dtype == np.int32
    # iris.csv's first data row: 5.1,3.5,1.4,0.2,0
    np.testing.assert_allclose([features[c][0] for c in IRIS_COLUMNS[:4]],
                               [5.1, 3.5, 1.4, 0.2], rtol=1e-6)
    all_labels = np.concatenate([lab for _, lab in batches])
    assert np.bincount(all_labels).tolist() == [50, 50, 50]


def test_make_csv_dataset_infers_names_and_types(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b,c,d\n1,2.5,x,3000000000\n2,,y,4\n3,1.0,z,5\n")
    ds = make_csv_dataset(str(path), batch_size=3, num_epochs=1, shuffle=False)
    (batch,) = list(ds)
    assert batch["a"].dtype == np.int32 and batch["a"].tolist() == [1, 2, 3]
    assert batch["b"].dtype == np.float32 and batch["b"].tolist() == [2.5, 0.0, 1.0]
    assert batch["c"].tolist() == [b"x", b"y", b"z"]
    assert batch["d"].dtype == np.int64  # 3e9 does not fit int32


def test_make_csv_dataset_repeats_forever_and_drops_the_remainder(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("x,y\n" + "".join(f"{i},{i % 2}\n" for i in range(10)))
    ds = make_csv_dataset(str(path), batch_size=4, label_name="y", shuffle_seed=3)
    assert ds.cardinality() == kf.data.INFINITE_CARDINALITY
    seen = [f["x"] for f, _ in ds.take(5)]
    assert all(len(s) == 4 for s in seen)
    first_epoch = np.concatenate(seen)[:10]
    assert sorted(first_epoch.tolist()) == list(range(10))  # shuffled, all there


def test_make_csv_dataset_errors_name_what_is_wrong(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("x,y\n1,2\n3,oops\n5,6\n")
    with pytest.raises(ValueError, match="no file matching"):
        make_csv_dataset(str(tmp_path / "missing*.csv"), 2)
    with pytest.raises(ValueError, match="'z'.*Columns: \\['x', 'y'\\]"):
        make_csv_dataset(str(path), 2, label_name="z")
    ds = make_csv_dataset(str(path), 2, column_defaults=[0, 0], num_epochs=1,
                          shuffle=False)
    with pytest.raises(ValueError, match="t.csv:3: column 1 expects int32"):
        list(ds)
    kept = make_csv_dataset(str(path), 2, column_defaults=[0, 0], num_epochs=1,
                            shuffle=False, ignore_errors=True)
    assert [b["x"].tolist() for b in kept] == [[1, 5]]


def test_generator_raising_mid_epoch_ends_fit_and_keeps_applied_steps(float64):
    rng = np.random.RandomState(0)
    x, y = rng.randn(64, 3), rng.randn(64, 1)

    def gen():
        for i in range(8):
            if i == 5:
                raise RuntimeError("bad record in batch 5")
            yield x[i * 8:(i + 1) * 8], y[i * 8:(i + 1) * 8]

    spec = (kf.backend.TensorSpec((None, 3), "float64"),
            kf.backend.TensorSpec((None, 1), "float64"))
    ds = Dataset.from_generator(gen, output_signature=spec)

    def model():
        m = kf.Sequential([kf.layers.Dense(1, input_shape=(3,),
                                           kernel_initializer="ones")])
        m.compile(optimizer=kf.optimizers.SGD(0.1), loss="mse")
        return m

    broken = model()
    with pytest.raises(RuntimeError, match="bad record in batch 5"):
        broken.fit(ds, epochs=1, verbose=0)
    reference = model()
    reference.fit(x[:40], y[:40], batch_size=8, shuffle=False, epochs=1, verbose=0)
    for a, b in zip(broken.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_parallel_interleave_reads_sources_side_by_side_in_order():
    import threading

    readers = set()

    def source(i):
        def rows():
            for j in range(4):
                threading.Event().wait(0.002)
                readers.add(threading.current_thread().name)
                yield np.int64(10 * i + j)
        return Dataset.from_generator(rows, output_signature=kf.backend.TensorSpec(
            (), "int64"))

    ds = Dataset.range(3)
    serial = [int(v) for v in ds.interleave(source, cycle_length=2, block_length=2)]
    assert serial == [0, 1, 10, 11, 2, 3, 12, 13, 20, 21, 22, 23]
    assert readers == {threading.current_thread().name}
    readers.clear()
    parallel = ds.interleave(source, cycle_length=2, block_length=2,
                             num_parallel_calls=kf.data.AUTOTUNE)
    assert [int(v) for v in parallel] == serial
    assert threading.current_thread().name not in readers and len(readers) >= 1
