"""Functional models with dict inputs and outputs: every path agrees on one order;
a subclassed model given dict data receives it as a dict (keras.io's
endpoint-layer pattern).

Keys are deliberately not in sorted order, so an ordering slip between the graph
(``kerasflow.tree``: sorted keys, as Keras 3) and the data would feed the wrong
array to an input or score the wrong output.
"""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf


def _model():
    zi, ai = kf.Input((3,), name="z_in"), kf.Input((5,), name="a_in")
    zo = kf.layers.Dense(1, name="z_out")(kf.layers.Concatenate()([zi, ai]))
    ao = kf.layers.Dense(2, name="a_out")(ai)
    return kf.Model({"z_in": zi, "a_in": ai}, {"z_out": zo, "a_out": ao})


def _data(n=40):
    rng = np.random.default_rng(0)
    x = {"z_in": rng.normal(size=(n, 3)), "a_in": rng.normal(size=(n, 5))}
    return x, {"z_out": rng.normal(size=(n, 1)), "a_out": rng.normal(size=(n, 2))}


def test_predict_returns_outputs_keyed_by_name(float64):
    np.random.seed(0)
    model, (x, _) = _model(), _data()
    out = model.predict(x, verbose=0)
    assert set(out) == {"z_out", "a_out"}
    assert out["z_out"].shape == (40, 1) and out["a_out"].shape == (40, 2)
    w_a, b_a = model.get_layer("a_out").get_weights()
    np.testing.assert_allclose(out["a_out"], x["a_in"] @ w_a + b_a, rtol=1e-12)
    direct = model({"a_in": x["a_in"], "z_in": x["z_in"]})
    np.testing.assert_allclose(np.asarray(direct["z_out"]), out["z_out"],
                               rtol=1e-12)


def test_per_output_losses_match_hand_computed_mse(float64):
    np.random.seed(1)
    model, (x, y) = _model(), _data()
    model.compile("sgd", loss={"z_out": "mse", "a_out": "mse"})
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    pred = model.predict(x, verbose=0)
    for name in ("z_out", "a_out"):
        want = np.mean((pred[name] - y[name]) ** 2)
        assert logs[f"{name}_loss"] == pytest.approx(want, rel=1e-10)
    assert logs["loss"] == pytest.approx(logs["z_out_loss"] + logs["a_out_loss"])


def test_fit_with_dict_data_lowers_the_loss(float64):
    np.random.seed(2)
    model, (x, y) = _model(), _data()
    model.compile("sgd", loss={"z_out": "mse", "a_out": "mse"})
    hist = model.fit(x, y, epochs=5, batch_size=8, verbose=0)
    assert hist.history["loss"][-1] < hist.history["loss"][0]


class _Endpoint(kf.layers.Layer):
    """keras.io's endpoint layer: adds its loss, returns the predictions."""

    def call(self, logits, targets=None, sample_weight=None):
        if targets is not None:
            self.add_loss(kf.losses.BinaryCrossentropy(from_logits=True)(
                targets, logits, sample_weight))
        return kf.ops.sigmoid(logits)


class _LogReg(kf.Model):
    def __init__(self):
        super().__init__()
        self.dense = kf.layers.Dense(1)
        self.endpoint = _Endpoint()

    def call(self, inputs):
        logits = self.dense(inputs["inputs"])
        return self.endpoint(logits=logits, targets=inputs["targets"],
                             sample_weight=inputs["sample_weight"])


def test_subclassed_model_receives_dict_data_as_a_dict():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(64, 4)).astype("float32")
    data = {"targets": (x[:, :1] > 0).astype("float32"), "inputs": x,
            "sample_weight": np.ones((64, 1), "float32")}
    model = _LogReg()
    model.compile(kf.optimizers.Adam(0.05))  # no loss: the endpoint adds it
    hist = model.fit(data, epochs=20, batch_size=16, verbose=0)
    assert hist.history["loss"][-1] < 0.5 * hist.history["loss"][0]
    assert model.predict(data, verbose=0).shape == (64, 1)

    class Difference(kf.Model):
        def call(self, inputs):
            return inputs["b"] - inputs["a"]

    got = Difference().predict({"b": np.full((2, 1), 5.0), "a": np.ones((2, 1))},
                               verbose=0)
    np.testing.assert_array_equal(got, [[4.0], [4.0]])
