"""Keras 3's optimizer golden values, on arrays applied eagerly.

Ported from Keras 3.15's ``keras/src/optimizers/adam_test.py``,
``adamw_test.py``, ``sgd_test.py`` and ``optimizer_test.py`` (weight decay,
EMA, clipping, golden trajectories, iterations, empty gradients). Numbers and
tolerances are Keras'; ``backend.Variable``/``ops`` become kerasflow's. Each
test also runs the symbolic path (``apply_gradients`` on placeholders in a
``Function``) where it checks the same numbers, so both paths stay equal.
"""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from kerasflow.optimizers import SGD, Adam, AdamW


def _var(value, name=None, dtype="float32"):
    return K.Variable(np.asarray(value, dtype), name=name)


# -- single steps -------------------------------------------------------------------
def test_adam_single_step():
    opt, v = Adam(learning_rate=0.5), _var([1.0, 2.0, 3.0, 4.0])
    assert opt.apply_gradients(zip([np.array([1.0, 6.0, 7.0, 2.0])], [v])) \
        is opt.iterations
    np.testing.assert_allclose(v.numpy(), [0.5, 1.5, 2.5, 3.5], rtol=1e-4, atol=1e-4)


def test_adamw_single_step():
    opt, v = AdamW(learning_rate=0.5), _var([1.0, 2.0, 3.0, 4.0])
    opt.apply_gradients(zip([np.array([1.0, 6.0, 7.0, 2.0])], [v]))
    np.testing.assert_allclose(v.numpy(), [0.4980, 1.4960, 2.494, 3.492],
                               rtol=1e-4, atol=1e-4)


def test_sgd_single_step_and_variables():
    opt, v = SGD(learning_rate=0.5), _var([1.0, 2.0, 3.0, 4.0])
    opt.build([v])
    opt.apply_gradients(zip([np.array([1.0, 6.0, 7.0, 2.0])], [v]))
    np.testing.assert_allclose(v.numpy(), [0.5, -1.0, -0.5, 3.0], rtol=1e-4,
                               atol=1e-4)
    assert opt.iterations.numpy() == 1 and opt.learning_rate.value == 0.5


def test_keras3_apply_uses_built_variables():
    opt, v = SGD(learning_rate=0.5), _var([1.0, 2.0])
    opt.build([v])
    opt.apply([np.array([1.0, 1.0])])
    np.testing.assert_allclose(v.numpy(), [0.5, 1.5])
    with pytest.raises(ValueError, match="must already be built"):
        SGD().apply([np.zeros(2)])


# -- weight decay -------------------------------------------------------------------
@pytest.mark.parametrize("cls", [Adam, AdamW, SGD])
def test_weight_decay_and_exclusions(cls):
    grads = np.zeros((), "float32")
    var1, var2, var3 = _var(2.0), _var(2.0, name="exclude"), _var(2.0)
    cls(learning_rate=1.0, weight_decay=0.004).apply_gradients(zip([grads], [var1]))
    opt2 = cls(learning_rate=1.0, weight_decay=0.004)
    opt2.exclude_from_weight_decay(var_names=["exclude"])
    opt2.apply_gradients(zip([grads, grads], [var1, var2]))
    opt3 = cls(learning_rate=1.0, weight_decay=0.004)
    opt3.exclude_from_weight_decay(var_list=[var3])
    opt3.apply_gradients(zip([grads, grads], [var1, var3]))
    np.testing.assert_almost_equal(var1.numpy(), 1.9760959, decimal=6)
    np.testing.assert_almost_equal(var2.numpy(), 2.0, decimal=6)
    np.testing.assert_almost_equal(var3.numpy(), 2.0, decimal=6)


def test_adamw_weight_decay_none_is_refused():
    with pytest.raises(ValueError, match="Argument `weight_decay` must be a float. "
                                         "Received: weight_decay=None"):
        AdamW(learning_rate=1.0, weight_decay=None)


# -- golden trajectories ------------------------------------------------------------
ADAM_GOLDEN = np.tile([[0.999], [0.9982], [0.9974], [0.9965], [0.9955]], (1, 10))
ADAMW_GOLDEN = np.array([
    [0.4998] * 10,
    [0.2486, 0.2475, 0.2463, 0.2451, 0.244, 0.2428, 0.2417, 0.2405, 0.2394, 0.2382],
    [0.1223, 0.1198, 0.1174, 0.1149, 0.1124, 0.11, 0.1075, 0.1051, 0.1027, 0.1003],
    [0.0586, 0.0549, 0.0512, 0.0475, 0.0439, 0.0402, 0.0366, 0.033, 0.0294, 0.0258],
    [0.0263, 0.0215, 0.0167, 0.012, 0.0073, 0.0026, -0.0021, -0.0067, -0.0113,
     -0.0159]])
SGD_GOLDEN = np.array([
    [0.9999] * 10,
    [0.9989, 0.9979, 0.9969, 0.9959, 0.9949, 0.9939, 0.9929, 0.9919, 0.9909, 0.9899],
    [0.9979, 0.9959, 0.9939, 0.9919, 0.9899, 0.9879, 0.9859, 0.9839, 0.9819, 0.9799],
    [0.9969, 0.9939, 0.9909, 0.9879, 0.9849, 0.9819, 0.9789, 0.9759, 0.9729, 0.9699],
    [0.9959, 0.9919, 0.9879, 0.9839, 0.9799, 0.9759, 0.9719, 0.9679, 0.9639, 0.9599]])

GOLDEN = [
    ("adam_amsgrad", lambda: Adam(amsgrad=True), ADAM_GOLDEN),
    ("adamw", lambda: AdamW(learning_rate=1.0, weight_decay=0.5, epsilon=2),
     ADAMW_GOLDEN),
    ("sgd_nesterov", lambda: SGD(nesterov=True), SGD_GOLDEN),
]


@pytest.mark.parametrize("name,make,golden", GOLDEN, ids=[g[0] for g in GOLDEN])
def test_correctness_with_golden_eager(name, make, golden):
    opt, x = make(), _var(np.ones(10))
    grads = np.arange(0.1, 1.1, 0.1)
    opt.apply_gradients(zip([np.full((10,), 0.01)], [x]))
    for row in golden:
        np.testing.assert_allclose(x.numpy(), row, rtol=5e-4, atol=5e-4)
        opt.apply_gradients(zip([grads], [x]))


@pytest.mark.parametrize("name,make,golden", GOLDEN, ids=[g[0] for g in GOLDEN])
def test_correctness_with_golden_symbolic(name, make, golden):
    opt, x = make(), _var(np.ones(10))
    g = K.placeholder("float32", (10,))
    step = K.Function([g], [], updates=opt.apply_gradients([(g, x)]))
    step(np.full((10,), 0.01, "float32"))
    for row in golden:
        np.testing.assert_allclose(x.numpy(), row, rtol=5e-4, atol=5e-4)
        step(np.arange(0.1, 1.1, 0.1).astype("float32"))


# -- clipping -----------------------------------------------------------------------
@pytest.mark.parametrize("cls", [Adam, AdamW, SGD])
def test_clip_norm_and_value(cls):
    clipped = cls(clipnorm=1)._clip_gradients([np.array([100.0, 100.0])])
    np.testing.assert_allclose(clipped[0], [2**0.5 / 2, 2**0.5 / 2])
    clipped = cls(clipvalue=1)._clip_gradients([np.array([100.0, 100.0])])
    np.testing.assert_allclose(clipped[0], [1.0, 1.0])


def test_global_clip_norm():
    grad = np.array([50.0, 100.0], dtype="float32")
    clipped = SGD(global_clipnorm=1)._clip_gradients([grad])
    np.testing.assert_allclose(clipped[0], grad / np.linalg.norm(grad), rtol=1e-6)


def test_clipping_applies_in_the_eager_step():
    v = _var([0.0, 0.0])
    SGD(learning_rate=1.0, global_clipnorm=1.0).apply_gradients(
        [(np.array([3.0, 4.0]), v)])
    np.testing.assert_allclose(v.numpy(), [-0.6, -0.8], rtol=1e-6)


def test_clip_args():
    assert SGD(learning_rate=1.0, global_clipnorm=0.1).global_clipnorm == 0.1
    with pytest.raises(ValueError, match="Only one of `clipnorm`, `clipvalue` and "
                                         "`global_clipnorm` can"):
        SGD(learning_rate=1.0, clipnorm=0.1, clipvalue=0.1)


# -- iterations, empty gradients ----------------------------------------------------
def test_iterations_counter():
    v, grads = _var([[1.0, 2.0], [3.0, 4.0]]), np.ones((2, 2), "float32")
    opt = Adam(learning_rate=1.0)
    assert opt.iterations.numpy() == 0
    opt.apply_gradients([(grads, v)])
    opt.apply_gradients([(grads, v)])
    assert opt.iterations.numpy() == 2


def test_empty_gradients():
    v = _var([[3.0, 4.0], [5.0, 6.0]])
    with pytest.raises(ValueError, match="No gradients provided for any variable"):
        SGD(learning_rate=1.0).apply_gradients([(None, v)])
    v2 = _var([[3.0, 4.0], [5.0, 6.0]])
    with pytest.warns(UserWarning):
        SGD(learning_rate=1.0).apply_gradients(
            [(None, v), (np.ones((2, 2), "float32"), v2)])
    np.testing.assert_allclose(v.numpy(), [[3.0, 4.0], [5.0, 6.0]])
    np.testing.assert_allclose(v2.numpy(), [[2.0, 3.0], [4.0, 5.0]])


# -- exponential moving average -----------------------------------------------------
def test_sgd_ema_with_overwrite_frequency():
    v, grads = _var([[3.0, 4.0], [5.0, 6.0]]), np.ones((2, 2), "float32")
    opt = SGD(learning_rate=1.0, use_ema=True, ema_momentum=0.9,
              ema_overwrite_frequency=3)
    opt.apply_gradients([(grads, v)])
    np.testing.assert_allclose(v.numpy(), [[2.0, 3.0], [4.0, 5.0]])
    np.testing.assert_allclose(opt._model_variables_moving_average[0].numpy(),
                               [[2.0, 3.0], [4.0, 5.0]])
    opt.apply_gradients([(grads, v)])
    np.testing.assert_allclose(v.numpy(), [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(opt._model_variables_moving_average[0].numpy(),
                               [[1.9, 2.9], [3.9, 4.9]], rtol=1e-6)
    opt.apply_gradients([(grads, v)])  # overwritten with the average
    np.testing.assert_allclose(v.numpy(), [[1.71, 2.71], [3.71, 4.71]], rtol=1e-6)
    np.testing.assert_allclose(opt._model_variables_moving_average[0].numpy(),
                               [[1.71, 2.71], [3.71, 4.71]], rtol=1e-6)


def test_adam_ema_and_finalize():
    opt = Adam(learning_rate=1.0, use_ema=True, ema_momentum=0.9)
    var, grads = _var([1.0, 2.0]), np.array([0.1, 0.2], "float32")
    opt.apply_gradients([(grads, var)])
    v1 = var.numpy()
    np.testing.assert_allclose(opt._model_variables_moving_average[0].numpy(), v1)
    opt.apply_gradients([(grads, var)])
    expected = 0.9 * v1 + 0.1 * var.numpy()
    np.testing.assert_allclose(opt._model_variables_moving_average[0].numpy(),
                               expected, rtol=1e-6)
    opt.finalize_variable_values([var])
    np.testing.assert_allclose(var.numpy(), expected, rtol=1e-6)


def test_adam_ema_overwrite_frequency():
    opt = Adam(learning_rate=1.0, use_ema=True, ema_momentum=0.9,
               ema_overwrite_frequency=2)
    plain = Adam(learning_rate=1.0)
    var, var_plain = _var([1.0, 2.0]), _var([1.0, 2.0])
    grads = np.array([0.1, 0.2], "float32")
    opt.apply_gradients([(grads, var)])
    plain.apply_gradients([(grads, var_plain)])
    v1 = var_plain.numpy()
    np.testing.assert_allclose(var.numpy(), v1)  # not overwritten yet
    opt.apply_gradients([(grads, var)])
    plain.apply_gradients([(grads, var_plain)])
    expected = 0.9 * v1 + 0.1 * var_plain.numpy()
    np.testing.assert_allclose(var.numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(opt._model_variables_moving_average[0].numpy(),
                               expected, rtol=1e-6)


def test_ema_with_model_fit():
    """Keras: fit finalizes the weights to their averages at its end."""
    optimizer = SGD(learning_rate=0.1, use_ema=True, ema_momentum=0.9)
    model = kf.Sequential([kf.layers.Dense(2, kernel_initializer="ones",
                                           use_bias=False, input_shape=(1,))])
    model.compile(loss="mse", optimizer=optimizer)
    model.fit(np.ones((1, 1), "float32"), np.zeros((1, 1), "float32"),
              batch_size=1, epochs=2, verbose=0)
    np.testing.assert_allclose(
        optimizer._model_variables_moving_average[0].numpy(), [[0.891, 0.891]],
        atol=1e-5)
    np.testing.assert_allclose(model.trainable_weights[0].numpy(),
                               [[0.891, 0.891]], atol=1e-5)


def test_ema_config_round_trip_and_checks():
    opt = Adam(use_ema=True, ema_momentum=0.5, ema_overwrite_frequency=4)
    config = opt.get_config()
    assert (config["use_ema"], config["ema_momentum"],
            config["ema_overwrite_frequency"]) == (True, 0.5, 4)
    assert Adam.from_config(config).ema_overwrite_frequency == 4
    with pytest.raises(ValueError, match="`ema_momentum` must be in the range"):
        SGD(use_ema=True, ema_momentum=1.5)
    with pytest.raises(ValueError, match="`ema_overwrite_frequency` must be an "
                                         "integer >= 1"):
        SGD(use_ema=True, ema_overwrite_frequency=0)


@pytest.mark.parametrize("name", ["sgd", "adam", "adamw", "rmsprop", "adagrad",
                                  "adadelta", "ftrl", "proximalgradientdescent",
                                  "proximaladagrad"])
def test_every_optimizer_round_trips_its_ema_config(name):
    opt = kf.optimizers.get(name)
    config = opt.get_config()
    assert config["use_ema"] is False and config["ema_momentum"] == 0.99
    assert type(opt).from_config(config).get_config() == config
