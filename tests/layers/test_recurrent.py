"""Recurrent layers and wrappers: contract, Keras semantics, masks, errors."""

from __future__ import annotations

import time

import numpy as np
import pytest
from contract import check_contract, sample

import kerasflow as kf
from kerasflow import backend as K
from kerasflow import layers as L

CASES = [
    (lambda: L.SimpleRNN(3), (2, 5, 4), (2, 3)),
    (lambda: L.SimpleRNN(3, activation="relu", return_sequences=True,
                         go_backwards=True), (2, 5, 4), (2, 5, 3)),
    (lambda: L.LSTM(3), (2, 5, 4), (2, 3)),
    (lambda: L.LSTM(3, return_sequences=True, use_bias=False,
                    recurrent_regularizer="l2"), (2, 5, 4), (2, 5, 3)),
    (lambda: L.GRU(3), (2, 5, 4), (2, 3)),
    (lambda: L.GRU(3, return_sequences=True, go_backwards=True), (2, 5, 4),
     (2, 5, 3)),
    (lambda: L.Bidirectional(L.LSTM(3, return_sequences=True)), (2, 5, 4),
     (2, 5, 6)),
    (lambda: L.Bidirectional(L.GRU(3), merge_mode="sum"), (2, 5, 4), (2, 3)),
    (lambda: L.TimeDistributed(L.Dense(2)), (2, 5, 4), (2, 5, 2)),
    (lambda: L.Masking(), (2, 5, 4), (2, 5, 4)),
]


@pytest.mark.parametrize("make,in_shape,out_shape", CASES)
def test_contract(make, in_shape, out_shape, tmp_path):
    check_contract(make, in_shape, out_shape, tmp_path)


def test_dropout_layers_train(tmp_path):
    check_contract(lambda: L.LSTM(3, dropout=0.3, recurrent_dropout=0.3, seed=1),
                   (4, 5, 4), (4, 3), tmp_path, stochastic=True)


def test_lstm_matches_a_numpy_cell():
    layer = L.LSTM(3, return_sequences=True, return_state=True)
    x = sample((2, 4, 5))
    seq, h, c = layer(x)
    k, rk, b = layer.get_weights()
    np.testing.assert_allclose(b[3:6], 1.0)  # unit_forget_bias
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    hh, cc = np.zeros((2, 3)), np.zeros((2, 3))
    for t in range(4):
        z = x[:, t] @ k + hh @ rk + b
        i, f, g, o = sig(z[:, :3]), sig(z[:, 3:6]), np.tanh(z[:, 6:9]), sig(z[:, 9:])
        cc = f * cc + i * g
        hh = o * np.tanh(cc)
        np.testing.assert_allclose(seq[:, t], hh, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(h, hh, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(c, cc, rtol=1e-4, atol=1e-5)


def test_bidirectional_lstm_shapes_and_halves():
    inner = L.LSTM(4, return_sequences=True)
    bi = L.Bidirectional(inner)
    x = K.placeholder("float32", (None, 7, 3))
    y = bi(x)
    assert y.shape == (None, 7, 8)
    data = sample((2, 7, 3))
    out = bi(data)
    np.testing.assert_allclose(out[..., :4], bi.forward_layer(data), rtol=1e-5)
    # The backward half at step t has seen steps t..end: reversing the input
    # and running a forward copy gives it reversed.
    fwd_copy = L.LSTM(4, return_sequences=True)
    fwd_copy(data)
    fwd_copy.set_weights(bi.backward_layer.get_weights())
    np.testing.assert_allclose(out[..., 4:], fwd_copy(data[:, ::-1])[:, ::-1],
                               rtol=1e-4, atol=1e-6)
    bi_state = L.Bidirectional(L.GRU(2, return_state=True), merge_mode="ave")
    res = bi_state(K.placeholder("float32", (None, 7, 3)))
    assert [t.shape for t in res] == [(None, 2)] * 3
    assert len(bi.weights) == 6


def test_masking_and_mask_zero_keep_state_over_padding():
    emb = L.Embedding(10, 3, mask_zero=True)
    rnn = L.GRU(4)
    ids = K.placeholder("int64", (None, 5))
    fn = K.Function([ids], rnn(emb(ids)))
    padded = fn(np.array([[3, 4, 5, 0, 0]]))
    ids3 = K.placeholder("int64", (None, 3))
    fn3 = K.Function([ids3], rnn(emb(ids3)))
    np.testing.assert_allclose(padded, fn3(np.array([[3, 4, 5]])), rtol=1e-5)
    # Masking on float inputs does the same.
    x = sample((1, 5, 3))
    x[:, 3:] = 0.0
    lstm = L.LSTM(2)
    model = kf.Sequential([kf.layers.InputLayer(shape=(5, 3)), L.Masking(), lstm])
    np.testing.assert_allclose(model.predict(x, verbose=0), lstm(x[:, :3]),
                               rtol=1e-5, atol=1e-6)


def test_lstm_learns_to_sum_a_sequence():
    rng = np.random.RandomState(0)
    x = rng.rand(512, 10, 1).astype("float32")
    y = x.sum(axis=1) / 10
    np.random.seed(0)
    model = kf.Sequential([kf.layers.InputLayer(shape=(10, 1)), L.LSTM(8),
                           L.Dense(1)])
    model.compile(optimizer=kf.optimizers.Adam(0.02), loss="mse")
    hist = model.fit(x, y, batch_size=64, epochs=15, verbose=0)
    assert hist.history["loss"][-1] < 0.1 * hist.history["loss"][0]


def test_500_step_lstm_model_builds_and_compiles_fast():
    model = kf.Sequential([kf.layers.InputLayer(shape=(500, 8)), L.LSTM(16),
                           L.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    x = np.random.RandomState(0).rand(4, 500, 8).astype("float32")
    start = time.perf_counter()
    model.train_on_batch(x, np.zeros((4, 1), "float32"))
    # Graph build + compile + one step; generous bound for a busy 2-core box.
    assert time.perf_counter() - start < 30


def test_recurrent_errors():
    with pytest.raises(ValueError, match=r"Input 0 of layer 'my_lstm' \(LSTM\).*"
                                         r"expected ndim=3.*received: \(None, 8\)"):
        L.LSTM(4, name="my_lstm")(K.placeholder("float32", (None, 8)))
    with pytest.raises(ValueError, match="units"):
        L.GRU(0)
    with pytest.raises(ValueError, match="activation"):
        L.LSTM(2, activation="gelu")
    with pytest.raises(ValueError, match="merge mode"):
        L.Bidirectional(L.LSTM(2), merge_mode="max")
    with pytest.raises(ValueError, match="stateful=True needs a static batch"):
        L.LSTM(2, stateful=True)(K.placeholder("float32", (None, 3, 2)))
    with pytest.raises(ValueError, match="expects 2 initial state"):
        L.LSTM(2)(K.placeholder("float32", (None, 3, 2)),
                  initial_state=[K.placeholder("float32", (None, 2))])


def test_initial_states_as_inputs_in_a_functional_model(tmp_path):
    inp, h0, c0 = kf.Input((5, 3)), kf.Input((4,)), kf.Input((4,))
    model = kf.Model([inp, h0, c0], L.LSTM(4)([inp, h0, c0]))
    x = sample((2, 5, 3))
    zeros, ones = np.zeros((2, 4), "f4"), np.ones((2, 4), "f4")
    with_c = model.predict([x, zeros, ones], verbose=0)
    assert not np.allclose(with_c, model.predict([x, zeros, zeros], verbose=0))
    lstm = model.layers[-1]
    np.testing.assert_allclose(with_c, lstm(x, initial_state=[zeros, ones]),
                               rtol=1e-5)
    model.save(tmp_path / "m.kf")
    loaded = kf.models.load_model(tmp_path / "m.kf")
    np.testing.assert_allclose(loaded.predict([x, zeros, ones], verbose=0), with_c,
                               rtol=1e-6)
