"""Attention and AdditiveAttention: Keras 3 as the oracle (scores, masks,
causal mask, returned weights), gradients in float64, config, errors."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from kerasflow import layers as L
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import keras_numpy

RNG = np.random.RandomState(0)
Q = RNG.randn(2, 3, 4).astype("float32")
V = RNG.randn(2, 5, 4).astype("float32")
KEY = RNG.randn(2, 5, 4).astype("float32")
Q_MASK = np.array([[1, 1, 0], [1, 0, 1]], bool)
V_MASK = np.array([[1, 1, 1, 0, 0], [1, 0, 1, 1, 1]], bool)


def _pair(keras, cls, **kw):
    return getattr(L, cls)(name=f"ours_{cls}", **kw), getattr(keras.layers, cls)(**kw)


def _weights(layer, seed=1):
    rng = np.random.RandomState(seed)
    return [(w + rng.uniform(0.2, 0.8, w.shape)).astype(w.dtype)
            for w in layer.get_weights()]


@pytest.mark.parametrize("cls,kw", [
    ("Attention", {}),
    ("Attention", {"use_scale": True}),
    ("Attention", {"score_mode": "concat"}),
    ("Attention", {"score_mode": "concat", "use_scale": True}),
    ("AdditiveAttention", {}),
    ("AdditiveAttention", {"use_scale": False}),
])
@pytest.mark.parametrize("call", [
    {}, {"mask": [Q_MASK, V_MASK]}, {"use_causal_mask": True},
    {"mask": [Q_MASK, V_MASK], "use_causal_mask": True},
])
def test_matches_keras(cls, kw, call):
    keras = keras_numpy()
    ours, theirs = _pair(keras, cls, **kw)
    for inputs in ([Q, V, KEY], [Q, V]):
        ours(inputs)
        theirs(inputs)
        weights = _weights(ours)
        ours.set_weights(weights)
        theirs.set_weights(weights)
        out, scores = ours(inputs, return_attention_scores=True, **call)
        k_out, k_scores = theirs(inputs, return_attention_scores=True, **call)
        np.testing.assert_allclose(out, np.asarray(k_out), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(scores, np.asarray(k_scores), rtol=1e-5,
                                   atol=1e-6)


def test_masked_query_steps_are_zero_and_scores_skip_masked_values():
    out, scores = L.Attention(name="att_mask")([Q, V], mask=[Q_MASK, V_MASK],
                                              return_attention_scores=True)
    assert np.all(out[~Q_MASK] == 0) and np.any(out[Q_MASK] != 0)
    np.testing.assert_allclose(scores[0][:, 3:], 0.0, atol=1e-7)
    np.testing.assert_allclose(scores.sum(-1), 1.0, rtol=1e-6)


def test_embedding_masks_flow_into_attention():
    keras = keras_numpy()
    ids = np.array([[3, 1, 0, 0], [2, 2, 2, 0]])
    inp = kf.Input((4,), dtype="int32")
    emb = L.Embedding(5, 4, mask_zero=True, name="att_emb")
    e = emb(inp)
    model = kf.Model(inp, L.Attention(name="att_flow")([e, e]))
    table = emb.get_weights()[0]
    want = keras.layers.Attention()([table[ids], table[ids]],
                                    mask=[ids != 0, ids != 0])
    np.testing.assert_allclose(model.predict(ids, verbose=0), np.asarray(want),
                               rtol=1e-5, atol=1e-6)


def test_dropout_only_in_training():
    layer = L.Attention(dropout=0.5, seed=3, name="att_drop")
    q = K.placeholder("float32", (None, 3, 4))
    v = K.placeholder("float32", (None, 5, 4))
    train = K.Function([q, v], layer([q, v], training=True))
    infer = K.Function([q, v], layer([q, v], training=False))
    base = L.Attention(name="att_nodrop")([Q, V])
    np.testing.assert_allclose(infer(Q, V), base, rtol=1e-6)
    assert not np.allclose(train(Q, V), base)


@pytest.mark.parametrize("cls,kw", [("Attention", {"use_scale": True}),
                                    ("Attention", {"score_mode": "concat",
                                                   "use_scale": True}),
                                    ("AdditiveAttention", {})])
def test_gradients(float64, cls, kw):
    rng = np.random.RandomState(2)
    q, v, k = rng.randn(2, 3, 4), rng.randn(2, 4, 4), rng.randn(2, 4, 4)
    scale = rng.rand(4) + 0.5 if cls == "AdditiveAttention" else np.array(1.3)
    mask = np.array([[1, 1, 0, 1], [1, 1, 1, 1]], bool)

    def fn(qt, vt, kt, s):
        layer = getattr(L, cls)(dtype="float64", **kw)
        layer.build([qt.shape, vt.shape, kt.shape])
        layer.scale = s
        return layer.call([qt, vt, kt], mask=[None, mask], use_causal_mask=True)

    check_gradients(fn, [q, v, k, scale])


def test_config_round_trip_and_model_training(tmp_path):
    layer = L.AdditiveAttention(use_scale=True, dropout=0.1, name="add_cfg")
    config = layer.get_config()
    assert "score_mode" not in config and config["use_scale"] is True
    clone = L.deserialize(L.serialize(layer))
    assert type(clone) is L.AdditiveAttention and clone.dropout == 0.1
    q, v = kf.Input((3, 4)), kf.Input((5, 4))
    out = L.GlobalAveragePooling1D()(L.Attention(use_scale=True, name="att_fit")(
        [q, v]))
    model = kf.Model([q, v], L.Dense(1, name="att_fit_dense")(out))
    model.compile("sgd", "mse")
    before = model.get_weights()
    model.fit([Q, V], np.ones((2, 1), "float32"), epochs=1, verbose=0)
    assert not np.allclose(before[0], model.get_weights()[0])  # the scale trains
    model.save(tmp_path / "att.kf")
    loaded = kf.models.load_model(tmp_path / "att.kf")
    np.testing.assert_allclose(loaded.predict([Q, V], verbose=0),
                               model.predict([Q, V], verbose=0), rtol=1e-6)


def test_errors():
    with pytest.raises(ValueError, match="score_mode"):
        L.Attention(score_mode="cosine")
    with pytest.raises(ValueError, match="list of inputs"):
        L.Attention(name="att_err1")(Q)
    with pytest.raises(ValueError, match="length 2 or 3"):
        L.Attention(name="att_err2")([Q])
    with pytest.raises(ValueError, match="same last dimension"):
        L.Attention(name="att_err3")([Q, V, RNG.randn(2, 5, 3).astype("float32")])
