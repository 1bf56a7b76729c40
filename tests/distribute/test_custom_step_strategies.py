"""A model's own ``train_step`` under the strategies: the traced step is split
into compute -> reduce -> apply (``models.custom_step.CustomTrainStep``), so
MirroredStrategy(2) and synchronous parameter servers give the same weights
and logs as one process on the global batch, as the built-in step does (issue
19, "Custom training"; the custom step is keras.io's "Customizing what happens
in fit()", "A first simple example")."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf

pytestmark = [pytest.mark.ray, pytest.mark.timeout(180),
              pytest.mark.usefixtures("ray_cluster")]


class CustomModel(kf.Model):
    def train_step(self, data):
        x, y = data
        with kf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(grads, self.trainable_variables)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


def _fit(strategy):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((120, 6))
    y = x @ rng.standard_normal((6, 1)) + 0.1

    def build():
        np.random.seed(0)
        inputs = kf.Input((6,))
        h = kf.layers.Dense(8, activation="tanh")(inputs)
        model = CustomModel(inputs, kf.layers.Dense(1)(h))
        model.compile(optimizer=kf.optimizers.Adam(0.05), loss="mse",
                      metrics=["mae"])
        return model

    kw = dict(batch_size=20, epochs=2, shuffle=False, verbose=0)
    if strategy is None:
        model = build()
        return model, model.fit(x, y, **kw).history
    with strategy.scope():
        model = build()
        history = model.fit(x, y, **kw).history
    return model, history


def test_custom_train_step_mirrored_equals_one_process(float64):
    (m1, h1) = _fit(None)
    (m2, h2) = _fit(kf.distribute.MirroredStrategy(num_replicas=2))
    for a, b in zip(m1.get_weights(), m2.get_weights()):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)
    assert list(h2) == ["loss", "mae"]
    for k in h1:
        np.testing.assert_allclose(h2[k], h1[k], rtol=1e-9)


def test_custom_train_step_parameter_server_sync_equals_one_process(float64):
    """Synchronous parameter servers (staleness=0) equal one process too."""
    (m1, h1) = _fit(None)
    strategy = kf.distribute.ParameterServerStrategy(num_ps=1, num_workers=2,
                                                     staleness=0)
    (m2, h2) = _fit(strategy)
    for a, b in zip(m1.get_weights(), m2.get_weights()):
        np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(h2["loss"], h1["loss"], rtol=1e-9)
