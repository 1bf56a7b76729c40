"""Overriding ``train_step`` / ``test_step`` / ``predict_step`` / ``compute_loss``.

Ported from keras.io's guide "Customizing what happens in ``fit()``" (the
TensorFlow edition, Keras 3: "A first simple example", "Going lower-level",
"Supporting sample_weight & class_weight", "Providing your own evaluation
step", "Wrapping up: an end-to-end GAN example"); Keras 3's own trainer tests
are in ``test_trainer_custom_steps.py``. ``tf.GradientTape`` is
``kf.GradientTape``; ``keras.ops``/``keras.random`` are ``kf.ops``/backend
random ops. The GAN draws its latent vectors with a static batch size (the
batches are all full), as ops with shapes from the graph are a separate item
of issue 19. Where the guide only trains, the tests also check the custom step
against fit's built-in step (same weights, same logs).
"""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from kerasflow import initializers, layers, losses, metrics, ops, optimizers


def _data(n=256, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.random((n, 32)).astype("float32"),
            rng.random((n, 1)).astype("float32"))


# -- the guide: a first simple example ----------------------------------------------
class CustomModel(kf.Model):
    def train_step(self, data):
        x, y = data
        with kf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred)
        trainable_vars = self.trainable_variables
        gradients = tape.gradient(loss, trainable_vars)
        self.optimizer.apply(gradients, trainable_vars)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


def _functional(cls, seed=0):
    np.random.seed(seed)
    inputs = kf.Input(shape=(32,))
    return cls(inputs, layers.Dense(1, kernel_initializer=initializers.GlorotUniform(
        seed=seed))(inputs))


def test_first_simple_example_learns_and_matches_builtin_fit():
    x, y = _data()
    model = _functional(CustomModel)
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    reference = _functional(kf.Model)
    reference.set_weights(model.get_weights())
    reference.compile(optimizer="adam", loss="mse", metrics=["mae"])
    hist = model.fit(x, y, epochs=3, batch_size=32, shuffle=False, verbose=0)
    ref = reference.fit(x, y, epochs=3, batch_size=32, shuffle=False, verbose=0)
    assert list(hist.history) == ["loss", "mae"]
    assert hist.history["loss"][-1] < hist.history["loss"][0]
    # The same gradients and optimizer: the same weights and logs as fit's own
    # step (full batches, so the mean of batch losses is the sample mean).
    for a, b in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hist.history["loss"], ref.history["loss"], rtol=1e-5)
    np.testing.assert_allclose(hist.history["mae"], ref.history["mae"], rtol=1e-5)
    assert [m.name for m in model.metrics] == ["loss", "compile_metrics"]


def test_step_is_traced_once_per_signature():
    """The override runs once at trace time (as ``tf.function`` traces it)."""
    calls = []

    class Counting(CustomModel):
        def train_step(self, data):
            calls.append(1)
            return super().train_step(data)

    x, y = _data(96)
    model = _functional(Counting)
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, y, epochs=2, batch_size=32, verbose=0)
    assert len(calls) == 1 and model.optimizer.iterations.numpy() == 6


# -- the guide: going lower-level ---------------------------------------------------
class LowLevelModel(kf.Model):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.loss_tracker = metrics.Mean(name="loss")
        self.mae_metric = metrics.MeanAbsoluteError(name="mae")
        self.loss_fn = losses.MeanSquaredError()

    def train_step(self, data):
        x, y = data
        with kf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.loss_fn(y, y_pred)
        trainable_vars = self.trainable_variables
        gradients = tape.gradient(loss, trainable_vars)
        self.optimizer.apply(gradients, trainable_vars)
        self.loss_tracker.update_state(loss)
        self.mae_metric.update_state(y, y_pred)
        return {"loss": self.loss_tracker.result(), "mae": self.mae_metric.result()}

    @property
    def metrics(self):
        # Listed here so that fit resets them at the start of each epoch.
        return [self.loss_tracker, self.mae_metric]


def test_going_lower_level_without_compiled_loss():
    x, y = _data()
    model = _functional(LowLevelModel)
    model.compile(optimizer="adam")
    hist = model.fit(x, y, epochs=5, batch_size=32, verbose=0).history
    assert hist["loss"][-1] < 0.5 * hist["loss"][0]
    # Metrics are reset every epoch: the last epoch's mae is its own mean.
    mae = float(np.mean(np.abs(model.predict(x, verbose=0) - y)))
    assert abs(hist["mae"][-1] - mae) < 0.1


# -- the guide: sample_weight & class_weight ----------------------------------------
class WeightedModel(kf.Model):
    def train_step(self, data):
        if len(data) == 3:
            x, y, sample_weight = data
        else:
            sample_weight = None
            x, y = data
        with kf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred, sample_weight=sample_weight)
        trainable_vars = self.trainable_variables
        gradients = tape.gradient(loss, trainable_vars)
        self.optimizer.apply(gradients, trainable_vars)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred, sample_weight=sample_weight)
        return {m.name: m.result() for m in self.metrics}


def test_sample_weight_reaches_train_step_and_matches_builtin():
    x, y = _data()
    sw = np.random.default_rng(1).random(len(x)).astype("float32")
    model = _functional(WeightedModel)
    reference = _functional(kf.Model)
    reference.set_weights(model.get_weights())
    for m in (model, reference):
        m.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    hist = model.fit(x, y, sample_weight=sw, epochs=2, batch_size=32,
                     shuffle=False, verbose=0).history
    ref = reference.fit(x, y, sample_weight=sw, epochs=2, batch_size=32,
                        shuffle=False, verbose=0).history
    for a, b in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hist["mae"], ref["mae"], rtol=1e-5)


# -- the guide: your own evaluation step --------------------------------------------
class EvalModel(kf.Model):
    def test_step(self, data):
        x, y = data
        y_pred = self(x, training=False)
        loss = self.compute_loss(y=y, y_pred=y_pred)
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


def test_own_evaluation_step_matches_builtin_evaluate():
    x, y = _data()
    model = _functional(EvalModel)
    model.compile(loss="mse", metrics=["mae"])
    reference = _functional(kf.Model)
    reference.set_weights(model.get_weights())
    reference.compile(loss="mse", metrics=["mae"])
    logs = model.evaluate(x, y, batch_size=32, return_dict=True, verbose=0)
    ref = reference.evaluate(x, y, batch_size=32, return_dict=True, verbose=0)
    assert list(logs) == ["loss", "mae"]
    np.testing.assert_allclose([logs["loss"], logs["mae"]],
                               [ref["loss"], ref["mae"]], rtol=1e-5)


def test_predict_step_override():
    class Doubling(kf.Model):
        def predict_step(self, data):
            return self(data, training=False) * 2.0

    x, _ = _data(40)
    model = _functional(Doubling)
    plain = model(x)
    np.testing.assert_allclose(model.predict(x, batch_size=16, verbose=0),
                               2 * plain, rtol=1e-6)


# -- the guide: an end-to-end GAN (on an MNIST subset) --------------------------------
class GAN(kf.Model):
    def __init__(self, discriminator, generator, latent_dim, batch_size):
        super().__init__()
        self.discriminator = discriminator
        self.generator = generator
        self.latent_dim = latent_dim
        self.batch_size = batch_size
        self.d_loss_tracker = metrics.Mean(name="d_loss")
        self.g_loss_tracker = metrics.Mean(name="g_loss")

    def compile(self, d_optimizer, g_optimizer, loss_fn):
        super().compile()
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer
        self.loss_fn = loss_fn

    @property
    def metrics(self):
        return [self.d_loss_tracker, self.g_loss_tracker]

    def train_step(self, real_images):
        if isinstance(real_images, tuple):
            real_images = real_images[0]
        n = self.batch_size
        random_latent_vectors = K.random_normal((n, self.latent_dim), seed=1)
        generated_images = self.generator(random_latent_vectors)
        combined_images = ops.concatenate([generated_images, real_images], axis=0)
        labels = ops.concatenate([ops.ones((n, 1)), ops.zeros((n, 1))], axis=0)
        labels = labels + 0.05 * K.random_uniform((2 * n, 1), seed=2)
        with kf.GradientTape() as tape:
            predictions = self.discriminator(combined_images)
            d_loss = self.loss_fn(labels, predictions)
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(
            zip(grads, self.discriminator.trainable_weights))
        random_latent_vectors = K.random_normal((n, self.latent_dim), seed=3)
        misleading_labels = ops.zeros((n, 1))
        with kf.GradientTape() as tape:
            predictions = self.discriminator(self.generator(random_latent_vectors))
            g_loss = self.loss_fn(misleading_labels, predictions)
        grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply_gradients(zip(grads, self.generator.trainable_weights))
        self.d_loss_tracker.update_state(d_loss)
        self.g_loss_tracker.update_state(g_loss)
        return {"d_loss": self.d_loss_tracker.result(),
                "g_loss": self.g_loss_tracker.result()}


def test_gan_on_mnist_subset(data_dir, monkeypatch):
    monkeypatch.setenv("KERASFLOW_DATA_DIR", str(data_dir))
    (x, _), _ = kf.datasets.mnist.load_data()
    images = (x[:512].reshape(-1, 784).astype("float32") / 255.0)
    latent_dim, batch = 16, 64
    np.random.seed(0)
    discriminator = kf.Sequential([
        layers.Dense(64, activation="leaky_relu", input_shape=(784,)),
        layers.Dense(1)], name="discriminator")
    generator = kf.Sequential([
        layers.Dense(64, activation="leaky_relu", input_shape=(latent_dim,)),
        layers.Dense(784, activation="sigmoid")], name="generator")
    gan = GAN(discriminator, generator, latent_dim, batch)
    gan.compile(d_optimizer=optimizers.Adam(learning_rate=0.0003),
                g_optimizer=optimizers.Adam(learning_rate=0.0003),
                loss_fn=losses.BinaryCrossentropy(from_logits=True))
    g_before = generator.get_weights()[0].copy()
    hist = gan.fit(images, epochs=2, batch_size=batch, verbose=0).history
    assert set(hist) == {"d_loss", "g_loss"}
    assert np.all(np.isfinite(hist["d_loss"] + hist["g_loss"]))
    # Both optimizers stepped once per batch, each on its own network.
    assert gan.d_optimizer.iterations.numpy() == 16
    assert gan.g_optimizer.iterations.numpy() == 16
    assert not np.allclose(generator.get_weights()[0], g_before)
    # The discriminator learns to tell MNIST digits from the young generator's.
    fake = generator.predict(np.random.default_rng(0).normal(
        size=(256, latent_dim)).astype("float32"), verbose=0)
    real_logit = discriminator.predict(images[:256], verbose=0).mean()
    fake_logit = discriminator.predict(fake, verbose=0).mean()
    assert fake_logit > real_logit  # label 1 is "fake" in the guide


# -- the guide's Keras 2 edition: compiled_loss / compiled_metrics --------------
class Keras2StyleModel(kf.Model):
    def train_step(self, data):
        x, y = data
        with kf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compiled_loss(y, y_pred, regularization_losses=self.losses)
        gradients = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(gradients, self.trainable_variables))
        self.compiled_metrics.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics if m.name != "loss"}


def test_keras2_compiled_loss_and_metrics():
    x, y = _data()
    model = _functional(Keras2StyleModel)
    reference = _functional(kf.Model)
    reference.set_weights(model.get_weights())
    for m in (model, reference):
        m.compile(optimizer="sgd", loss="mse", metrics=["mae"])
    hist = model.fit(x, y, epochs=2, batch_size=32, shuffle=False, verbose=0).history
    ref = reference.fit(x, y, epochs=2, batch_size=32, shuffle=False,
                        verbose=0).history
    assert list(hist) == ["mae"]  # compile_metrics' dict result, merged
    np.testing.assert_allclose(hist["mae"], ref["mae"], rtol=1e-5)


# -- program order inside a traced step (tf.function's control dependencies) ---------
class TwoPhase(kf.Model):
    """A GAN's shape without randomness: phase 2 reads what phase 1 updated."""

    def __init__(self):
        super().__init__()
        self.a = layers.Dense(2, kernel_initializer=initializers.Constant(0.5))
        self.b = layers.Dense(1, kernel_initializer=initializers.Constant(-0.3))
        self.opt_a, self.opt_b = optimizers.SGD(0.1), optimizers.SGD(0.2)

    def call(self, x):
        return self.b(self.a(x))

    def phase(self, x, y, tape_cls=kf.GradientTape):
        with tape_cls() as tape:
            loss_b = K.mean(K.square(self(x) - y))
        grads = tape.gradient(loss_b, self.b.trainable_weights)
        self.opt_b.apply_gradients(zip(grads, self.b.trainable_weights))
        with tape_cls() as tape:
            loss_a = K.mean(K.square(self(x) - y))  # reads the updated b
        grads = tape.gradient(loss_a, self.a.trainable_weights)
        self.opt_a.apply_gradients(zip(grads, self.a.trainable_weights))
        return loss_b, loss_a

    def train_step(self, data):
        loss_b, loss_a = self.phase(*data)
        return {"loss_b": loss_b, "loss_a": loss_a}


def test_reads_after_apply_gradients_see_the_update():
    x = np.linspace(-1, 1, 24, dtype="float32").reshape(12, 2)
    y = (x @ np.array([[1.0], [-2.0]], "float32")) + 0.5
    traced = TwoPhase()
    traced.compile()
    hist = traced.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    eager = TwoPhase()
    eager(x[:1])  # build
    logs = [eager.phase(x[s:s + 4], y[s:s + 4]) for s in range(0, 12, 4)]
    for a, b in zip(traced.get_weights(), eager.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(hist.history["loss_a"], [float(logs[-1][1])],
                               rtol=1e-5)


# -- keras.io's conditional GAN: a Model subclass that is never called -------------
class NoCallRegression(kf.Model):
    """Trains its own layer in train_step and defines no call(), as keras.io's
    conditional GAN (Keras needs call() only when the model is called)."""

    def __init__(self):
        super().__init__()
        self.dense = layers.Dense(1, kernel_initializer="zeros")
        self.loss_tracker = metrics.Mean(name="loss")

    def train_step(self, data):
        x, y = data
        with kf.GradientTape() as tape:
            loss = ops.mean(ops.square(self.dense(x) - y))
        grads = tape.gradient(loss, self.dense.trainable_weights)
        self.optimizer.apply_gradients(zip(grads, self.dense.trainable_weights))
        self.loss_tracker.update_state(loss)
        return {"loss": self.loss_tracker.result()}


def test_model_without_call_trains_with_its_train_step():
    x = np.random.default_rng(0).normal(size=(64, 2)).astype("float32")
    y = x @ np.array([[2.0], [-1.0]], "float32") + 0.5  # sized (64, 1), given as is
    model = NoCallRegression()
    model.compile(optimizer=optimizers.SGD(0.1))
    hist = model.fit(x, y, epochs=30, batch_size=16, verbose=0)
    assert hist.history["loss"][-1] < 1e-3 < hist.history["loss"][0]
    kernel, bias = model.dense.get_weights()
    np.testing.assert_allclose(kernel, [[2.0], [-1.0]], atol=0.02)
    np.testing.assert_allclose(bias, [0.5], atol=0.02)
    with pytest.raises(NotImplementedError, match="has no call()"):
        model(x)  # calling it still needs call()
