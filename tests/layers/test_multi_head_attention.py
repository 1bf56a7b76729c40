"""MultiHeadAttention against Keras 3 (numpy backend) with the same weights:
self- and cross-attention, key/value of other widths, attention masks, the
causal mask, padding masks, scores; gradients checked; a small transformer
block learns."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import keras_numpy

RNG = np.random.RandomState(0)
Q = RNG.randn(2, 4, 6).astype("float32")
V = RNG.randn(2, 5, 3).astype("float32")
KEY = RNG.randn(2, 5, 7).astype("float32")


def _pair(keras, **kwargs):
    ours = kf.layers.MultiHeadAttention(bias_initializer="random_uniform", **kwargs)
    theirs = keras.layers.MultiHeadAttention(**kwargs)
    return ours, theirs


@pytest.mark.parametrize("kwargs", [
    {"num_heads": 2, "key_dim": 3}, {"num_heads": 3, "key_dim": 2, "value_dim": 4},
    {"num_heads": 1, "key_dim": 4, "output_shape": 5},
    {"num_heads": 2, "key_dim": 3, "use_bias": False}])
@pytest.mark.parametrize("call", [
    {"self": True}, {"self": True, "use_causal_mask": True}, {"value": V},
    {"value": V, "key": KEY}, {"value": V, "mask": True}])
def test_forward_and_scores_equal_keras(kwargs, call):
    keras = keras_numpy()
    ours, theirs = _pair(keras, **kwargs)
    value = Q if call.get("self") else call["value"]
    extra = {}
    if "key" in call:
        extra["key"] = call["key"]
    if call.get("use_causal_mask"):
        extra["use_causal_mask"] = True
    if call.get("mask"):
        mask = RNG.rand(2, 4, value.shape[1]) > 0.4
        mask[..., 0] = True
        extra["attention_mask"] = mask
    out, scores = ours(Q, value, return_attention_scores=True, **extra)
    theirs(Q, value, **extra)
    theirs.set_weights(ours.get_weights())
    k_out, k_scores = theirs(Q, value, return_attention_scores=True, **extra)
    np.testing.assert_allclose(out, np.asarray(k_out), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(scores, np.asarray(k_scores), rtol=1e-4, atol=1e-6)


def test_padding_mask_of_an_embedding_is_honoured():
    ids = np.array([[3, 4, 0, 0], [1, 2, 3, 0]])
    inputs = kf.Input((4,), dtype="int64")
    x = kf.layers.Embedding(6, 8, mask_zero=True)(inputs)
    out, scores = kf.layers.MultiHeadAttention(2, 4)(x, x, return_attention_scores=True)
    model = kf.Model(inputs, scores)
    s = model.predict(ids, verbose=0)
    # Real queries give padded keys no weight (padded query rows, all masked,
    # are uniform, as in Keras).
    assert np.all(s[0, :, :2, 2:] < 1e-6) and np.all(s[1, :, :3, 3] < 1e-6)
    assert s[0, 0, 0, :2].min() > 1e-3
    np.testing.assert_allclose(s.sum(-1), 1.0, rtol=1e-5)


def test_gradients(float64):
    layer = kf.layers.MultiHeadAttention(2, 2)
    q, v = RNG.randn(1, 3, 4), RNG.randn(1, 2, 4)
    check_gradients(lambda a, b: layer(a, b, use_causal_mask=False), [q, v])


def test_config_and_errors():
    layer = kf.layers.MultiHeadAttention(4, 8, value_dim=6, dropout=0.1)
    config = layer.get_config()
    assert kf.layers.MultiHeadAttention.from_config(config).get_config() == config
    with pytest.raises(ValueError, match="num_heads"):
        kf.layers.MultiHeadAttention(0, 4)
    with pytest.raises(ValueError, match="attention_axes"):
        kf.layers.MultiHeadAttention(2, 4, attention_axes=(0,))(Q, V)
    with pytest.raises(NotImplementedError, match="use_gate"):
        kf.layers.MultiHeadAttention(2, 4, use_gate=True)


def test_called_with_keywords_only_as_keras():
    """Keras' own MHA tests call ``layer(query=q, value=v, key=k)``."""
    keras = keras_numpy()
    ours, theirs = _pair(keras, num_heads=2, key_dim=3)
    out = ours(query=Q, value=V, key=KEY)
    theirs(query=Q, value=V, key=KEY)
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(out, np.asarray(theirs(query=Q, value=V, key=KEY)),
                               rtol=1e-4, atol=1e-5)
    # Symbolic keywords too: a functional model replays them.
    q, v, k = kf.Input((4, 6)), kf.Input((5, 3)), kf.Input((5, 7))
    model = kf.Model([q, v, k], ours(query=q, value=v, key=k))
    np.testing.assert_allclose(model.predict([Q, V, KEY], verbose=0), out,
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs,q_shape,v_shape", [
    ({"attention_axes": (1, 2)}, (2, 3, 4, 5), (2, 2, 3, 4)),
    ({"attention_axes": 2}, (2, 3, 4, 5), (2, 3, 2, 6)),
    ({"attention_axes": -2}, (2, 3, 4, 5), (2, 3, 2, 6)),
    ({"output_shape": (2, 3)}, (2, 4, 5), (2, 3, 5)),
    ({"attention_axes": (1, 2), "output_shape": (2, 3)}, (2, 3, 4, 5), (2, 2, 3, 4)),
])
def test_attention_axes_and_tuple_output_shape_equal_keras(kwargs, q_shape, v_shape):
    keras = keras_numpy()
    rng = np.random.RandomState(1)
    q = rng.randn(*q_shape).astype("float32")
    v = rng.randn(*v_shape).astype("float32")
    ours, theirs = _pair(keras, num_heads=2, key_dim=3, **kwargs)
    out, scores = ours(q, v, return_attention_scores=True)
    theirs(q, v)
    theirs.set_weights(ours.get_weights())
    k_out, k_scores = theirs(q, v, return_attention_scores=True)
    assert out.shape == tuple(k_out.shape) and scores.shape == tuple(k_scores.shape)
    np.testing.assert_allclose(out, np.asarray(k_out), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(scores, np.asarray(k_scores), rtol=1e-4, atol=1e-6)
    config = ours.get_config()
    assert kf.layers.MultiHeadAttention.from_config(config).get_config() == config


def test_attention_axes_mask_equals_keras():
    keras = keras_numpy()
    rng = np.random.RandomState(2)
    q = rng.randn(2, 3, 4, 5).astype("float32")
    v = rng.randn(2, 2, 3, 4).astype("float32")
    mask = rng.rand(2, 3, 4, 2, 3) > 0.3
    ours, theirs = _pair(keras, num_heads=2, key_dim=3, attention_axes=(1, 2))
    out = ours(q, v, attention_mask=mask)
    theirs(q, v)
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(out, np.asarray(theirs(q, v, attention_mask=mask)),
                               rtol=1e-4, atol=1e-5)


def test_a_transformer_block_learns_to_find_the_marked_token():
    """Each sequence has one marked position; the label is the value there.
    Only attention can route it to the pooled output."""
    kf.utils.set_random_seed(0)
    rng = np.random.RandomState(0)
    n, t = 512, 6
    values = rng.randint(0, 2, (n, t))
    marked = rng.randint(0, t, n)
    x = np.zeros((n, t, 3), "float32")
    x[:, :, 0] = values
    x[np.arange(n), marked, 1] = 1.0
    x[:, :, 2] = np.arange(t) / t
    y = values[np.arange(n), marked]
    inputs = kf.Input((t, 3))
    h = kf.layers.Dense(16)(inputs)
    a = kf.layers.MultiHeadAttention(2, 8)(h, h)
    h = kf.layers.LayerNormalization()(h + a)
    out = kf.layers.Dense(1, activation="sigmoid")(kf.layers.GlobalAveragePooling1D()(h))
    model = kf.Model(inputs, out)
    model.compile(optimizer=kf.optimizers.Adam(0.01), loss="binary_crossentropy",
                  metrics=["accuracy"])
    history = model.fit(x, y, batch_size=32, epochs=30, verbose=0).history
    assert history["accuracy"][-1] > 0.9
