"""Stateful recurrent layers (Keras' ``stateful=True``): a sequence fed in
chunks equals the whole sequence; ``reset_states``; the static batch size
they need; ``implementation=`` accepted."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf

CELLS = [kf.layers.SimpleRNN, kf.layers.LSTM, kf.layers.GRU]


def _pair(cls, steps_whole=6, steps_chunk=3, batch=4):
    full = cls(5, return_sequences=True)
    inp = kf.Input((steps_whole, 3))
    whole = kf.Model(inp, full(inp))
    kept = cls(5, return_sequences=True, stateful=True)
    inp2 = kf.Input((steps_chunk, 3), batch_size=batch)
    chunked = kf.Model(inp2, kept(inp2))
    for a, b in zip(kept.trainable_weights, full.trainable_weights):
        a.assign(b.numpy())
    return whole, chunked, kept


@pytest.mark.parametrize("cls", CELLS)
def test_chunks_of_a_sequence_equal_the_whole(cls):
    x = np.random.RandomState(0).rand(4, 6, 3).astype("float32")
    whole, chunked, layer = _pair(cls)
    expected = whole.predict(x, verbose=0)
    parts = [chunked.predict(x[:, :3], batch_size=4, verbose=0),
             chunked.predict(x[:, 3:], batch_size=4, verbose=0)]
    np.testing.assert_allclose(np.concatenate(parts, 1), expected, rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(layer.states[0].numpy(), expected[:, -1], rtol=1e-5,
                               atol=1e-6)
    layer.reset_states()
    assert all(not v.numpy().any() for v in layer.states)
    np.testing.assert_allclose(chunked.predict(x[:, :3], batch_size=4, verbose=0),
                               parts[0], rtol=1e-6)


def _echo_accuracy(stateful):
    """Binary accuracy of an LSTM taught to output the previous input, fed a
    long sequence in chunks of 4 steps (the Keras 2 stateful-LSTM scheme:
    batch row j continues row j of the previous batch, shuffle=False). The
    first step of each chunk needs the previous chunk's last input, which only
    a carried state holds: without it accuracy stays near 7/8."""
    kf.utils.set_random_seed(0)
    rng = np.random.RandomState(0)
    batch, chunk, n_chunks = 8, 4, 60
    signal = rng.randint(0, 2, (batch, chunk * n_chunks, 1)).astype("float32")
    target = np.roll(signal, 1, axis=1)
    target[:, 0] = 0
    def by_chunk(a):
        return a.reshape(batch, n_chunks, chunk, 1).transpose(1, 0, 2, 3).reshape(
            -1, chunk, 1)
    lstm = kf.layers.LSTM(16, return_sequences=True, stateful=stateful)
    model = kf.Sequential([kf.Input((chunk, 1), batch_size=batch), lstm,
                           kf.layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer=kf.optimizers.Adam(0.01), loss="binary_crossentropy",
                  metrics=["binary_accuracy"])
    for _ in range(4):
        hist = model.fit(by_chunk(signal), by_chunk(target), batch_size=batch,
                         epochs=1, shuffle=False, verbose=0)
        if stateful:
            lstm.reset_states()
    return hist.history["binary_accuracy"][-1]


def test_states_carry_across_training_batches():
    assert _echo_accuracy(stateful=True) > 0.98
    assert _echo_accuracy(stateful=False) < 0.92


def test_stateful_needs_a_static_batch_size():
    layer = kf.layers.LSTM(3, stateful=True)
    with pytest.raises(ValueError, match="static batch size"):
        layer(kf.Input((5, 2)))
    with pytest.raises(AttributeError, match="not stateful"):
        kf.layers.GRU(2).reset_states()


@pytest.mark.parametrize("cls", CELLS)
def test_config_keeps_stateful_and_implementation(cls):
    layer = cls(4, stateful=True, implementation=1)
    config = layer.get_config()
    assert config["stateful"] is True
    # Keras 3's SimpleRNN takes no `implementation` (its config would not load
    # there); LSTM and GRU keep it.
    if cls is kf.layers.SimpleRNN:
        assert "implementation" not in config
    else:
        assert config["implementation"] == 1
    assert cls.from_config(config).get_config() == config
    with pytest.raises(ValueError, match="implementation"):
        cls(4, implementation=3)


def test_evaluate_carries_the_states_like_predict():
    x = np.random.RandomState(3).rand(4, 6, 3).astype("float32")
    whole, chunked, layer = _pair(kf.layers.GRU)
    chunked.compile(optimizer="sgd", loss="mse")
    expected = whole.predict(x, verbose=0)
    chunked.evaluate(x[:, :3], np.zeros((4, 3, 5)), batch_size=4, verbose=0)
    np.testing.assert_allclose(layer.states[0].numpy(), expected[:, 2], rtol=1e-5,
                               atol=1e-6)
