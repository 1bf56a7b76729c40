"""Keras' custom-metric contract: an ``update_state`` that assigns to its state
Variables and returns nothing still gets its updates run, in a graph (as
``Function`` updates) and eagerly; ``result()`` may return a Variable."""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import backend as K
from kerasflow import metrics
from kerasflow.backend import ops

YT = np.array([[1], [0], [2], [1]])
YP = np.array([[0.1, 0.9, 0.0], [0.8, 0.1, 0.1], [0.2, 0.7, 0.1],
               [0.3, 0.3, 0.4]], np.float32)
# (batch, 1) like the (batch, 1) values the example builds; (batch,) would
# broadcast to (batch, batch), in Keras as here.
SW = np.array([[1.0], [2.0], [4.0], [8.0]], np.float32)


# keras.io, "Training & evaluation with the built-in methods" (Keras 3), verbatim
# but for the namespaces: ``keras.metrics`` is kerasflow.metrics, ``ops`` the
# backend ops.
class CategoricalTruePositives(metrics.Metric):
    def __init__(self, name="categorical_true_positives", **kwargs):
        super().__init__(name=name, **kwargs)
        self.true_positives = self.add_variable(
            shape=(), name="ctp", initializer="zeros"
        )

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = ops.reshape(ops.argmax(y_pred, axis=1), (-1, 1))
        values = ops.cast(y_true, "int32") == ops.cast(y_pred, "int32")
        values = ops.cast(values, "float32")
        if sample_weight is not None:
            sample_weight = ops.cast(sample_weight, "float32")
            values = ops.multiply(values, sample_weight)
        self.true_positives.assign_add(ops.sum(values))

    def result(self):
        return self.true_positives

    def reset_state(self):
        # The state of the metric will be reset at the start of each epoch.
        self.true_positives.assign(0.0)


def _placeholders():
    return (K.placeholder("int64", (None, 1)), K.placeholder("float32", (None, 3)),
            K.placeholder("float32", (None, 1)))


def test_keras_io_metric_eagerly():
    m = CategoricalTruePositives()
    assert m.update_state(YT, YP) == []  # rows 0 and 1 are right
    assert m.result() == 2.0 and isinstance(m.result(), float)
    m.update_state(YT, YP, sample_weight=SW)
    assert m.result() == 2.0 + 1.0 + 2.0
    m.reset_state()
    assert m.result() == 0.0


@pytest.mark.parametrize("weighted", [False, True])
def test_custom_metric_updates_run_in_a_graph(weighted):
    m = CategoricalTruePositives()  # verbatim: == is elementwise on tensors
    t, p, sw = _placeholders()
    updates = m.update_state(t, p, sample_weight=sw if weighted else None)
    assert len(updates) == 1 and updates[0].node.op == "AssignAdd"
    inputs = [t, p, sw] if weighted else [t, p]
    fn = K.Function(inputs, [], updates=updates)
    assert m.result() == 0.0  # tracing changed nothing
    args = (YT, YP, SW) if weighted else (YT, YP)
    fn(*args)
    fn(*args)
    assert m.result() == (2 * 3.0 if weighted else 2 * 2.0)
    m.reset_state()
    fn(*args)
    assert m.result() == (3.0 if weighted else 2.0)


def test_keras_io_metric_verbatim_in_fit():
    import kerasflow as kf

    np.random.seed(0)
    model = kf.Sequential([kf.layers.Dense(3, activation="softmax",
                                           input_shape=(4,))])
    model.compile("sgd", "sparse_categorical_crossentropy",
                  metrics=[CategoricalTruePositives()])
    x = np.random.randn(40, 4).astype("float32")
    y = np.random.randint(0, 3, (40, 1))
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    logs = model.evaluate(x, y, batch_size=8, verbose=0, return_dict=True)
    expected = float(np.sum(model.predict(x).argmax(1) == y[:, 0]))
    assert logs["categorical_true_positives"] == expected


class MeanAndMax(metrics.Mean):
    """Nested: calls Mean.update_state without returning, and assigns itself."""

    def __init__(self, name="mean_and_max"):
        super().__init__(name=name)
        self.peak = self.add_weight("peak", initializer=-np.inf)

    def update_state(self, values, sample_weight=None):
        super().update_state(values, sample_weight)
        self.peak.assign(ops.maximum(self.peak, ops.max(values)))

    def result(self):
        return np.array([super().result(), self.peak.numpy()])


class Ratio(metrics.Metric):
    def __init__(self):
        super().__init__(name="ratio")
        self.num = self.add_weight(name="num")
        self.den = self.add_variable((), name="den")

    def update_state(self, a, b):
        self.num.assign_add(ops.sum(a))
        self.den.assign_add(ops.sum(b))
        return [self.den.assign_add(ops.sum(b) * 0.0)]  # returned and recorded

    def result(self):
        return self.num / self.den  # an expression of the state Variables


def test_nested_and_returned_updates_are_each_run_once():
    m = MeanAndMax()
    x = K.placeholder("float32", (None,))
    updates = m.update_state(x)
    assert len(updates) == 3  # total, count, peak: none lost, none twice
    fn = K.Function([x], [], updates=updates)
    fn(np.array([1.0, 5.0], np.float32))
    fn(np.array([3.0], np.float32))
    np.testing.assert_allclose(m.result(), [3.0, 5.0])
    m.reset_state()
    m.update_state(np.array([2.0, 4.0], np.float32))  # eager path, same class
    np.testing.assert_allclose(m.result(), [3.0, 4.0])

    r = Ratio()
    a, b = K.placeholder("float32", (None,)), K.placeholder("float32", (None,))
    updates = r.update_state(a, b)
    assert len(updates) == 3
    K.Function([a, b], [], updates=updates)(np.array([1.0, 2.0], np.float32),
                                             np.array([4.0, 4.0], np.float32))
    assert r.result() == pytest.approx(3.0 / 8.0)


def test_builtin_metrics_return_their_ops_once():
    m = metrics.Mean()
    x = K.placeholder("float32", (None,))
    updates = m.update_state(x)
    assert len(updates) == 2 and len({id(u) for u in updates}) == 2
    acc = metrics.SparseCategoricalAccuracy()
    t, p, _ = _placeholders()
    assert len(acc.update_state(t, p)) == 2


# -- eager updates run a compiled trace, cached per signature (issue 19) -----------
def test_eager_update_traced_once_per_signature_and_exact():
    m = metrics.SparseCategoricalAccuracy()
    y = np.array([0, 1, 2, 1])
    p = np.eye(3, dtype=np.float32)[[0, 1, 1, 1]]
    m.update_state(y, p)
    m.update_state(y[:2], p[:2])  # same per-sample signature: same function
    assert len(m._eager_updates) == 1
    assert m.result() == pytest.approx(5 / 6)


class NumpyOnlyMetric(metrics.Metric):
    """Written for arrays only (numpy on the inputs): runs eagerly as written."""

    def __init__(self, name="numpy_only", **kwargs):
        super().__init__(name=name, **kwargs)
        self.total = self.add_variable(shape=(), name="total")

    def update_state(self, values):
        self.total.assign_add(np.float32(np.asarray(values).sum()))

    def result(self):
        return self.total


def test_eager_update_of_array_only_metric_still_runs():
    m = NumpyOnlyMetric()
    m.update_state(np.array([1.0, 2.0], np.float32))
    m.update_state(np.array([3.0, 4.0], np.float32))
    assert m.result() == 10.0
