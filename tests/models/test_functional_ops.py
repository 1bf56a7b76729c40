"""Functional models with raw ops between layers, and the functional API around
them (issue 19): ``a + b``, ``ops.concatenate``, ``x * 2``, ``ops.mean``,
``x[:, 0]`` between ``Input``s and layers are part of ``Model(inputs,
outputs)``; they replay with the ``training`` flag, train, and save and load
by registered op name.

Keras 3.15 with its numpy backend is the oracle for forward values: the same
architecture is written once against either library (``_two_input_model``),
weights are copied by layer name and the outputs compared. The Sequential
feature-extraction case is the keras.io guide "The Sequential model"
("Feature extraction with a Sequential model").
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from kerasflow import ops

layers = kf.layers


def _keras():
    os.environ.setdefault("KERAS_BACKEND", "numpy")
    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "numpy":
        pytest.skip("the Keras oracle runs on its numpy backend")
    return keras


def _two_input_model(lib):
    a, b = lib.Input((4,), name="a"), lib.Input((4,), name="b")
    x = (a + b) * 0.5
    h = lib.layers.Dense(3, activation="relu", name="d1")(
        lib.ops.concatenate([x, a], axis=-1))
    h = h - lib.ops.mean(h, axis=1, keepdims=True)
    s = h[:, 0:1] * 2.0 + h[:, 1:]
    return lib.Model([a, b], lib.layers.Dense(2, name="d2")(s))


def _copy_weights(src, dst):
    for layer in src.layers:
        if layer.get_weights():
            dst.get_layer(layer.name).set_weights(layer.get_weights())


def _data(n=5, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(n, 4)).astype("float32") for _ in range(2)]


def test_raw_ops_between_layers_match_keras():
    keras = _keras()
    model, oracle = _two_input_model(kf), _two_input_model(keras)
    _copy_weights(model, oracle)
    xs = _data()
    want = np.asarray(oracle.predict(xs, verbose=0))
    np.testing.assert_allclose(model.predict(xs, verbose=0), want, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(model(xs), want, rtol=1e-5, atol=1e-6)
    assert [layer.name for layer in model.layers] == ["a", "b", "d1", "d2"]


def test_config_names_ops_and_round_trips():
    model = _two_input_model(kf)
    config = model.get_config()
    ops_used = [n["op"] for n in config["nodes"] if "op" in n]
    assert {"Add", "Mul", "Concat", "Mean", "Sub", "StridedSlice"} <= set(ops_used)
    text = json.dumps(config)  # plain JSON: no objects, no pickle
    xs = _data()
    for again in (kf.Model.from_config(json.loads(text)),
                  kf.models.model_from_json(model.to_json()),
                  kf.models.model_from_yaml(model.to_yaml())):
        again.set_weights(model.get_weights())
        np.testing.assert_array_equal(again.predict(xs, verbose=0),
                                      model.predict(xs, verbose=0))
    assert kf.Model.from_config(config).get_config() == config


def test_save_and_load_with_constants_and_slices(tmp_path):
    x = kf.Input((4,), name="x")
    y = x * np.array([1.0, -2.0, 3.0, 0.5], "float32") + ops.ones((4,))
    y = layers.Dense(3, name="d")(y[:, ::-1])
    out = ops.concatenate([y[..., :1] ** 2, ops.abs(y[:, 1:])], axis=-1)
    model = kf.Model(x, out)
    model.save(tmp_path / "m.keras")
    loaded = kf.models.load_model(tmp_path / "m.keras")
    xs = _data()[0]
    np.testing.assert_array_equal(loaded.predict(xs, verbose=0),
                                  model.predict(xs, verbose=0))
    w, b = model.get_layer("d").get_weights()
    h = (xs * [1.0, -2.0, 3.0, 0.5] + 1.0)[:, ::-1] @ w + b
    np.testing.assert_allclose(model.predict(xs, verbose=0),
                               np.concatenate([h[:, :1] ** 2, np.abs(h[:, 1:])],
                                              axis=-1), rtol=1e-5)


def test_one_sgd_step_through_ops_matches_hand_gradient(float64):
    x = kf.Input((2,))
    model = kf.Model(x, layers.Dense(1, use_bias=False, name="d")(x * 2.0) - 1.0)
    model.get_layer("d").set_weights([np.array([[0.5], [-1.0]])])
    model.compile(optimizer=kf.optimizers.SGD(0.1), loss="mse")
    xs, ys = np.array([[1.0, 2.0], [3.0, -1.0]]), np.array([[0.0], [1.0]])
    model.train_on_batch(xs, ys)
    w = np.array([[0.5], [-1.0]])
    pred = 2 * xs @ w - 1.0
    grad = (2 * xs).T @ (2 * (pred - ys) / len(xs))
    np.testing.assert_allclose(model.get_layer("d").get_weights()[0],
                               w - 0.1 * grad, rtol=1e-12)


def test_training_flag_reaches_layers_after_ops():
    x = kf.Input((1000,))
    model = kf.Model(x, layers.Dropout(0.5, seed=1)(x + 1.0))
    ones = np.zeros((2, 1000), "float32")
    np.testing.assert_array_equal(model(ones, training=False), ones + 1.0)
    dropped = model(ones, training=True)
    assert 0.3 < np.mean(dropped == 0) < 0.7
    assert set(np.unique(dropped)) <= {0.0, 2.0}


def test_nested_functional_models_with_ops(tmp_path):
    i = kf.Input((3,))
    inner = kf.Model(i, layers.Dense(2, name="inner_d")(i * 3.0) + i[:, :2])
    o = kf.Input((3,))
    model = kf.Model(o, ops.mean(inner(o - 1.0), axis=1))
    xs = _data()[0][:, :3]
    w, b = inner.get_layer("inner_d").get_weights()
    z = xs - 1.0
    np.testing.assert_allclose(model.predict(xs, verbose=0),
                               np.mean((z * 3) @ w + b + z[:, :2], axis=1),
                               rtol=1e-5)
    model.save(tmp_path / "nested.keras")
    loaded = kf.models.load_model(tmp_path / "nested.keras")
    np.testing.assert_array_equal(loaded.predict(xs, verbose=0),
                                  model.predict(xs, verbose=0))


def test_long_chain_of_ops_needs_no_recursion():
    x = kf.Input((2,))
    y = x
    for _ in range(3000):
        y = y + 1.0
    model = kf.Model(x, y)
    np.testing.assert_allclose(model(np.zeros((1, 2), "float32")),
                               [[3000.0, 3000.0]])
    again = kf.Model.from_config(model.get_config())
    assert len(again.get_config()["nodes"]) == 3000


def test_loading_refuses_unknown_and_stateful_ops():
    x = kf.Input((2,))
    config = kf.Model(x, x + 1.0).get_config()
    (node,) = [n for n in config["nodes"] if "op" in n]
    node["op"] = "NoSuchOp"
    with pytest.raises(ValueError, match="registered op. Received: op='NoSuchOp'"):
        kf.Model.from_config(config)
    node["op"] = "Assign"
    with pytest.raises(ValueError, match="stateless op. Received: op='Assign'"):
        kf.Model.from_config(config)


def test_op_on_a_free_variable_cannot_be_saved():
    v = K.Variable(np.ones((2,), "float32"), name="free")
    x = kf.Input((2,))
    model = kf.Model(x, x * v)
    np.testing.assert_allclose(model(np.full((1, 2), 3.0)), [[3.0, 3.0]])
    with pytest.raises(ValueError, match="cannot be saved.*Variable"):
        model.get_config()


def test_placeholder_outside_the_inputs_is_disconnected():
    x, other = kf.Input((2,)), K.placeholder("float32", (None, 2), name="stray")
    with pytest.raises(ValueError, match="Graph disconnected.*stray"):
        kf.Model(x, layers.Dense(1)(x + other))


def test_malformed_configs_name_the_problem():
    x = kf.Input((2,))
    config = kf.Model(x, layers.Dense(1)(x * 2.0)).get_config()
    broken = {k: v for k, v in config.items() if k != "nodes"}
    with pytest.raises(ValueError, match="expects a 'nodes' list"):
        kf.Model.from_config(broken)
    cyclic = json.loads(json.dumps(config))
    cyclic["nodes"] = cyclic["nodes"][::-1]  # the Dense call before its input op
    with pytest.raises(ValueError, match="computed later or never"):
        kf.Model.from_config(cyclic)
    missing = json.loads(json.dumps(config))
    missing["nodes"][0]["inputs"] = [["node_b", 0, 0]]
    with pytest.raises(ValueError, match="unknown layer 'node_b'"):
        kf.Model.from_config(missing)


def test_sequential_feature_extraction_keras_io_guide():
    initial_model = kf.Sequential([
        kf.Input(shape=(20, 20, 3)),
        layers.Conv2D(4, 5, strides=2, activation="relu"),
        layers.Conv2D(4, 3, activation="relu", name="my_intermediate_layer"),
        layers.Conv2D(4, 3, activation="relu"),
    ])
    feature_extractor = kf.Model(
        inputs=initial_model.inputs,
        outputs=[layer.output for layer in initial_model.layers])
    x = np.random.default_rng(0).random((1, 20, 20, 3)).astype("float32")
    features = feature_extractor(x)
    assert [f.shape for f in features] == [(1, 8, 8, 4), (1, 6, 6, 4),
                                           (1, 4, 4, 4)]
    np.testing.assert_allclose(features[-1], initial_model(x), rtol=1e-6)
    one = kf.Model(inputs=initial_model.inputs, outputs=initial_model.get_layer(
        name="my_intermediate_layer").output)
    np.testing.assert_allclose(one(x), features[1], rtol=1e-6)
    assert initial_model.input is initial_model.inputs[0]
    assert initial_model.output is initial_model.outputs[0]


def test_sequential_inputs_before_and_after_build():
    model = kf.Sequential([layers.Dense(2), layers.Dense(1)])
    with pytest.raises(AttributeError, match="no defined inputs"):
        model.inputs
    model.predict(np.ones((3, 5)), verbose=0)  # built from the data
    assert model.inputs[0].shape == (None, 5)
    sub = kf.Model(model.inputs, model.layers[0].output)
    w, b = model.layers[0].get_weights()
    np.testing.assert_allclose(sub(np.ones((1, 5))), np.ones((1, 5)) @ w + b,
                               rtol=1e-5, atol=1e-6)


def test_functional_model_inside_sequential_round_trips():
    i = kf.Input((3,))
    base = kf.Model(i, layers.Dense(4)(i) * 2.0)
    model = kf.Sequential([kf.Input((3,)), base, layers.Dense(1)])
    again = kf.Sequential.from_config(model.get_config())
    again.set_weights(model.get_weights())
    xs = _data()[0][:, :3]
    np.testing.assert_array_equal(again.predict(xs, verbose=0),
                                  model.predict(xs, verbose=0))


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "average",
                                  "maximum", "minimum", "concatenate", "dot"])
def test_merge_helpers_match_keras(name):
    keras = _keras()
    xs = _data(seed=1)
    kwargs = {"axes": 1} if name == "dot" else {}
    a, b = kf.Input((4,)), kf.Input((4,))
    model = kf.Model([a, b], getattr(kf.layers, name)([a, b], **kwargs))
    assert model.layers[-1].name.startswith(name if name != "dot" else "dot")
    want = getattr(keras.layers, name)(xs, **kwargs)
    np.testing.assert_allclose(model(xs), np.asarray(want), rtol=1e-6)
    np.testing.assert_allclose(getattr(kf.layers, name)(xs, **kwargs),
                               np.asarray(want), rtol=1e-6)


def test_time_distributed_with_unknown_timesteps_matches_keras():
    keras = _keras()
    x = kf.Input((None, 4))
    model = kf.Model(x, layers.TimeDistributed(layers.Dense(3, name="td_d"))(x))
    kx = keras.Input((None, 4))
    oracle = keras.Model(kx, keras.layers.TimeDistributed(keras.layers.Dense(3))(kx))
    oracle.set_weights(model.get_weights())
    for steps in (2, 7):
        xs = np.random.default_rng(steps).normal(size=(3, steps, 4)).astype(
            "float32")
        np.testing.assert_allclose(model.predict(xs, verbose=0),
                                   np.asarray(oracle.predict(xs, verbose=0)),
                                   rtol=1e-5, atol=1e-6)
    model.compile("sgd", "mse")
    loss = model.fit(np.ones((8, 5, 4)), np.zeros((8, 5, 3)), epochs=3,
                     verbose=0).history["loss"]
    assert loss[-1] < loss[0]


def test_input_spec_shape_and_optional_input_config():
    spec = layers.InputSpec(shape=(None, 4, 3))
    assert spec.ndim == 3
    with pytest.raises(ValueError, match="ndim to match shape"):
        layers.InputSpec(shape=(None, 4), ndim=3)
    x = kf.Input((2,), optional=True, name="maybe")
    layer = kf.Model(x, x * 1.0).layers[0]
    assert kf.layers.deserialize(kf.layers.serialize(layer)).optional is True


def test_extra_dict_keys_in_predict_are_ignored_with_a_warning():
    a = kf.Input((2,), name="a")
    model = kf.Model({"a": a}, a * 2.0)
    with pytest.warns(UserWarning, match="ignoring \\['extra'\\]"):
        out = model.predict({"a": np.ones((3, 2)), "extra": np.ones((3, 7))},
                            verbose=0)
    np.testing.assert_allclose(out, np.full((3, 2), 2.0))


def test_nested_dict_inputs_in_predict_and_fit():
    i1, i2, i3 = kf.Input((1,)), kf.Input((2,)), kf.Input((3,))
    dense = layers.Dense(1, name="d")
    model = kf.Model({"1": i1, "others": {"2": i2, "3": i3}},
                     dense(layers.concatenate([i1, i2, i3])))
    rng = np.random.default_rng(0)
    x = {"1": rng.normal(size=(6, 1)),
         "others": {"2": rng.normal(size=(6, 2)), "3": rng.normal(size=(6, 3))}}
    w, b = dense.get_weights()
    flat = np.concatenate([x["1"], x["others"]["2"], x["others"]["3"]], axis=1)
    np.testing.assert_allclose(model.predict(x, verbose=0), flat @ w + b,
                               rtol=1e-5)
    model.compile("sgd", "mse")
    loss = model.fit(x, np.zeros((6, 1)), epochs=3, verbose=0).history["loss"]
    assert loss[-1] < loss[0]


def test_summary_lists_ops_between_layers_in_graph_order():
    a, b = kf.Input((4,), name="a"), kf.Input((4,), name="b")
    model = kf.Model([a, b], layers.Dense(2, name="d")(
        ops.concatenate([(a + b) * 0.5, a])))
    lines = []
    model.summary(print_fn=lines.append)
    rows = [r.split()[:2] for r in lines[0].splitlines()[4:10]]
    assert rows == [["a", "(InputLayer)"], ["b", "(InputLayer)"],
                    ["add", "(Add)"], ["mul", "(Mul)"],
                    ["concat", "(Concat)"], ["d", "(Dense)"]]
    assert "(None, 8)" in lines[0].splitlines()[8]


class _Scale(layers.Layer):
    def call(self, x, scale=None):
        return x * scale


def test_tensor_computed_by_ops_passed_as_a_keyword_argument():
    x = kf.Input((3,))
    out = _Scale(name="scale")(x, scale=ops.mean(x, axis=1, keepdims=True) + 1.0)
    model = kf.Model(x, out)
    xs = _data()[0][:, :3]
    want = xs * (xs.mean(axis=1, keepdims=True) + 1.0)
    np.testing.assert_allclose(model(xs), want, rtol=1e-5)
    again = kf.models.model_from_json(model.to_json(),
                                      custom_objects={"_Scale": _Scale})
    np.testing.assert_allclose(again(xs), want, rtol=1e-5)


def test_dict_outputs_are_named_by_their_keys():
    a = kf.Input((2,), name="a")
    y = layers.Dense(1, name="d")(a)
    model = kf.Model({"a": a}, {"out": y, "dbl": y * 2.0})
    model.compile("sgd", loss={"out": "mse", "dbl": "mse"})
    x = {"a": np.ones((4, 2))}
    targets = {"out": np.zeros((4, 1)), "dbl": np.zeros((4, 1))}
    w, b = model.get_layer("d").get_weights()
    m = np.mean((np.ones((4, 2)) @ w + b) ** 2)
    # total, then per output in key order: mse(2y) = 4 mse(y), mse(y).
    np.testing.assert_allclose(model.evaluate(x, targets, verbose=0),
                               [5 * m, 4 * m, m], rtol=1e-5)
    pred = model.predict(x, verbose=0)
    np.testing.assert_allclose(pred["dbl"], 2 * pred["out"], rtol=1e-6)


def test_shared_layer_and_multi_output_op_round_trip():
    a, b = kf.Input((4,)), kf.Input((4,))
    d = layers.Dense(3, name="shared")
    h = d(a) + d(b * 2.0)
    _, second = ops.split(ops.concatenate([h, h * 3.0], axis=-1), 2, axis=-1)
    model = kf.Model([a, b], [h[:, :1], d(a - 1.0), second])
    assert len(model.layers) == 3  # two inputs, one Dense called three times
    again = kf.models.model_from_json(model.to_json())
    again.set_weights(model.get_weights())
    xs = _data()
    w, bias = d.get_weights()
    h_np = xs[0] @ w + bias + (2 * xs[1]) @ w + bias
    for got, want in zip(again.predict(xs, verbose=0),
                         [h_np[:, :1], (xs[0] - 1) @ w + bias, 3 * h_np]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_softmax_as_a_raw_op_keeps_its_logits_for_the_loss():
    x = kf.Input((1,))
    h = layers.Dense(2, use_bias=False, kernel_initializer="ones")(x)
    model = kf.Model(x, kf.activations.softmax(h * np.array([1.0, -1.0],
                                                            "float32")))
    model.compile("sgd", "sparse_categorical_crossentropy")
    # logits (50, -50), label 1: exactly 100 from the logits; from the clipped
    # probabilities it would be -log(1e-7) = 16.1.
    np.testing.assert_allclose(model.evaluate(np.array([[50.0]]), np.array([1]),
                                              verbose=0), 100.0, rtol=1e-5)


def test_batch_norm_after_ops_updates_its_statistics_in_fit():
    x = kf.Input((3,))
    bn = layers.BatchNormalization(momentum=0.0)
    model = kf.Model(x, layers.Dense(1)(bn((x + 1.0) * 2.0)))
    model.compile("sgd", "mse")
    xs = np.random.default_rng(0).normal(size=(64, 3)).astype("float32")
    model.fit(xs, np.zeros((64, 1)), batch_size=64, epochs=1, verbose=0)
    np.testing.assert_allclose(bn.moving_mean.numpy(), ((xs + 1) * 2).mean(0),
                               rtol=1e-5)


def test_model_input_and_output_are_the_structures_given():
    a, b = kf.Input((2,), name="a"), kf.Input((2,), name="b")
    y = a + b
    z = layers.Dense(1)(y)
    model = kf.Model({"a": a, "b": b}, [y, z])
    assert model.input["a"] is a and model.input["b"] is b
    assert model.output[0] is y and model.output[1] is z
    assert model.inputs == [a, b] and model.input_shape == {"a": (None, 2),
                                                            "b": (None, 2)}


def test_sub_model_from_an_op_output_replays_the_rest():
    a = kf.Input((2,))
    mid = a * 2.0
    out = layers.Dense(1, name="tail")(mid) + 1.0
    sub = kf.Model(mid, out)
    assert isinstance(sub.layers[0], layers.InputLayer)
    assert [layer.name for layer in sub.layers[1:]] == ["tail"]
    w, b = sub.get_layer("tail").get_weights()
    xs = np.array([[1.0, 2.0]], "float32")
    np.testing.assert_allclose(sub(xs), xs @ w + b + 1.0, rtol=1e-6)
    again = kf.Model.from_config(sub.get_config())
    again.set_weights(sub.get_weights())
    np.testing.assert_allclose(again(xs), sub(xs), rtol=1e-6)


# -- keras.io's VAE: a sampling layer with a run-time batch size -------------------
class _Sampling(kf.layers.Layer):
    def call(self, inputs):
        z_mean, z_log_var = inputs
        batch = ops.shape(z_mean)[0]  # known when the graph runs
        dim = ops.shape(z_mean)[1]
        epsilon = kf.random.normal(shape=(batch, dim), seed=1)
        return z_mean + ops.exp(0.5 * z_log_var) * epsilon


def test_random_normal_with_the_batch_size_of_the_graph():
    inputs = kf.Input((3,))
    z_mean = kf.layers.Dense(2, name="z_mean")(inputs)
    z_log_var = kf.layers.Dense(2, name="z_log_var", kernel_initializer="zeros",
                                bias_initializer="zeros")(inputs)
    model = kf.Model(inputs, _Sampling()([z_mean, z_log_var]))
    x = np.zeros((2000, 3), "float32")  # z_mean = bias = 0: z ~ N(0, 1)
    z = model.predict(x, batch_size=300, verbose=0)  # a last batch of 200
    assert z.shape == (2000, 2)
    assert abs(z.mean()) < 0.1 and abs(z.std() - 1.0) < 0.1
    assert len(np.unique(z[:300, 0])) == 300  # drawn anew per sample
    model.compile("adam", "mse")  # trains through the sampled z
    model.fit(x[:64], np.zeros((64, 2), "float32"), batch_size=16, verbose=0)
    batch, dim = ops.shape(z_mean)
    assert K.is_symbolic(batch) and dim == 2
