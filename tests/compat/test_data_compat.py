"""TF1 input-pipeline names: tf.decode_csv, tf.strings, tf.gfile, RunConfig."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow.compat.v1 as tf


def test_decode_csv_scalar_values_dtypes_and_defaults():
    a, b, c, d = tf.decode_csv(b"1.5,x,,", [[0.0], [""], [7], ["dflt"]])
    assert a.dtype == np.float32 and a.shape == () and a == 1.5
    assert b.dtype == object and b[()] == b"x"
    assert c.dtype == np.int32 and c == 7          # empty field: the default
    assert d[()] == b"dflt"


def test_decode_csv_batch_shape_select_cols_and_na_value():
    records = np.array([b"1,2,a", b"3,NA,b"])
    x, y = tf.io.decode_csv(records, [[0], [-1.0]], na_value="NA",
                            select_cols=[0, 1])
    np.testing.assert_array_equal(x, [1, 3])
    np.testing.assert_array_equal(y, np.array([2.0, -1.0], np.float32))
    first, label = tf.decode_csv(records, [[0.0], [""]], select_cols=[0, 2])
    assert first.shape == (2,) and list(label) == [b"a", b"b"]
    (v,) = tf.decode_csv(np.array([[b"4"], [b"5"]]), [[0]])
    assert v.shape == (2, 1)


def test_decode_csv_errors():
    with pytest.raises(ValueError, match="expected 3 fields.*Received 2"):
        tf.decode_csv(b"1,2", [[0], [0], [0]])
    with pytest.raises(ValueError, match="column 1 is required"):
        tf.decode_csv(b"1,", [[0], []])
    with pytest.raises(ValueError, match="column 0 expects int32. Received: 'x'"):
        tf.decode_csv(b"x", [[0]])
    with pytest.raises(ValueError, match="record 1: expected 2 fields"):
        tf.decode_csv([b"1,2", b"1"], [[0], [0]])


def test_strings_ops():
    np.testing.assert_array_equal(tf.strings.to_number([b"1.5", "-2"]),
                                  np.array([1.5, -2.0], np.float32))
    assert tf.strings.to_number("7", out_type=tf.int64).dtype == np.int64
    with pytest.raises(ValueError, match="Received: 'abc'"):
        tf.strings.to_number("abc")
    np.testing.assert_array_equal(tf.strings.length([b"ab", "h\u00e9"]), [2, 3])
    assert tf.strings.length("h\u00e9", unit="UTF8_CHAR") == 2
    assert tf.strings.strip(b"  a b ") == b"a b"
    assert list(tf.strings.lower(["AbC"])) == [b"abc"]
    assert tf.strings.upper("x") == b"X"
    assert list(tf.strings.split(b"a  b c")) == [b"a", b"b", b"c"]
    rows = tf.strings.split([b"a,b", b"c"], sep=",")
    assert [list(r) for r in rows] == [[b"a", b"b"], [b"c"]]
    assert tf.string_to_number is tf.strings.to_number


def test_gfile_on_a_temp_dir(tmp_path):
    d = tmp_path / "a" / "b"
    tf.gfile.MakeDirs(str(d))
    assert tf.gfile.IsDirectory(str(d)) and tf.io.gfile.isdir(d)
    with tf.gfile.Open(str(d / "f.txt"), "w") as f:
        f.write("hello\n")
    with tf.io.gfile.GFile(d / "f.txt") as f:
        assert f.read() == "hello\n"
    assert tf.gfile.Exists(str(d / "f.txt"))
    assert tf.gfile.ListDirectory(str(d)) == ["f.txt"]
    assert tf.gfile.Glob(str(d / "*.txt")) == [str(d / "f.txt")]
    tf.gfile.Remove(str(d / "f.txt"))
    assert not tf.io.gfile.exists(d / "f.txt")
    with pytest.raises(tf.errors.NotFoundError, match="f.txt"):
        tf.gfile.Remove(str(d / "f.txt"))
    with pytest.raises(tf.errors.NotFoundError):
        tf.gfile.Open(str(d / "missing"))
    with pytest.raises(tf.errors.NotFoundError):
        tf.io.gfile.listdir(d / "missing")


def test_runconfig_accepts_session_config():
    cfg = tf.estimator.RunConfig(session_config=tf.ConfigProto(
        allow_soft_placement=True))
    assert cfg.session_config is not None
    assert cfg.replace(tf_random_seed=1).session_config is cfg.session_config


def test_tf1_program_textline_decode_csv_learns(tmp_path):
    """TextLineDataset + decode_csv + batch feeding an Estimator (TF1 idiom)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 2))
    y = (x[:, 0] - 2 * x[:, 1] > 0).astype(int)
    path = tmp_path / "train.csv"
    path.write_text("x1,x2,label\n" + "".join(
        f"{a:.4f},{b:.4f},{c}\n" for (a, b), c in zip(x, y)))

    def parse_csv(line):
        x1, x2, label = tf.decode_csv(line, [[0.0], [0.0], [0]])
        return {"x1": x1, "x2": x2}, label

    def input_fn(epochs):
        return (tf.data.TextLineDataset(str(path)).skip(1).map(parse_csv)
                .shuffle(200, seed=0).repeat(epochs).batch(20))

    columns = [tf.feature_column.numeric_column("x1"),
               tf.feature_column.numeric_column("x2")]
    est = tf.estimator.LinearClassifier(columns, model_dir=str(tmp_path / "m"))
    est.train(lambda: input_fn(20))
    acc = est.evaluate(lambda: input_fn(1))["accuracy"]
    assert acc >= 0.95


def test_one_shot_iterator_feeds_each_session_run_then_out_of_range():
    ds = tf.data.Dataset.from_tensor_slices(
        (np.arange(6, dtype=np.float32).reshape(3, 2), np.array([1, 2, 3]))).batch(2)
    x, y = ds.make_one_shot_iterator().get_next()
    total = tf.reduce_sum(x)
    with tf.Session() as sess:
        s, yy = sess.run([total, y])
        assert s == 6.0 and list(yy) == [1, 2]      # rows [0, 1], [2, 3]
        assert sess.run(total) == 9.0               # the last, partial batch
        with pytest.raises(tf.errors.OutOfRangeError, match="End of sequence"):
            sess.run(total)
    (z,) = tf.data.make_one_shot_iterator(
        tf.data.Dataset.from_tensor_slices((np.array([5, 6]),))).get_next()
    with tf.Session() as sess:
        assert [sess.run(z), sess.run(z)] == [5, 6]


def test_one_shot_iterator_tf1_training_loop_learns(tmp_path):
    """TextLineDataset + decode_csv + batch + get_next in a Session loop."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(256, 1))
    path = tmp_path / "line.csv"
    path.write_text("".join(f"{a:.5f},{3 * a + 1:.5f}\n" for (a,) in x))
    ds = (tf.data.TextLineDataset(str(path)).batch(32).repeat(30)
          .map(lambda lines: tuple(tf.decode_csv(lines, [[0.0], [0.0]]))))
    xs, ys = ds.make_one_shot_iterator().get_next()
    w = tf.Variable(0.0)
    b = tf.Variable(0.0)
    loss = tf.reduce_mean(tf.square(w * xs + b - ys))
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    steps = 0
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        while True:
            try:
                sess.run(train_op)
                steps += 1
            except tf.errors.OutOfRangeError:
                break
        assert steps == 8 * 30
        np.testing.assert_allclose(sess.run([w, b]), [3.0, 1.0], atol=1e-3)


def test_estimator_input_fn_returning_get_next_tensors(tmp_path):
    """TF 1.x input_fn style: ``return dataset.make_one_shot_iterator().get_next()``."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(200, 2)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int64)

    def input_fn(epochs):
        ds = (tf.data.Dataset.from_tensor_slices(({"a": x[:, 0], "b": x[:, 1]}, y))
              .repeat(epochs).batch(20))
        features, labels = ds.make_one_shot_iterator().get_next()
        return features, labels

    columns = [tf.feature_column.numeric_column("a"),
               tf.feature_column.numeric_column("b")]
    est = tf.estimator.LinearClassifier(columns, model_dir=str(tmp_path))
    est.train(lambda: input_fn(10))
    results = est.evaluate(lambda: input_fn(1))
    assert results["global_step"] == 100        # 10 epochs x 10 batches
    assert results["accuracy"] >= 0.95


def test_initializable_iterator_fed_placeholders_restart_each_pass():
    """TF 1.x "Importing Data": from_tensor_slices of placeholders, fed when
    the initializer runs; every initializer run starts a new pass."""
    features = tf.placeholder(tf.float32, [None, 2])
    labels = tf.placeholder(tf.int64, [None])
    ds = tf.data.Dataset.from_tensor_slices((features, labels)).batch(2)
    it = ds.make_initializable_iterator()
    x, y = it.get_next()
    total = tf.reduce_sum(x)
    data = np.arange(6, dtype=np.float32).reshape(3, 2)
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="not been initialized"):
            sess.run(total)
        sess.run(it.initializer, feed_dict={features: data, labels: [7, 8, 9]})
        s, yy = sess.run([total, y])
        assert s == 6.0 and list(yy) == [7, 8]
        assert sess.run(total) == 9.0
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(total)
        sess.run(it.initializer, feed_dict={features: 10 * data, labels: [1, 2, 3]})
        assert sess.run(total) == 60.0           # a new pass over the new values
    unfed = tf.data.Dataset.from_tensor_slices(tf.placeholder(tf.float32, [None]))
    it2 = tf.data.make_initializable_iterator(unfed)
    it2.get_next()
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="was not fed"):
            sess.run(it2.initializer)


def test_reinitializable_iterator_switches_between_datasets():
    """TF 1.x ``Iterator.from_structure`` + ``make_initializer``: one get_next()
    read from the training data, then the validation data."""
    train = tf.data.Dataset.range(5).map(lambda v: v * 10)
    val = tf.data.Dataset.range(3)
    it = tf.data.Iterator.from_structure(train.output_types, train.output_shapes)
    nxt = it.get_next()
    train_init, val_init = it.make_initializer(train), it.make_initializer(val)
    with tf.Session() as sess:
        sess.run(train_init)
        assert [sess.run(nxt) for _ in range(2)] == [0, 10]
        sess.run(val_init)
        assert [sess.run(nxt) for _ in range(3)] == [0, 1, 2]
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(nxt)
        sess.run(train_init)
        assert sess.run(nxt) == 0
    with pytest.raises(TypeError, match="elements like"):
        it.make_initializer(tf.data.Dataset.from_tensor_slices((np.zeros(2),
                                                                np.zeros(2))))


# -- Dataset.map over compat.v1 graph ops: traced once, run per element -----------

def test_map_casting_and_dividing_an_image_traces_once():
    images = np.arange(24, dtype=np.uint8).reshape(3, 2, 4)
    ds = tf.data.Dataset.from_tensor_slices((images, np.array([7, 8, 9])))
    calls = []

    def scale(image, label):  # TF 1.15's "Distributed training with Keras"
        calls.append(1)
        image = tf.cast(image, tf.float32)
        image /= 255
        return image, label

    out = list(ds.map(scale))
    assert len(out) == 3
    x, y = out[1]
    assert x.dtype == np.float32 and x.shape == (2, 4)
    np.testing.assert_allclose(x, images[1] / np.float32(255), rtol=1e-6)
    assert y == 8 and y.dtype == np.int64
    assert len(calls) == 2  # the first eager call, then one trace for all
    batch_x, batch_y = next(iter(ds.map(scale).batch(3)))
    assert batch_x.shape == (3, 2, 4) and list(batch_y) == [7, 8, 9]


def test_map_of_graph_ops_on_parallel_calls():
    images = np.ones((4, 6, 6, 1), np.float32)
    ds = tf.data.Dataset.from_tensor_slices(images).map(
        lambda im: tf.reshape(tf.clip_by_value(im * 3.0, 0.0, 2.0), [36]),
        num_parallel_calls=2)
    out = list(ds)
    assert len(out) == 4 and out[0].shape == (36,)
    np.testing.assert_allclose(out[3], 2.0, rtol=1e-6)


def test_map_parse_csv_equal_labels_come_out_bool():
    lines = np.array([b"25,Private,<=50K", b"40,Self,>50K", b"33,Private,>50K"],
                     dtype=object)

    def parse_csv(value):  # TF1's census wide & deep input_fn
        columns = tf.decode_csv(value, record_defaults=[[0], [""], [""]])
        features = dict(zip(["age", "workclass", "income"], columns))
        labels = features.pop("income")
        return features, tf.equal(labels, ">50K")

    ds = tf.data.Dataset.from_tensor_slices(lines).map(parse_csv).batch(3)
    features, labels = next(iter(ds))
    assert labels.dtype == np.bool_
    assert list(labels) == [False, True, True]
    assert list(features["age"]) == [25, 40, 33]


def test_tf_equal_treats_str_and_bytes_as_one_string():
    with tf.Session() as sess:
        assert sess.run(tf.equal(b">50K", ">50K"))
        np.testing.assert_array_equal(
            sess.run(tf.equal(np.array([b"a", b"b"], object), "a")), [True, False])


def test_fill_inside_map_with_a_computed_value():
    ds = tf.data.Dataset.range(3).map(
        lambda i: tf.fill([2], tf.cast(i, tf.float32) * 2.0))
    out = list(ds)
    assert [o.dtype for o in out] == [np.float32] * 3
    np.testing.assert_array_equal(np.stack(out), [[0, 0], [2, 2], [4, 4]])


def test_filter_with_a_graph_predicate():
    ds = tf.data.Dataset.range(6).filter(lambda i: tf.equal(i % 2, 0))
    assert [int(v) for v in ds] == [0, 2, 4]


def test_map_of_numpy_code_stays_eager():
    seen = []

    def f(x):
        seen.append(type(x))
        return np.asarray(x) * 2
    assert [int(v) for v in tf.data.Dataset.range(3).map(f)] == [0, 2, 4]
    assert all(t is not tf.Tensor for t in seen) and len(seen) == 3


def test_tf_function_results_have_numpy():
    @tf.function
    def calc(x):
        return x * 2

    got = calc(np.array([1.0]))
    assert type(got.numpy()) is np.ndarray
    np.testing.assert_array_equal(got.numpy(), [2.0])


# -- names TF 2's guides use ---------------------------------------------------------

def test_sparse_tensor_to_dense():
    st = tf.SparseTensor(indices=[[0, 0], [1, 2]], values=[1, 2], dense_shape=[3, 4])
    dense = tf.sparse.to_dense(st)
    assert st.shape == (3, 4) and dense.numpy().shape == (3, 4)
    np.testing.assert_array_equal(dense, [[1, 0, 0, 0], [0, 0, 2, 0], [0, 0, 0, 0]])
    with pytest.raises(ValueError, match="one value per index row"):
        tf.SparseTensor([[0, 0]], [1, 2], [2, 2])
    with pytest.raises(TypeError, match="expects a SparseTensor"):
        tf.sparse.to_dense(np.zeros(3))


def test_random_uniform_integer_dtype():
    t = tf.random.uniform([1000], minval=2, maxval=5, dtype=tf.int32, seed=1)
    assert t.dtype == np.int32
    with tf.Session() as sess:
        got = sess.run(t)
    assert got.dtype == np.int32 and set(got.tolist()) == {2, 3, 4}
    with pytest.raises(ValueError, match="needs an int maxval"):
        tf.random.uniform([2], dtype=tf.int64)


def test_counter_and_list_files(tmp_path):
    counter = tf.data.experimental.Counter(start=3, step=2)
    assert [int(v) for v in counter.take(3)] == [3, 5, 7]
    assert counter.cardinality() == tf.data.experimental.INFINITE_CARDINALITY
    for n in ("b.txt", "a.txt", "c.csv"):
        (tmp_path / n).write_text(n)
    ordered = tf.data.Dataset.list_files(str(tmp_path / "*.txt"), shuffle=False)
    assert [v.numpy() for v in ordered] == [str(tmp_path / "a.txt").encode(),
                                            str(tmp_path / "b.txt").encode()]
    mixed = tf.data.Dataset.list_files(str(tmp_path / "*"), seed=3)
    assert sorted(v.numpy() for v in mixed) == sorted(
        str(tmp_path / n).encode() for n in ("a.txt", "b.txt", "c.csv"))
    with pytest.raises(tf.errors.InvalidArgumentError, match="match at least one"):
        tf.data.Dataset.list_files(str(tmp_path / "*.none"))


def test_strings_regex_replace_and_substr():
    got = tf.strings.regex_replace(np.array([b"a<br />b", b"<br />"], object),
                                   "<br />", " ")
    assert list(got) == [b"a b", b" "]
    assert tf.strings.regex_replace("aaa", "a", "b", replace_global=False) == b"baa"
    assert list(tf.strings.substr(np.array([b"hello", b"world"], object), 1, 3)) \
        == [b"ell", b"orl"]
    assert tf.strings.substr("hello", -2, 5) == b"lo"
    with pytest.raises(ValueError, match="out of range"):
        tf.strings.substr("hi", 5, 1)
