"""The cell-based RNN API: RNN over SimpleRNNCell / LSTMCell / GRUCell /
StackedRNNCells / a user-defined cell against Keras 3 (masks, go_backwards,
return_state, zero_output_for_mask), the loop-op path equal to LSTM/GRU and to
the unrolled path, float64 gradients, stateful, config, save/load, errors."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from kerasflow import layers as L
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import keras_numpy

RNG = np.random.RandomState(0)
X = RNG.randn(3, 5, 4).astype("float32")
MASK = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 1, 1, 0]], bool)


def _user_cell(M, ops):
    class MinimalRNNCell(M.Layer):  # the cell of Keras' RNN docstring
        def __init__(self, units, **kwargs):
            super().__init__(**kwargs)
            self.units = units
            self.state_size = units

        def build(self, input_shape):
            self.kernel = self.add_weight(shape=(input_shape[-1], self.units),
                                          initializer="random_uniform",
                                          name="kernel")
            self.recurrent_kernel = self.add_weight(
                shape=(self.units, self.units), initializer="random_uniform",
                name="recurrent_kernel")

        def call(self, inputs, states):
            out = ops.matmul(inputs, self.kernel) + ops.tanh(
                ops.matmul(states[0], self.recurrent_kernel))
            return out, [out]

    return MinimalRNNCell


CELLS = {
    "simple": lambda M: M.SimpleRNNCell(3),
    "lstm": lambda M: M.LSTMCell(3),
    "gru": lambda M: M.GRUCell(3),
    "gru_v1": lambda M: M.GRUCell(3, reset_after=False),
    "lstm_gelu": lambda M: M.LSTMCell(3, activation="gelu"),  # unrolled
    "gru_v1_softsign": lambda M: M.GRUCell(3, reset_after=False,
                                           activation="softsign"),
    "stacked": lambda M: [M.LSTMCell(3), M.GRUCell(2), M.SimpleRNNCell(4)],
    "stacked_unrolled": lambda M: [M.LSTMCell(3, activation="elu"), M.GRUCell(2)],
}


def _compare(ours, theirs, x, **call):
    keras = keras_numpy()
    ours(x, **call)
    theirs(x, **call)
    rng = np.random.RandomState(5)
    weights = [(w + rng.randn(*w.shape) * 0.3).astype(w.dtype)
               for w in ours.get_weights()]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    got, want = ours(x, **call), theirs(x, **call)
    got, want = kf.tree.flatten(got), keras.tree.flatten(want)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-5, atol=1e-5)
    return got


@pytest.mark.parametrize("cell", sorted(CELLS))
@pytest.mark.parametrize("kw", [
    {}, {"return_sequences": True, "return_state": True},
    {"go_backwards": True, "return_sequences": True},
])
@pytest.mark.parametrize("mask", [None, MASK])
def test_builtin_cells_match_keras(cell, kw, mask):
    keras = keras_numpy()
    _compare(L.RNN(CELLS[cell](L), **kw), keras.layers.RNN(CELLS[cell](
        keras.layers), **kw), X, mask=mask)


@pytest.mark.parametrize("kw", [
    {}, {"return_sequences": True, "return_state": True,
         "zero_output_for_mask": True}])
def test_user_cell_matches_keras(kw):
    keras = keras_numpy()
    ours = L.RNN(_user_cell(L, kf.ops)(4, name="user_cell"), **kw)
    theirs = keras.layers.RNN(_user_cell(keras.layers, keras.ops)(4), **kw)
    got = _compare(ours, theirs, X, mask=MASK)
    if kw:
        assert np.all(got[0][~MASK] == 0)
    stacked = L.RNN([_user_cell(L, kf.ops)(4), L.GRUCell(2)], return_state=True)
    _compare(stacked, keras.layers.RNN([_user_cell(keras.layers, keras.ops)(4),
                                        keras.layers.GRUCell(2)],
                                       return_state=True), X)


@pytest.mark.parametrize("cell,layer", [
    (lambda: L.LSTMCell(3), lambda: L.LSTM(3, return_sequences=True)),
    (lambda: L.GRUCell(3, reset_after=False),
     lambda: L.GRU(3, reset_after=False, return_sequences=True)),
    (lambda: L.SimpleRNNCell(3, activation="relu"),
     lambda: L.SimpleRNN(3, activation="relu", return_sequences=True)),
])
def test_cell_in_rnn_equals_the_recurrent_layer(cell, layer):
    rnn, ref = L.RNN(cell(), return_sequences=True), layer()
    rnn(X)
    ref(X)
    ref.set_weights(rnn.get_weights())
    np.testing.assert_allclose(rnn(X, mask=MASK), ref(X, mask=MASK), rtol=1e-6,
                               atol=1e-7)


class _Subclassed(L.GRUCell):
    """A subclass runs unrolled through its own ``call``."""


def test_loop_op_path_equals_unrolled_path():
    fast = L.RNN(L.GRUCell(3), return_sequences=True, return_state=True)
    slow = L.RNN(_Subclassed(3), return_sequences=True, return_state=True)
    fast(X)
    slow(X)
    slow.set_weights(fast.get_weights())
    for a, b in zip(fast(X, mask=MASK), slow(X, mask=MASK)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("make", [
    lambda: L.LSTMCell(3, dtype="float64"),
    lambda: L.GRUCell(3, dtype="float64"),
    lambda: L.GRUCell(3, reset_after=False, dtype="float64"),
    lambda: L.SimpleRNNCell(3, dtype="float64"),
])
def test_cell_step_gradients(float64, make):
    rng = np.random.RandomState(2)
    probe = make()
    probe.build((2, 4))
    shapes = [w.shape for w in probe.get_weights()]

    def fn(x, h, *weights):
        cell = make()
        cell.build(x.shape)
        cell.kernel, cell.recurrent_kernel, cell.bias = weights
        states = [h, h * 0.5] if isinstance(cell, L.LSTMCell) else [h]
        out, new = cell.call(x, states)
        return [out] + list(new)

    check_gradients(fn, [rng.randn(2, 4), rng.randn(2, 3)]
                    + [rng.randn(*s) * 0.5 for s in shapes])


def test_unrolled_rnn_gradients(float64):
    rng = np.random.RandomState(3)
    mask = np.array([[1, 1, 0], [1, 1, 1]], bool)

    def fn(x, h0):
        layer = L.RNN(_user_cell(L, kf.ops)(2, dtype="float64"),
                      return_sequences=True, dtype="float64")
        return layer(x, mask=mask, initial_state=[h0])

    check_gradients(fn, [rng.randn(2, 3, 4), rng.randn(2, 2)])


def test_stateful_carries_states_and_resets():
    inp = kf.Input(batch_shape=(3, 5, 4))
    layer = L.RNN([L.LSTMCell(2), L.GRUCell(2)], stateful=True, name="rnn_sf")
    model = kf.Model(inp, layer(inp))
    first = model.predict(X, batch_size=3, verbose=0)
    second = model.predict(X, batch_size=3, verbose=0)
    assert not np.allclose(first, second)
    assert [v.shape for v in layer.states] == [(3, 2)] * 3
    layer.reset_states()
    np.testing.assert_allclose(model.predict(X, batch_size=3, verbose=0), first,
                               rtol=1e-6)


def test_initial_state_and_config_round_trip(tmp_path):
    layer = L.RNN([L.LSTMCell(3), L.GRUCell(2)], return_sequences=True,
                  name="rnn_cfg")
    clone = L.deserialize(L.serialize(layer))
    assert type(clone.cell) is L.StackedRNNCells
    assert [type(c) for c in clone.cell.cells] == [L.LSTMCell, L.GRUCell]
    layer(X)
    clone(X)
    clone.set_weights(layer.get_weights())
    np.testing.assert_allclose(clone(X), layer(X), rtol=1e-6)
    states = [np.full((3, 3), 0.5, "float32"), np.zeros((3, 3), "float32"),
              np.ones((3, 2), "float32")]
    assert not np.allclose(layer(X, initial_state=states), layer(X))
    inp = kf.Input((5, 4))
    model = kf.Model(inp, L.Dense(1, name="rnn_cfg_dense")(
        L.RNN(L.LSTMCell(3), name="rnn_fit")(inp)))
    model.compile("sgd", "mse")
    before = model.get_weights()
    model.fit(X, np.ones((3, 1), "float32"), epochs=1, verbose=0)
    assert not np.allclose(before[0], model.get_weights()[0])
    model.save(tmp_path / "rnn.kf")
    loaded = kf.models.load_model(tmp_path / "rnn.kf")
    np.testing.assert_allclose(loaded.predict(X, verbose=0),
                               model.predict(X, verbose=0), rtol=1e-6)


def test_dropout_masks_only_in_training():
    layer = L.RNN(L.LSTMCell(3, dropout=0.5, recurrent_dropout=0.5, seed=1),
                  name="rnn_drop")
    ph = K.placeholder("float32", (None, 5, 4))
    train = K.Function([ph], layer(ph, training=True))
    infer = K.Function([ph], layer(ph, training=False))
    assert not np.allclose(train(X), infer(X))
    np.testing.assert_allclose(infer(X), layer(X), rtol=1e-6)


def test_errors():
    with pytest.raises(ValueError, match="state_size"):
        L.RNN(L.Dense(3))
    with pytest.raises(ValueError, match="expected ndim=3"):
        L.RNN(L.GRUCell(2), name="rnn_err1")(np.ones((2, 3), "float32"))
    with pytest.raises(ValueError, match="expects 2 initial state"):
        L.RNN(L.LSTMCell(2), name="rnn_err2")(X, initial_state=[np.zeros((3, 2))])
    with pytest.raises(ValueError, match="must be known"):
        L.RNN(_user_cell(L, kf.ops)(2), name="rnn_err3")(
            K.placeholder("float32", (None, None, 4)))
    with pytest.raises(ValueError, match="units"):
        L.LSTMCell(0)
    with pytest.raises(ValueError, match="non-empty"):
        L.StackedRNNCells([])


def test_cell_called_directly_and_bidirectional_rnn_match_keras():
    keras = keras_numpy()
    zeros = [np.zeros((3, 3), "float32")] * 2
    cell, k_cell = L.LSTMCell(3, name="cell_direct"), keras.layers.LSTMCell(3)
    out, states = cell(X[:, 0], zeros)
    k_cell(X[:, 0], zeros)
    k_cell.set_weights(cell.get_weights())
    k_out, k_states = k_cell(X[:, 0], zeros)
    for a, b in zip([out, *states], [k_out, *k_states]):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-5, atol=1e-6)
    _compare(L.Bidirectional(L.RNN(L.GRUCell(2)), name="rnn_bidir"),
             keras.layers.Bidirectional(keras.layers.RNN(keras.layers.GRUCell(2))),
             X)
