"""``model.export(format="onnx")`` / ``kf.saving.export_onnx``: ONNX Runtime runs
the exported inference graph and gives ``model.predict``'s outputs."""

from __future__ import annotations

import re

import numpy as np
import pytest

import kerasflow as kf
import kerasflow.compat.v1 as tf
from kerasflow.backend import ops
from kerasflow.backend.graph import placeholder

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

L = kf.layers


def _randomize(model, seed=0):
    rng = np.random.default_rng(seed)
    # Positive, so BatchNormalization's moving variance stays valid.
    model.set_weights([(np.abs(rng.normal(size=w.shape)) * 0.5 + 0.1).astype(w.dtype)
                       for w in model.get_weights()])


def _run_onnx(path, xs):
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess, sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), xs)})


def _check_export(model, xs, tmp_path, method="export"):
    path = tmp_path / "model.onnx"
    if method == "export":
        model.export(path, format="onnx")
    else:
        kf.saving.export_onnx(model, path)
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    assert proto.opset_import[0].version >= 17
    sess, got = _run_onnx(path, xs)
    # The batch dimension is symbolic: one file serves any batch size.
    assert all(isinstance(i.shape[0], str) for i in sess.get_inputs())
    want = model.predict(xs[0] if len(xs) == 1 else xs, verbose=0)
    want = want if isinstance(want, list) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    return path


def test_mlp_with_dropout_and_softmax_matches_predict(tmp_path):
    model = kf.Sequential([kf.Input((4,)), L.Dense(8, activation="relu"),
                           L.Dropout(0.5), L.Dense(6, activation="tanh"),
                           L.Dense(3, activation="softmax")])
    _randomize(model)
    x = np.random.default_rng(1).normal(size=(5, 4)).astype("float32")
    path = _check_export(model, [x], tmp_path)
    # Another batch size through the same file.
    _, (got,) = _run_onnx(path, [x[:2]])
    np.testing.assert_allclose(got, model.predict(x[:2], verbose=0), atol=1e-5)


def test_mnist_convnet_matches_predict(tmp_path):
    model = kf.Sequential([
        kf.Input((28, 28, 1)), L.Conv2D(8, 3, activation="relu"),
        L.MaxPooling2D(2), L.Conv2D(4, 3, padding="same", strides=2,
                                    activation="relu"),
        L.MaxPooling2D(2, padding="same"), L.Flatten(), L.Dropout(0.5),
        L.Dense(10, activation="softmax")])
    x = np.random.default_rng(2).normal(size=(3, 28, 28, 1)).astype("float32")
    _check_export(model, [x], tmp_path, method="export_onnx")


@pytest.mark.parametrize("cell", ["LSTM", "GRU", "SimpleRNN"])
def test_recurrent_stack_matches_predict(tmp_path, cell):
    rnn = getattr(L, cell)
    model = kf.Sequential([kf.Input((6, 3)), rnn(5, return_sequences=True),
                           rnn(4), L.Dense(2)])
    x = np.random.default_rng(3).normal(size=(2, 6, 3)).astype("float32")
    _check_export(model, [x], tmp_path)


def test_conv1d_pooling_and_normalizations_match_predict(tmp_path):
    model = kf.Sequential([kf.Input((10, 3)), L.Conv1D(4, 3, strides=2,
                                                      padding="same"),
                           L.AveragePooling1D(2), L.GlobalAveragePooling1D(),
                           L.BatchNormalization(), L.LayerNormalization()])
    _randomize(model)
    x = np.random.default_rng(4).normal(size=(2, 10, 3)).astype("float32")
    _check_export(model, [x], tmp_path)


def test_multi_input_multi_output_functional_model(tmp_path):
    a, b = kf.Input((4,), name="a"), kf.Input((3,), name="b")
    h = L.Concatenate()([L.Dense(5, activation="relu")(a), b])
    model = kf.Model([a, b], [L.Dense(2)(h), L.Dense(1, activation="sigmoid")(h)])
    rng = np.random.default_rng(5)
    xs = [rng.normal(size=(3, 4)).astype("float32"),
          rng.normal(size=(3, 3)).astype("float32")]
    path = _check_export(model, xs, tmp_path)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.name for i in sess.get_inputs()] == ["a", "b"]


def test_session_graph_exports_with_named_inputs(tmp_path):
    x = placeholder("float32", (None, 3), name="x")
    w = kf.Variable(np.array([[1.0], [2.0], [3.0]], "float32"))
    y = ops.relu(ops.matmul(x, w) - 1.0)
    path = tmp_path / "graph.onnx"
    kf.saving.export_onnx({"score": y}, path, inputs={"features": x})
    sess, (got,) = _run_onnx(path, [np.array([[1, 1, 1], [0, 0, 0]], "float32")])
    assert [o.name for o in sess.get_outputs()] == ["score"]
    np.testing.assert_allclose(got, [[5.0], [0.0]])


class _TransformerBlock(L.Layer):
    """keras.io's "Text classification with Transformer" block."""

    def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1, **kwargs):
        super().__init__(**kwargs)
        self.att = L.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.ffn = kf.Sequential([L.Dense(ff_dim, activation="relu"),
                                  L.Dense(embed_dim)])
        self.layernorm1 = L.LayerNormalization(epsilon=1e-6)
        self.layernorm2 = L.LayerNormalization(epsilon=1e-6)
        self.dropout1, self.dropout2 = L.Dropout(rate), L.Dropout(rate)

    def call(self, inputs, training=None):
        attn = self.dropout1(self.att(inputs, inputs), training=training)
        out1 = self.layernorm1(inputs + attn)
        ffn = self.dropout2(self.ffn(out1), training=training)
        return self.layernorm2(out1 + ffn)


class _TokenAndPositionEmbedding(L.Layer):
    def __init__(self, maxlen, vocab_size, embed_dim, **kwargs):
        super().__init__(**kwargs)
        self.token_emb = L.Embedding(input_dim=vocab_size, output_dim=embed_dim)
        self.pos_emb = L.Embedding(input_dim=maxlen, output_dim=embed_dim)

    def call(self, x):
        positions = kf.ops.arange(0, kf.ops.shape(x)[-1], 1)
        return self.token_emb(x) + self.pos_emb(positions)


def test_transformer_text_classifier_matches_predict(tmp_path):
    maxlen, vocab = 7, 20
    inputs = L.Input((maxlen,), dtype="int32")
    x = _TokenAndPositionEmbedding(maxlen, vocab, 8)(inputs)
    x = _TransformerBlock(8, 2, 16)(x)
    x = L.Dropout(0.1)(L.GlobalAveragePooling1D()(x))
    x = L.Dropout(0.1)(L.Dense(6, activation="relu")(x))
    model = kf.Model(inputs, L.Dense(2, activation="softmax")(x))
    tokens = np.random.default_rng(6).integers(0, vocab, (5, maxlen)).astype("int32")
    path = _check_export(model, [tokens], tmp_path)
    _, (got,) = _run_onnx(path, [tokens[:2]])
    np.testing.assert_allclose(got, model.predict(tokens[:2], verbose=0),
                               rtol=1e-5, atol=1e-5)
    used = {n.op_type for n in onnx.load(str(path)).graph.node}
    # The projections stay einsums, the fused attention is MatMul/Softmax/
    # MatMul; both lookups are gathers.
    assert {"Einsum", "Gather", "MatMul", "Softmax"} <= used


def test_masked_attention_matches_predict(tmp_path):
    # Causal and padding masks (Embedding(mask_zero=True)) reach the fused
    # attention op as its bool input.
    inputs = L.Input((6,), dtype="int32")
    x = L.Embedding(12, 8, mask_zero=True)(inputs)
    x = L.MultiHeadAttention(2, 4)(x, x, use_causal_mask=True)
    model = kf.Model(inputs, L.Dense(3)(x))
    tokens = np.random.default_rng(3).integers(0, 12, (4, 6)).astype("int32")
    tokens[:, -2:] = 0
    path = _check_export(model, [tokens], tmp_path)
    assert "Where" in {n.op_type for n in onnx.load(str(path)).graph.node}


@pytest.mark.parametrize("layer, shape", [
    (lambda: L.Conv2DTranspose(3, 3, strides=2, padding="same"), (5, 5, 2)),
    # Stride 3 over a 2-wide kernel: the last column is reached by no input.
    (lambda: L.Conv2DTranspose(3, (3, 2), strides=(2, 3)), (5, 4, 2)),
    (lambda: L.Conv2DTranspose(3, (2, 4), strides=(3, 2), padding="same"),
     (4, 5, 2)),
    (lambda: L.Conv2DTranspose(3, 3, padding="same", dilation_rate=2), (5, 6, 2)),
    (lambda: L.Conv1DTranspose(3, 3, strides=2, padding="same"), (5, 2)),
], ids=["same_s2", "valid_s3_past_kernel", "same_odd", "dilated", "conv1d"])
def test_transposed_convolutions_match_predict(tmp_path, layer, shape):
    i = kf.Input(shape)
    model = kf.Model(i, layer()(i))
    _randomize(model)
    x = np.random.default_rng(7).normal(size=(3, *shape)).astype("float32")
    path = _check_export(model, [x], tmp_path)
    _, (got,) = _run_onnx(path, [x[:1]])
    np.testing.assert_allclose(got, model.predict(x[:1], verbose=0), rtol=1e-5,
                               atol=1e-5)


def _census_like(n, seed):
    rng = np.random.default_rng(seed)
    features = {"age": rng.uniform(17, 80, n).astype("float32"),
                "hours_per_week": rng.uniform(10, 60, n).astype("float32")}
    for key, values in [("gender", ["Female", "Male"]),
                        ("education", ["Bachelors", "HS-grad", "Masters", "9th"]),
                        ("occupation", ["Sales", "Tech-support", "Craft-repair"]),
                        ("native_country", ["United-States", "Mexico", "?"])]:
        features[key] = np.array(rng.choice(values, n), dtype=object)
    return features, (features["age"] > 40).astype("int64")


def test_wide_and_deep_serving_graph_matches_estimator_predict(tmp_path):
    # The columns of examples/census_wide_deep.py, with fewer hash buckets.
    fc = kf.feature_column
    gender = fc.categorical_column_with_vocabulary_list("gender", ["Female", "Male"])
    education = fc.categorical_column_with_vocabulary_list(
        "education", ["Bachelors", "HS-grad", "Masters"])  # "9th" is OOV
    occupation = fc.categorical_column_with_hash_bucket("occupation", 50)
    country = fc.categorical_column_with_hash_bucket("native_country", 50)
    age = fc.numeric_column("age")
    age_buckets = fc.bucketized_column(age, [25, 40, 60])
    wide = [gender, education, occupation, country, age_buckets,
            fc.crossed_column(["education", "occupation"], 40),
            fc.crossed_column([age_buckets, "education", "occupation"], 40)]
    deep = [fc.indicator_column(education), fc.indicator_column(gender),
            fc.embedding_column(occupation, dimension=3),
            fc.embedding_column(country, dimension=3), age,
            fc.numeric_column("hours_per_week")]
    est = tf.estimator.DNNLinearCombinedClassifier(
        model_dir=str(tmp_path / "est"), linear_feature_columns=wide,
        dnn_feature_columns=deep, dnn_hidden_units=[8, 4],
        config=tf.estimator.RunConfig(tf_random_seed=0))
    features, labels = _census_like(32, 0)
    est.train(lambda: (features, labels), steps=5)
    raw, _ = _census_like(6, 1)
    (want,) = est.predict(lambda: raw, yield_single_examples=False)

    # The serving graph, TF1's way: the numeric features the columns make on
    # the host (vocabularies, hashes, buckets) -> placeholders -> model_fn in
    # PREDICT mode, the checkpoint restored by name.
    served = fc.transform_features(raw, wide + deep)
    feeds = {k: tf.placeholder("float32" if v.dtype.kind == "f" else v.dtype,
                               (None, *v.shape[1:]), name=k)
             for k, v in served.items()}
    spec = est.model_fn(features=feeds, labels=None,
                        mode=tf.estimator.ModeKeys.PREDICT)
    variables = kf.backend.reachable_variables(list(spec.predictions.values()))
    # Names are unique per process: a rebuild's "kernel_1" is the checkpoint's
    # "kernel" (compat.v1.train.Saver's docstring).
    saver = tf.train.Saver({re.sub(r"_\d+$", "", v.name): v for v in variables})
    with tf.Session() as sess:
        saver.restore(sess, est.latest_checkpoint())
    path = tmp_path / "wide_deep.onnx"
    kf.saving.export_onnx(spec.predictions, path, inputs=feeds)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    assert names == ["logits", "logistic", "probabilities", "class_ids"]
    for n in (6, 2):  # one file, two batch sizes
        got = sess.run(None, {i.name: np.asarray(served[i.name][:n])
                              for i in sess.get_inputs()})
        for name, g in zip(names, got):
            assert g.dtype == want[name].dtype
            np.testing.assert_allclose(g, want[name][:n], rtol=1e-5, atol=1e-5)


def test_one_hot_gather_and_argmax_keep_kerasflow_semantics(tmp_path):
    ids = placeholder("int64", (None,), name="ids")
    scores = placeholder("float32", (None, 3), name="scores")
    table = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], "float32")
    outs = {"hot": ops.one_hot(ids, 3),
            "rows": ops.gather(table, ops.clip(ids, -1, 2)),
            "best": ops.argmax(scores, axis=-1)}
    path = tmp_path / "g.onnx"
    kf.saving.export_onnx(outs, path, inputs={"ids": ids, "scores": scores})
    feed = [np.array([0, 2, -1, 5]),
            np.array([[0, 3, 1], [2, 2, 0], [-1, -5, -2], [0, 0, 9]], "float32")]
    _, (hot, rows, best) = _run_onnx(path, feed)
    # Out-of-range ids (-1, 5) give all-zero rows, as TF's one_hot; gather
    # reads -1 as the last row; argmax takes the first of tied maxima.
    np.testing.assert_array_equal(hot, [[1, 0, 0], [0, 0, 1], [0, 0, 0],
                                        [0, 0, 0]])
    np.testing.assert_array_equal(rows, [[1, 2], [5, 6], [5, 6], [5, 6]])
    np.testing.assert_array_equal(best, [1, 0, 0, 2])


def test_unsupported_op_names_the_op_and_the_layer(tmp_path):
    model = kf.Sequential([kf.Input((4,)), L.Dense(3), L.Lambda(ops.cumsum,
                                                                name="running")])
    with pytest.raises(NotImplementedError, match=r"op 'Cumsum'.*layer '.*running'"):
        model.export(tmp_path / "m.onnx", format="onnx")
    assert not (tmp_path / "m.onnx").exists()


def test_other_formats_and_old_opsets_are_refused(tmp_path):
    model = kf.Sequential([kf.Input((4,)), L.Dense(3)])
    with pytest.raises(ValueError, match="format='onnx'.*tf_saved_model"):
        model.export(tmp_path / "m", format="tf_saved_model")
    with pytest.raises(ValueError, match="opset_version >= 17"):
        model.export(tmp_path / "m.onnx", format="onnx", opset_version=13)
