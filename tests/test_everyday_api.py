"""Issue 14: the everyday Keras 3 / TF1 API that programs written by others use,
and the silent bugs they hit. One test per item, literal expected values.

Ported sections (Keras 3 guides on keras.io, run with only the import changed):
- "Making new layers and models via subclassing": ``Linear`` with
  ``add_weight(shape=..., initializer=..., trainable=True)``, ``ComputeSum``
  with a non-trainable weight, ``ActivityRegularizationLayer`` with add_loss.
- "Training & evaluation with the built-in methods": ``CategoricalTruePositives``
  (tests/metrics/test_custom_metrics.py), ``LogisticEndpoint`` (add_loss, no compiled
  loss, fit without y) and ``keras.utils.PyDataset`` input.
- "Writing your own callbacks": ``CustomCallback`` printing the keys of ``logs``
  in every hook.
- Keras' ``optimizers/schedules/learning_rate_schedule_test.py``:
  PolynomialDecay values.
"""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from kerasflow import ops

keras = kf
layers = kf.layers


# -- silent or wrong results --------------------------------------------------------
def test_placeholder_float_is_float32_as_in_tf():
    x = K.placeholder("float", (None, 3))
    w = K.Variable(np.ones((3, 2), "float32"))
    assert x.dtype == np.float32
    assert K.Session().run(K.matmul(x, w), {x: np.ones((1, 3))}).tolist() == [
        [3.0, 3.0]]
    assert K.placeholder("double").dtype == np.float64


def test_session_fetches_an_eagerly_computed_op():
    out = K.Session().run(K.argmax(np.eye(3), 1))
    np.testing.assert_array_equal(out, [0, 1, 2])


def test_tensor_equality_is_elementwise_and_never_silently_a_bool():
    a = K.placeholder("int32", (None,))
    b = K.placeholder("int32", (None,))
    same = ops.cast(a == b, "float32")  # Keras 3 code
    got = K.Function([a, b], [same])(np.array([1, 2, 3]), np.array([1, 0, 3]))[0]
    np.testing.assert_array_equal(got, [1.0, 0.0, 1.0])
    with pytest.raises(TypeError, match="no truth value"):
        bool(a == b)
    with pytest.raises(TypeError, match="no truth value"):
        _ = a in [b]  # identity-style use of == fails loudly
    assert {a: 1, b: 2}[b] == 2 and a in {a} and (a == a) is True


def test_sequential_built_after_an_eager_call():
    model = keras.Sequential([layers.Dense(2)])
    assert not model.built
    model(np.ones((1, 3), "float32"))
    assert model.built and model.layers[0].kernel.shape == (3, 2)


def test_second_input_in_a_sequential_is_refused():
    model = keras.Sequential([keras.Input((3,))])
    with pytest.raises(ValueError, match="Input can only come first"):
        model.add(keras.Input((4,)))


def test_functional_tuple_outputs_survive_from_config():
    x = keras.Input((3,))
    model = keras.Model(x, (layers.Dense(1)(x), layers.Dense(2)(x)))
    again = keras.Model.from_config(model.get_config())
    assert isinstance(again(np.ones((1, 3), "float32")), tuple)


# -- everyday API -----------------------------------------------------------------
class CustomCallback(keras.callbacks.Callback):
    """keras.io "Writing your own callbacks": every hook records its logs."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def _rec(self, hook, logs):
        assert isinstance(logs, dict), f"{hook} got {logs!r}"
        self.seen.append(hook)

    def on_train_begin(self, logs=None):
        self._rec("train_begin", logs)

    def on_epoch_begin(self, epoch, logs=None):
        self._rec("epoch_begin", logs)

    def on_train_batch_begin(self, batch, logs=None):
        self._rec("train_batch_begin", logs)

    def on_test_begin(self, logs=None):
        self._rec("test_begin", logs)

    def on_test_batch_begin(self, batch, logs=None):
        self._rec("test_batch_begin", logs)


def test_callbacks_always_receive_a_dict():
    model = keras.Sequential([layers.Dense(1, input_shape=(2,))])
    model.compile("sgd", "mse")
    cb = CustomCallback()
    x, y = np.ones((8, 2)), np.ones((8, 1))
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[cb],
              validation_data=(x, y))
    model.evaluate(x, y, verbose=0, callbacks=[cb])
    assert {"train_begin", "epoch_begin", "train_batch_begin", "test_begin",
            "test_batch_begin"} <= set(cb.seen)


class Linear(keras.layers.Layer):
    """keras.io "Making new layers and models via subclassing"."""

    def __init__(self, units=32):
        super().__init__()
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], self.units),
                                 initializer="random_normal", trainable=True)
        self.b = self.add_weight(shape=(self.units,), initializer="zeros",
                                 trainable=True)

    def call(self, inputs):
        return ops.matmul(inputs, self.w) + self.b


class ComputeSum(keras.layers.Layer):
    def __init__(self, input_dim):
        super().__init__()
        self.total = self.add_weight(initializer="zeros", shape=(input_dim,),
                                     trainable=False)

    def call(self, inputs):
        self.total.assign_add(ops.sum(inputs, axis=0))
        return self.total


def test_add_weight_keyword_form_of_the_keras_guide():
    y = Linear(4)(np.ones((2, 2), "float32"))
    assert y.shape == (2, 4)
    my_sum = ComputeSum(2)
    x = np.ones((2, 2), "float32")
    np.testing.assert_array_equal(my_sum(x), [2.0, 2.0])
    np.testing.assert_array_equal(my_sum(x), [4.0, 4.0])
    assert len(my_sum.weights) == 1 and my_sum.trainable_weights == []


class ActivityRegularizationLayer(keras.layers.Layer):
    def __init__(self, rate=1e-2):
        super().__init__()
        self.rate = rate

    def call(self, inputs):
        self.add_loss(self.rate * ops.sum(inputs))
        return inputs


def test_add_loss_in_call_joins_the_training_loss():
    np.random.seed(0)
    inputs = keras.Input((3,))
    h = layers.Dense(2, kernel_initializer="ones", use_bias=False)(inputs)
    out = ActivityRegularizationLayer(0.5)(h)
    model = keras.Model(inputs, out)
    model.compile("sgd", "mse")
    x, y = np.ones((4, 3), "float32"), np.zeros((4, 2), "float32")
    loss = model.evaluate(x, y, verbose=0)
    # mse of h = 3 everywhere is 9; the activity term is 0.5 * sum(h) = 12.
    assert loss == pytest.approx(9.0 + 12.0)


class LogisticEndpoint(keras.layers.Layer):
    """keras.io "Training & evaluation with the built-in methods" (add_loss)."""

    def __init__(self, name=None):
        super().__init__(name=name)
        self.loss_fn = keras.losses.BinaryCrossentropy(from_logits=True)

    def call(self, targets, logits, sample_weights=None):
        loss = self.loss_fn(targets, logits, sample_weights)
        self.add_loss(loss)
        return ops.sigmoid(logits)


def test_model_without_compiled_loss_trains_on_add_loss_and_fit_without_y():
    np.random.seed(1)
    inputs = keras.Input(shape=(3,), name="inputs")
    targets = keras.Input(shape=(10,), name="targets")
    logits = keras.layers.Dense(10)(inputs)
    predictions = LogisticEndpoint(name="predictions")(targets, logits)
    model = keras.Model(inputs=[inputs, targets], outputs=predictions)
    model.compile(optimizer="adam")
    data = {"inputs": np.random.random((64, 3)).astype("float32"),
            "targets": np.random.random((64, 10)).astype("float32")}
    hist = model.fit(data, epochs=5, batch_size=16, verbose=0)
    assert hist.history["loss"][-1] < hist.history["loss"][0]


def test_model_add_loss_on_functional_inputs():
    np.random.seed(2)
    inp = keras.Input((4,))
    out = layers.Dense(4)(inp)
    model = keras.Model(inp, out)
    model.add_loss(ops.mean(ops.square(out - inp)))  # an autoencoder's loss
    model.compile(keras.optimizers.Adam(0.05))
    x = np.random.randn(64, 4).astype("float32")
    hist = model.fit(x, epochs=20, batch_size=64, verbose=0)
    assert hist.history["loss"][-1] < 0.5 * hist.history["loss"][0]


def test_add_metric_is_logged():
    class MeanActivation(layers.Layer):
        def call(self, x):
            self.add_metric(ops.mean(x), name="mean_activation")
            return x

    model = keras.Sequential([layers.Dense(1, kernel_initializer="ones",
                                           use_bias=False, input_shape=(2,)),
                              MeanActivation()])
    model.compile("sgd", "mse")
    logs = model.evaluate(np.ones((4, 2)), np.zeros((4, 1)), verbose=0,
                          return_dict=True)
    assert logs["mean_activation"] == pytest.approx(2.0)


def test_lambda_with_arguments():
    layer = layers.Lambda(lambda x, k: x * k, output_shape=(2,),
                          arguments={"k": 3.0})
    np.testing.assert_array_equal(layer(np.ones((1, 2), "float32")), [[3.0, 3.0]])


def test_ops_callables_of_keras_3():
    assert ops.shape(np.zeros((2, 3))) == (2, 3)
    batch, dim = ops.shape(K.placeholder("float32", (None, 5)))
    assert dim == 5 and K.is_symbolic(batch)  # the run-time size (Keras on TF)
    np.testing.assert_array_equal(ops.one_hot(np.array([0.0, 2.0]), 3),
                                  [[1, 0, 0], [0, 0, 1]])
    np.testing.assert_array_equal(ops.zeros((2,)), [0.0, 0.0])
    np.testing.assert_array_equal(ops.full((2,), 7.0), [7.0, 7.0])
    assert ops.arange(3).dtype == np.int64 and ops.array([1.5]).dtype == np.float32
    np.testing.assert_allclose(ops.l2_normalize(np.array([3.0, 4.0])), [0.6, 0.8])
    assert K.epsilon() == 1e-7 and K.image_data_format() == "channels_last"
    assert K.int_shape(K.placeholder("float32", (None, 2))) == (None, 2)
    t = ops.convert_to_tensor(K.placeholder("int32", (2,)), "float32")
    assert t.dtype == np.float32


def test_learning_rate_behaves_as_a_keras_3_variable():
    model = keras.Sequential([layers.Dense(1, input_shape=(2,))])
    model.compile(keras.optimizers.SGD(0.1), "mse")

    class Halve(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            lr = self.model.optimizer.learning_rate
            self.model.optimizer.learning_rate.assign(float(lr.numpy()) / 2)

    model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=3, verbose=0,
              callbacks=[Halve()])
    assert float(model.optimizer.learning_rate) == pytest.approx(0.0125)
    assert K.get_value(model.optimizer.lr) == pytest.approx(0.0125)
    K.set_value(model.optimizer.lr, 0.5)
    assert model.optimizer.learning_rate.value == pytest.approx(0.5)


def test_polynomial_decay_matches_keras_values():
    # keras optimizers/schedules/learning_rate_schedule_test.py (PolynomialDecay)
    sched = keras.optimizers.schedules.PolynomialDecay(0.1, 10, 0.01, power=0.5)
    expected = (0.1 - 0.01) * (1 - 2 / 10) ** 0.5 + 0.01
    assert float(sched(2)) == pytest.approx(expected, rel=1e-6)
    assert float(sched(12)) == pytest.approx(0.01)
    cyc = keras.optimizers.schedules.PolynomialDecay(0.1, 10, 0.01, cycle=True)
    assert float(cyc(12)) == pytest.approx((0.1 - 0.01) * (1 - 12 / 20) + 0.01)


def test_adadelta_matches_its_formula():
    w = K.Variable(np.array([1.0, -2.0]))
    opt = keras.optimizers.Adadelta(learning_rate=1.0, rho=0.9, epsilon=1e-6)
    g = np.array([0.5, 1.0])
    K.Function([], [], opt.apply_gradients([(K.constant(g), w)]))()
    eg = 0.1 * g ** 2
    d = np.sqrt(1e-6) / np.sqrt(eg + 1e-6) * g
    np.testing.assert_allclose(w.numpy(), [1.0, -2.0] - d, rtol=1e-6)
    assert keras.optimizers.get("adadelta").__class__.__name__ == "Adadelta"


def test_f1_score():
    m = keras.metrics.F1Score()
    yt = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 1, 0]])
    yp = np.array([[.9, .1, 0], [.2, .7, .1], [.6, .3, .1], [.1, .8, .1]])
    m.update_state(yt, yp)
    np.testing.assert_allclose(m.result(), [2 / 3, 1.0, 0.0])
    macro = keras.metrics.F1Score(average="macro")
    macro.update_state(yt, yp)
    assert macro.result() == pytest.approx(5 / 9)


class Batches(keras.utils.PyDataset):
    """keras.utils.PyDataset-style: __len__ and __getitem__ give batches."""

    def __init__(self, x, y, batch_size, **kwargs):
        super().__init__(**kwargs)
        self.x, self.y, self.batch_size = x, y, batch_size
        self.epochs_ended = 0

    def __len__(self):
        return -(-len(self.x) // self.batch_size)

    def __getitem__(self, i):
        s = slice(i * self.batch_size, (i + 1) * self.batch_size)
        return self.x[s], self.y[s]

    def on_epoch_end(self):
        self.epochs_ended += 1


def test_fit_takes_pydataset_and_any_iterable():
    np.random.seed(0)
    x = np.random.randn(20, 2).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    model = keras.Sequential([layers.Dense(1, input_shape=(2,))])
    model.compile(keras.optimizers.SGD(0.1), "mse")
    ds = Batches(x, y, 8)
    hist = model.fit(ds, epochs=3, verbose=0)
    assert ds.epochs_ended == 3 and len(hist.history["loss"]) == 3

    class Iterable:  # re-iterable: starts over each epoch
        def __iter__(self):
            return iter([(x[:10], y[:10]), (x[10:], y[10:])])

    hist = model.fit(Iterable(), epochs=2, verbose=0)
    assert hist.history["loss"][1] < hist.history["loss"][0]
    with pytest.raises(ValueError, match="y must be None"):
        model.fit(Iterable(), y, verbose=0)
    with pytest.raises(ValueError, match=r"validation_data must be.*length 1"):
        model.fit(x, y, validation_data=(x,), verbose=0)
