"""``model.export(format="onnx")`` / ``kf.saving.export_onnx``: ONNX Runtime runs
the exported inference graph and gives ``model.predict``'s outputs."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
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
