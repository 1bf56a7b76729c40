"""Custom steps in Keras 3's own trainer tests.

Ported from Keras 3.15's ``keras/src/trainers/trainer_test.py``:
``test_fit_with_custom_train_step``, ``test_evaluate_with_custom_test_step``,
``test_metric_update_in_compute_loss``,
``test_fwd_pass_loss_presence_in_compute_loss``,
``test_evaluate_with_custom_compute_loss``,
``test_compute_loss_no_training_backwards_compatibility``, ``test_retracing``
and ``test_retracing_predict``. ``ExampleModel`` (a ``Trainer`` mixed into
``Dense`` there) is a subclassed ``kf.Model`` around one ``Dense``. The
JAX-trainer variants (stateless ``train_step(state, data)``), ``run_eagerly``
/ ``jit_compile`` parametrizations and sparse inputs are other backends'
features and are not ported. Also here: the symbolic ``GradientTape``, and
``train_on_batch``/``test_on_batch`` with a custom step.
"""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from kerasflow import initializers, layers, losses, metrics, optimizers


# -- Keras 3 trainer_test.py ---------------------------------------------------------
class ExampleModel(kf.Model):
    def __init__(self, units):
        super().__init__()
        self.dense = layers.Dense(units, use_bias=False,
                                  kernel_initializer=initializers.Ones())

    def call(self, x):
        return self.dense(x)


class CustomTrainTestStepModel(ExampleModel):
    def train_step(self, data):
        logs = super().train_step(data)
        logs["my_custom_metric"] = 10.0
        return logs

    def test_step(self, data):
        logs = super().test_step(data)
        logs["my_custom_metric"] = 5.0
        return logs


def _example_compile(model):
    model.compile(optimizer=optimizers.SGD(), loss=losses.MeanSquaredError(),
                  metrics=[metrics.MeanSquaredError()])


def test_fit_with_custom_train_step():
    model = CustomTrainTestStepModel(units=3)
    _example_compile(model)
    history = model.fit(np.ones((100, 4)), np.zeros((100, 3)), batch_size=16,
                        verbose=0).history
    assert "loss" in history and "mean_squared_error" in history
    np.testing.assert_allclose(history["my_custom_metric"], 10.0)
    # super().train_step is fit's own step: the same numbers.
    reference = ExampleModel(units=3)
    _example_compile(reference)
    ref = reference.fit(np.ones((100, 4)), np.zeros((100, 3)), batch_size=16,
                        verbose=0).history
    np.testing.assert_allclose(history["loss"], ref["loss"], rtol=1e-5)
    np.testing.assert_allclose(model.get_weights()[0], reference.get_weights()[0],
                               rtol=1e-5)


@pytest.mark.parametrize("return_dict", [False, True])
def test_evaluate_with_custom_test_step(return_dict):
    model = CustomTrainTestStepModel(units=3)
    _example_compile(model)
    output = model.evaluate(np.ones((100, 4)), np.zeros((100, 3)), batch_size=16,
                            return_dict=return_dict, verbose=0)
    assert len(output) == 3
    if return_dict:
        np.testing.assert_allclose(output["my_custom_metric"], 5.0)
        np.testing.assert_allclose(output["loss"], 16.0)
    else:
        np.testing.assert_allclose(output, [16.0, 16.0, 5.0])  # custom last


class LossMetricModel(kf.Model):
    def __init__(self, regularize=False):
        super().__init__()
        self.custom_metric = metrics.Mean(name="custom")
        self.dense = layers.Dense(2, activity_regularizer="l2" if regularize
                                  else None)
        self.seen_training = []

    def call(self, x):
        return self.dense(x)


def test_metric_update_in_compute_loss():
    class MyModel(LossMetricModel):
        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None,
                         training=True):
            self.seen_training.append(training)
            loss = super().compute_loss(x, y, y_pred, sample_weight, training)
            self.custom_metric.update_state(loss * 4)
            return loss

    model = MyModel()
    model.compile(optimizer="sgd", loss="mse")
    history = model.fit(np.ones((32, 4)), np.ones((32, 2)) * 2, verbose=0)
    np.testing.assert_allclose(history.history["custom"][0],
                               history.history["loss"][0] * 4, rtol=1e-5)
    assert model.seen_training == [True]


def test_fwd_pass_loss_presence_in_compute_loss():
    class MyModel(LossMetricModel):
        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None,
                         training=True):
            loss = super().compute_loss(x, y, y_pred, sample_weight, training)
            self.custom_metric.update_state(sum(self.losses))
            return loss

    model = MyModel(regularize=True)
    model.compile(optimizer="sgd", loss="mse")
    history = model.fit(np.ones((32, 4)), np.ones((32, 2)) * 2, verbose=0)
    assert history.history["custom"][0] > 0.0


def test_evaluate_with_custom_compute_loss():
    class MyModel(LossMetricModel):
        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None,
                         training=True):
            self.seen_training.append(training)
            loss = super().compute_loss(x, y, y_pred, sample_weight, training)
            self.custom_metric.update_state(loss * 4)
            return loss

    model = MyModel(regularize=True)
    model.compile(optimizer="sgd", loss="mse")
    logs = model.evaluate(np.ones((32, 4)), np.ones((32, 2)) * 2,
                          return_dict=True, verbose=0)
    np.testing.assert_allclose(logs["custom"], logs["loss"] * 4, rtol=1e-5)
    assert model.seen_training == [False]


def test_compute_loss_no_training_backwards_compatibility():
    class MyModel(LossMetricModel):
        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None):
            loss = super().compute_loss(x, y, y_pred, sample_weight)
            self.custom_metric.update_state(loss * 4)
            return loss

    model = MyModel(regularize=True)
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((32, 4)), np.ones((32, 2)) * 2
    logs = model.evaluate(x, y, return_dict=True, verbose=0)
    np.testing.assert_allclose(logs["custom"], logs["loss"] * 4, rtol=1e-5)
    history = model.fit(x, y, verbose=0).history
    np.testing.assert_allclose(history["custom"][0], history["loss"][0] * 4,
                               rtol=1e-5)


def test_retracing():
    tracing_count = [0]
    inputs = kf.Input(shape=[4])
    outputs = layers.Dense(1, activation="relu")(inputs)

    class TracingCounterModel(kf.Model):
        def train_step(self, *args):
            tracing_count[0] += 1
            return super().train_step(*args)

        def predict_step(self, *args):
            tracing_count[0] += 1
            return super().predict_step(*args)

    model = TracingCounterModel(inputs=inputs, outputs=outputs)
    model.compile(loss="mse", optimizer="adam", steps_per_execution=20)
    model.fit(np.ones((100, 4)), np.ones((100, 1)), batch_size=1, verbose=0)
    assert tracing_count[0] <= 2
    tracing_count[0] = 0
    model.predict(np.ones((100, 4)), batch_size=1, verbose=0)
    assert tracing_count[0] <= 2


def test_symbolic_tape_gradient_is_backend_gradients():
    x = K.placeholder("float32", (None, 3))
    w = K.Variable(np.array([[1.0], [2.0], [3.0]], "float32"))
    with kf.GradientTape() as tape:
        loss = K.sum(K.square(K.matmul(x, w)))
    (g,) = tape.gradient(loss, [w])
    xv = np.array([[1.0, 0.0, 1.0]], "float32")
    value = K.Function([x], [g])(xv)[0]
    np.testing.assert_allclose(value, 2 * xv.T @ (xv @ w.numpy()))
    with pytest.raises(RuntimeError, match="non-persistent GradientTape"):
        tape.gradient(loss, [w])


def test_train_and_test_on_batch_report_the_custom_logs():
    model = CustomTrainTestStepModel(units=3)
    _example_compile(model)
    logs = model.train_on_batch(np.ones((4, 4)), np.zeros((4, 3)), return_dict=True)
    assert logs == {"loss": 16.0, "mean_squared_error": 16.0,
                    "my_custom_metric": 10.0}
    assert model.test_on_batch(np.ones((4, 4)), np.zeros((4, 3)))[-1] == 5.0


def test_custom_train_step_splits_into_compute_and_apply():
    """What the strategies run: compute (scaled gradients, metric deltas) then
    apply equals the fused step; the step pickles as graph data."""
    import pickle  # noqa: PLC0415

    from kerasflow.steps.custom import CustomTrainStep  # noqa: PLC0415

    model = CustomTrainTestStepModel(units=3)
    _example_compile(model)
    x, y = np.ones((8, 4), "float32"), np.zeros((8, 3), "float32")
    model.train_on_batch(x, y)  # builds the step and the optimizer's slots
    step = next(s for k, s in model._steps.items() if k[0] == "train")
    assert isinstance(step, CustomTrainStep)
    arrays = [x, y, np.ones(8, "float32")]
    start = model.get_weights()
    step.run(arrays, 8)
    fused = model.get_weights()
    model.set_weights(start)
    half = [x[:4], y[:4], np.ones(4, "float32")]
    parts = [step.compute_gradients(half, 8), step.compute_gradients(half, 8)]
    step.apply_gradients(parts[0].grads + parts[1].grads)
    for a, b in zip(model.get_weights(), fused):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    clone = pickle.loads(pickle.dumps(step))
    assert clone.log_names == step.log_names and clone.layout.size == 12


def test_step_without_apply_gradients_runs_in_process_only():
    class ManualModel(ExampleModel):
        def train_step(self, data):
            x, y = data
            with kf.GradientTape() as tape:
                loss = K.mean(K.square(self(x) - y))
            (g,) = tape.gradient(loss, self.trainable_weights)
            self.trainable_weights[0].assign_sub(0.1 * g)
            return {"loss": loss}

    model = ManualModel(units=1)
    model.compile(optimizer="sgd")
    x, y = np.ones((4, 2), "float32"), np.zeros((4, 1), "float32")
    history = model.fit(x, y, epochs=2, batch_size=4, verbose=0).history
    assert history["loss"][1] < history["loss"][0] == 4.0
    step = next(s for k, s in model._steps.items() if k[0] == "train")
    with pytest.raises(NotImplementedError, match="runs in process only"):
        step.compute_gradients([x, y, np.ones(4, "float32")], 4)
