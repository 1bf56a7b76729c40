"""Training loops written from scratch with ``kf.GradientTape`` on arrays.

Ported from keras.io's guide "Writing a training loop from scratch" (the
TensorFlow edition, Keras 3): "Using the GradientTape: a first end-to-end
example", "Low-level handling of metrics", "Low-level handling of losses
tracked by the model" and "End-to-end example: a GAN training loop from
scratch", on an MNIST subset to stay fast. "Speeding-up your training step
with tf.function" is TensorFlow's tracing decorator (another backend's
feature): here the eager tape already runs one compiled graph per input
signature, which ``test_one_cached_graph_per_signature`` checks. Besides the
guide: gradients checked numerically, a loop equal to ``fit``, and the
``GradientTape`` API (``persistent``, ``watch``, ``output_gradients``,
``unconnected_gradients``, ``stop_recording``) as ``tf.GradientTape`` has it.
"""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from kerasflow import layers, ops
from kerasflow.backend import tape_call


@pytest.fixture(scope="module")
def mnist(data_dir):
    import os  # noqa: PLC0415

    old = os.environ.get("KERASFLOW_DATA_DIR")
    os.environ["KERASFLOW_DATA_DIR"] = str(data_dir)
    try:
        (x, y), _ = kf.datasets.mnist.load_data()
    finally:
        if old is None:
            os.environ.pop("KERASFLOW_DATA_DIR")
        else:
            os.environ["KERASFLOW_DATA_DIR"] = old
    x = x[:1500].reshape(-1, 784).astype("float32") / 255.0
    return x[:1000], y[:1000].astype("int64"), x[1000:], y[1000:1500].astype("int64")


def get_model(seed=0):
    np.random.seed(seed)
    inputs = kf.Input(shape=(784,), name="digits")
    x = layers.Dense(64, activation="relu")(inputs)
    x = layers.Dense(64, activation="relu")(x)
    return kf.Model(inputs=inputs, outputs=layers.Dense(10, name="predictions")(x))


def batches(x, y, batch_size):
    for start in range(0, len(x), batch_size):
        yield x[start:start + batch_size], y[start:start + batch_size]


# -- the guide: first end-to-end example + low-level metrics --------------------------
def test_guide_training_loop_with_metrics(mnist):
    x_train, y_train, x_val, y_val = mnist
    model = get_model()
    optimizer = kf.optimizers.Adam(learning_rate=1e-3)
    loss_fn = kf.losses.SparseCategoricalCrossentropy(from_logits=True)
    train_acc_metric = kf.metrics.SparseCategoricalAccuracy()
    val_acc_metric = kf.metrics.SparseCategoricalAccuracy()
    epoch_losses, val_accs = [], []
    for _ in range(2):
        losses = []
        for x_batch, y_batch in batches(x_train, y_train, 32):
            with kf.GradientTape() as tape:
                logits = model(x_batch, training=True)
                loss_value = loss_fn(y_batch, logits)
            grads = tape.gradient(loss_value, model.trainable_weights)
            optimizer.apply(grads, model.trainable_weights)
            train_acc_metric.update_state(y_batch, logits)
            losses.append(float(loss_value))
        train_acc_metric.reset_state()
        for x_batch, y_batch in batches(x_val, y_val, 64):
            val_acc_metric.update_state(y_batch, model(x_batch, training=False))
        val_accs.append(float(val_acc_metric.result()))
        val_acc_metric.reset_state()
        epoch_losses.append(np.mean(losses))
    assert epoch_losses[1] < epoch_losses[0] < 2.0
    assert val_accs[-1] > 0.75
    assert optimizer.iterations.numpy() == 2 * 32


# -- the guide: losses tracked by the model -----------------------------------------
class ActivityRegularizationLayer(layers.Layer):
    def call(self, inputs):
        self.add_loss(1e-2 * ops.sum(inputs))
        return inputs


def test_guide_losses_tracked_by_the_model():
    np.random.seed(0)
    inputs = kf.Input(shape=(784,), name="digits")
    x = layers.Dense(64, activation="relu")(inputs)
    x = ActivityRegularizationLayer()(x)
    x = layers.Dense(64, activation="relu")(x)
    model = kf.Model(inputs=inputs, outputs=layers.Dense(10)(x))
    loss_fn = kf.losses.SparseCategoricalCrossentropy(from_logits=True)
    xb = np.random.default_rng(0).random((16, 784)).astype("float32")
    yb = np.arange(16) % 10
    with kf.GradientTape() as tape:
        logits = model(xb, training=True)
        loss_value = loss_fn(yb, logits)
        penalty = sum(model.losses)
        loss_value += penalty
    hidden = model.layers[1](xb)
    np.testing.assert_allclose(float(penalty), 1e-2 * hidden.sum(), rtol=1e-5)
    grads = tape.gradient(loss_value, model.trainable_weights)
    with kf.GradientTape() as tape:
        plain = loss_fn(yb, model(xb, training=True))
    plain_grads = tape.gradient(plain, model.trainable_weights)
    # The penalty's gradient reaches the first layer's bias: 1e-2 per unit alive.
    alive = (hidden > 0).sum(axis=0)
    np.testing.assert_allclose(grads[1] - plain_grads[1], 1e-2 * alive, rtol=1e-4,
                               atol=1e-6)
    np.testing.assert_allclose(grads[-1], plain_grads[-1], rtol=1e-5, atol=1e-7)


def test_weight_regularizers_are_recorded_too():
    np.random.seed(0)
    model = kf.Sequential([layers.Dense(3, kernel_regularizer=kf.regularizers.L2(0.5),
                                        input_shape=(2,))])
    xb = np.ones((4, 2), "float32")
    with kf.GradientTape() as tape:
        loss = K.mean(model(xb)) * 0.0 + sum(model.losses)
    kernel = model.trainable_weights[0]
    (g,) = tape.gradient(loss, [kernel])
    np.testing.assert_allclose(g, 0.5 * 2 * kernel.numpy(), rtol=1e-5)


# -- the guide: a GAN training loop from scratch --------------------------------------
def test_guide_gan_from_scratch(mnist):
    x_train = mnist[0][:512]
    latent_dim, batch = 16, 64
    np.random.seed(0)
    discriminator = kf.Sequential([
        layers.Dense(64, activation="leaky_relu", input_shape=(784,)),
        layers.Dense(1)], name="discriminator")
    generator = kf.Sequential([
        layers.Dense(64, activation="leaky_relu", input_shape=(latent_dim,)),
        layers.Dense(784, activation="sigmoid")], name="generator")
    d_optimizer = kf.optimizers.Adam(learning_rate=0.0003)
    g_optimizer = kf.optimizers.Adam(learning_rate=0.0004)
    loss_fn = kf.losses.BinaryCrossentropy(from_logits=True)
    rng = np.random.default_rng(0)

    def train_step(real_images):
        random_latent_vectors = rng.normal(size=(batch, latent_dim)).astype("float32")
        generated_images = generator(random_latent_vectors)
        combined_images = ops.concatenate([generated_images, real_images], axis=0)
        labels = np.concatenate([np.ones((batch, 1)), np.zeros((batch, 1))], axis=0)
        labels = (labels + 0.05 * rng.random(labels.shape)).astype("float32")
        with kf.GradientTape() as tape:
            predictions = discriminator(combined_images)
            d_loss = loss_fn(labels, predictions)
        grads = tape.gradient(d_loss, discriminator.trainable_weights)
        d_optimizer.apply_gradients(zip(grads, discriminator.trainable_weights))
        random_latent_vectors = rng.normal(size=(batch, latent_dim)).astype("float32")
        misleading_labels = np.zeros((batch, 1), "float32")
        with kf.GradientTape() as tape:
            predictions = discriminator(generator(random_latent_vectors))
            g_loss = loss_fn(misleading_labels, predictions)
        grads = tape.gradient(g_loss, generator.trainable_weights)
        assert all(g is not None for g in grads)  # through the discriminator
        g_optimizer.apply_gradients(zip(grads, generator.trainable_weights))
        return float(d_loss), float(g_loss)

    d_losses = [train_step(x_train[s:s + batch])[0]
                for _ in range(2) for s in range(0, len(x_train), batch)]
    assert np.all(np.isfinite(d_losses))
    assert np.mean(d_losses[-4:]) < np.mean(d_losses[:2])
    assert g_optimizer.iterations.numpy() == 16


def test_tf_function_section_is_tensorflows():
    pytest.skip("tf.function is TensorFlow's tracing decorator (another "
                "backend's feature); kerasflow's eager tape runs one compiled "
                "graph per input signature without it.")


# -- the loop against fit, and the cached graphs ---------------------------------------
def test_loop_equals_fit_step_for_step():
    rng = np.random.default_rng(1)
    x = rng.random((128, 784)).astype("float32")
    y = rng.integers(0, 10, 128)
    loop_model, fit_model = get_model(3), get_model(3)
    fit_model.set_weights(loop_model.get_weights())
    loss_fn = kf.losses.SparseCategoricalCrossentropy(from_logits=True)
    optimizer = kf.optimizers.SGD(learning_rate=0.1, momentum=0.9)
    for xb, yb in batches(x, y, 32):
        with kf.GradientTape() as tape:
            loss = loss_fn(yb, loop_model(xb, training=True))
        grads = tape.gradient(loss, loop_model.trainable_weights)
        optimizer.apply_gradients(zip(grads, loop_model.trainable_weights))
    fit_model.compile(kf.optimizers.SGD(learning_rate=0.1, momentum=0.9),
                      kf.losses.SparseCategoricalCrossentropy(from_logits=True))
    fit_model.fit(x, y, batch_size=32, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(loop_model.get_weights(), fit_model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_one_cached_graph_per_signature():
    model = get_model()
    loss_fn = kf.losses.SparseCategoricalCrossentropy(from_logits=True)
    optimizer = kf.optimizers.Adam()
    x = np.random.default_rng(0).random((96, 784)).astype("float32")
    y = np.arange(96) % 10

    def step(xb, yb):
        with kf.GradientTape() as tape:
            loss = loss_fn(yb, model(xb, training=True))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_weights),
                                      model.trainable_weights))

    step(x[:32], y[:32])
    sizes = (len(model._eager_traces), len(loss_fn._taped_calls),
             len(optimizer._eager_apply._fns), len(tape_call._OP_GRADS))
    for s in (32, 64):
        step(x[s:s + 32], y[s:s + 32])
    assert (len(model._eager_traces), len(loss_fn._taped_calls),
            len(optimizer._eager_apply._fns), len(tape_call._OP_GRADS)) == sizes


def test_tape_gradients_match_numerical(float64):
    np.random.seed(0)
    model = kf.Sequential([layers.Dense(4, activation="tanh", input_shape=(3,)),
                           layers.Dense(2)])
    x = np.random.default_rng(0).normal(size=(5, 3))
    y = np.array([0, 1, 1, 0, 1])
    loss_fn = kf.losses.SparseCategoricalCrossentropy(from_logits=True)
    with kf.GradientTape() as tape:
        out = model(x)
        loss = loss_fn(y, out) + 0.1 * K.mean(out * out)
    grads = tape.gradient(loss, model.trainable_weights)

    def value():
        out = model(x)
        return float(loss_fn(y, out) + 0.1 * np.mean(out * out))

    eps = 1e-6
    for var, g in zip(model.trainable_weights, grads):
        base = var.numpy()
        num = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            for sign in (1, -1):
                v = base.copy()
                v[idx] += sign * eps
                var.assign(v)
                num[idx] += sign * value() / (2 * eps)
        var.assign(base)
        np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-7)


# -- the GradientTape API -----------------------------------------------------------
def test_persistent_watch_and_output_gradients():
    x = np.array([1.0, 2.0, 3.0], "float32")
    with kf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = K.square(x)
        z = K.sum(y * 2.0)
    np.testing.assert_allclose(tape.gradient(z, x), 4 * x)
    np.testing.assert_allclose(tape.gradient(y, x, output_gradients=np.ones(3) * 3),
                               6 * x)
    np.testing.assert_allclose(tape.gradient(z, y), [2.0, 2.0, 2.0])


def test_non_persistent_tape_refuses_a_second_gradient():
    x = np.array(2.0, "float32")
    with kf.GradientTape() as tape:
        tape.watch(x)
        y = K.multiply(x, x)  # numpy's x * x would not be recorded
    assert float(tape.gradient(y, x)) == 4.0
    with pytest.raises(RuntimeError, match="non-persistent GradientTape"):
        tape.gradient(y, x)


def test_unconnected_gradients_and_stop_recording():
    w = K.Variable(np.ones((2, 2), "float32"))
    model = kf.Sequential([layers.Dense(1, input_shape=(2,))])
    with kf.GradientTape() as tape:
        out = model(np.ones((3, 2), "float32"))
        with tape.stop_recording():
            frozen = model(np.ones((3, 2), "float32"))
        loss = K.sum(out)
    assert not isinstance(frozen, K.TapeArray)
    grads = tape.gradient(loss, [model.trainable_weights[0], w],
                          unconnected_gradients="zero")
    np.testing.assert_allclose(grads[0], [[3.0], [3.0]])
    np.testing.assert_allclose(grads[1], np.zeros((2, 2)))
    with pytest.raises(ValueError, match="unconnected_gradients"):
        kf.GradientTape().gradient(loss, [w], unconnected_gradients="bad")


def test_numpy_math_leaves_the_tape():
    model = kf.Sequential([layers.Dense(1, input_shape=(2,))])
    with kf.GradientTape() as tape:
        out = model(np.ones((3, 2), "float32"))
        loss = np.sum(out)  # numpy, not a backend op: not recorded
    assert tape.gradient(loss, model.trainable_weights) == [None, None]


def test_backward_reuses_the_forward_dropout_mask():
    """The backward pass is fed what the forward pass computed: the gradient
    goes through the very mask the returned output was computed with."""
    np.random.seed(0)
    dense = layers.Dense(5, use_bias=False, input_shape=(3,))
    model = kf.Sequential([dense, layers.Dropout(0.5)])
    x = np.random.default_rng(0).random((64, 3)).astype("float32") + 0.5
    with kf.GradientTape() as tape:
        out = model(x, training=True)
        loss = K.sum(out)
    (g,) = tape.gradient(loss, [dense.kernel])
    scale = np.asarray(out) / (x @ dense.kernel.numpy())  # 0 or 1 / (1 - rate)
    assert set(np.round(np.unique(scale), 4)) <= {0.0, 2.0}
    np.testing.assert_allclose(g, x.T @ scale, rtol=1e-4)


def test_ops_on_variables_inside_the_tape_are_recorded():
    """A penalty written on the weights (``K.sum(K.square(w))``) runs on their
    values and reaches their gradients (it would otherwise be a graph node,
    silently dropped)."""
    np.random.seed(0)
    model = kf.Sequential([layers.Dense(2, input_shape=(3,))])
    kernel, bias = model.trainable_weights
    with kf.GradientTape() as tape:
        out = model(np.ones((4, 3), "float32"))
        loss = K.mean(out) + 0.5 * K.sum(K.square(kernel))
    assert isinstance(loss, K.TapeArray)
    g_kernel, g_bias = tape.gradient(loss, [kernel, bias])
    np.testing.assert_allclose(g_kernel, 0.5 + kernel.numpy(), rtol=1e-6)
    np.testing.assert_allclose(g_bias, [0.5, 0.5])


def test_apply_and_metric_updates_inside_a_recording_tape():
    """Graphs built while a tape records (the optimizer's update, a metric's
    update) stay graphs: Adam's step count advances, the metric accumulates."""
    x = np.ones((4, 2), "float32")
    models, optimizers = [], []
    for inside in (False, True):
        np.random.seed(0)
        model = kf.Sequential([layers.Dense(1, input_shape=(2,))])
        optimizer, metric = kf.optimizers.Adam(0.1), kf.metrics.Mean()
        for _ in range(3):
            with kf.GradientTape() as tape:
                loss = K.square(K.mean(model(x)) - 1.0)
                grads = tape.gradient(loss, model.trainable_weights)
                if inside:
                    optimizer.apply_gradients(zip(grads, model.trainable_weights))
                    metric.update_state(np.array([1.0, 2.0], "float32"))
            if not inside:
                optimizer.apply_gradients(zip(grads, model.trainable_weights))
                metric.update_state(np.array([1.0, 2.0], "float32"))
        assert metric.result() == 1.5 and optimizer.iterations.numpy() == 3
        models.append(model.get_weights())
        optimizers.append([v.numpy() for v in optimizer.variables])
    for a, b in zip(*models, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    for a, b in zip(*optimizers, strict=True):  # Adam's moments and step count
        np.testing.assert_allclose(a, b, rtol=1e-6)
