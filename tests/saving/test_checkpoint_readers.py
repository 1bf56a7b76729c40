"""Checkpoints of ``Saver``, the Estimator and ``ModelCheckpoint`` are one format:
the one ``latest_checkpoint`` finds each, and each reader loads the others'.

Names line up by construction: a Keras layer named ``"dense"`` saves
``"dense/kernel"`` and ``"dense/bias"`` (``saving/weight_names.py``); the same
layer built inside a ``model_fn`` gets the same variable names (the Estimator
names its graph's variables stably); a ``Saver`` given ``{name: Variable}``
saves under those keys. Each reader asks only for its own names: ``Saver`` for
its var_list, the Estimator for its trainable variables (others, e.g.
``global_step`` or optimizer slots, start fresh when absent), ``load_weights``
for exactly the model's weights (all-or-nothing), so an Estimator checkpoint,
which also holds ``global_step`` and slots, reaches a Keras model through a
``Saver``.
"""

from __future__ import annotations

import numpy as np

import kerasflow as kf
import kerasflow.compat.v1 as tf
from kerasflow.estimators import Estimator, EstimatorSpec, RunConfig
from kerasflow.utils.checkpoint import latest_checkpoint, load_checkpoint

X = np.random.default_rng(0).normal(size=(64, 3)).astype("float32")
Y = X @ np.array([[1.0, -2.0], [0.5, 0.0], [0.0, 3.0]], "float32")


def _keras_model():
    return kf.Sequential([kf.layers.Dense(2, input_shape=(3,), name="dense")])


def _model_fn(features, labels, mode, params):
    pred = kf.layers.Dense(2, name="dense")(features["x"])
    loss = kf.backend.mean(kf.backend.square(pred - labels))
    op = kf.optimizers.SGD(0.05).minimize(
        loss, global_step=kf.train.get_or_create_global_step())
    return EstimatorSpec(mode, loss=loss, train_op=op, predictions=pred)


def _input_fn():
    return {"x": X}, Y


def _saver_vars():
    return {"dense/kernel": tf.Variable(np.zeros((3, 2), "float32")),
            "dense/bias": tf.Variable(np.zeros(2, "float32"))}


def test_saver_estimator_and_model_checkpoint_read_each_other(tmp_path):
    # 1. ModelCheckpoint(save_weights_only) -> latest_checkpoint -> Saver.
    model = _keras_model()
    model.compile(optimizer="sgd", loss="mse")
    cb = kf.callbacks.ModelCheckpoint(str(tmp_path / "keras" / "weights-{epoch}"),
                                      save_weights_only=True)
    model.fit(X, Y, epochs=2, batch_size=16, verbose=0, callbacks=[cb])
    keras_ckpt = latest_checkpoint(tmp_path / "keras")
    assert keras_ckpt == str(tmp_path / "keras" / "weights-2")
    kernel, bias = model.get_weights()
    v = _saver_vars()
    with tf.Session() as sess:
        tf.train.Saver(v).restore(sess, keras_ckpt)
    np.testing.assert_array_equal(v["dense/kernel"].numpy(), kernel)
    np.testing.assert_array_equal(v["dense/bias"].numpy(), bias)

    # 2. ... -> the Estimator restores the Keras weights (fresh global_step).
    est = Estimator(_model_fn, model_dir=str(tmp_path / "keras"),
                    config=RunConfig(save_checkpoints_steps=1,
                                     keep_checkpoint_max=10))
    np.testing.assert_array_equal(est.get_variable_value("dense/kernel"), kernel)
    est.train(_input_fn, steps=1)
    assert latest_checkpoint(tmp_path / "keras") == str(
        tmp_path / "keras" / "model.ckpt-1")

    # 3. Saver -> latest_checkpoint -> Estimator (resumes at the saved step).
    v = _saver_vars()
    v["global_step"] = tf.Variable(np.int64(7))
    v["dense/kernel"].assign(kernel * 2)
    with tf.Session() as sess:
        saver_ckpt = tf.train.Saver(v).save(sess, str(tmp_path / "tf" / "model.ckpt"),
                                            global_step=7)
    assert tf.train.latest_checkpoint(str(tmp_path / "tf")) == saver_ckpt
    est = Estimator(_model_fn, model_dir=str(tmp_path / "tf"),
                    config=RunConfig(save_checkpoints_steps=1))
    np.testing.assert_array_equal(est.get_variable_value("dense/kernel"), kernel * 2)
    est.train(_input_fn, steps=1)
    est_ckpt = latest_checkpoint(tmp_path / "tf")
    assert est_ckpt == str(tmp_path / "tf" / "model.ckpt-8")

    # 4. Estimator -> Saver -> the same values load_weights takes from a Saver file.
    v = _saver_vars()
    with tf.Session() as sess:
        tf.train.Saver(v).restore(sess, est_ckpt)
        np.testing.assert_array_equal(v["dense/kernel"].numpy(),
                                      load_checkpoint(est_ckpt)["dense/kernel"])
        path = tf.train.Saver(v).save(sess, str(tmp_path / "w" / "only-weights"))
    fresh = _keras_model()
    fresh.load_weights(latest_checkpoint(tmp_path / "w"))
    assert path == latest_checkpoint(tmp_path / "w")
    np.testing.assert_array_equal(fresh.get_weights()[0], v["dense/kernel"].numpy())
    np.testing.assert_array_equal(fresh.get_weights()[1], v["dense/bias"].numpy())


def test_a_restarted_saver_recovers_its_list_from_the_index(tmp_path):
    v = _saver_vars()
    prefix = str(tmp_path / "model.ckpt")
    with tf.Session() as sess:
        for step in (1, 2, 3):
            tf.train.Saver(v, max_to_keep=5).save(sess, prefix, global_step=step)
        # A new process's Saver knows nothing but the folder's index.
        restarted = tf.train.Saver(v, max_to_keep=2)
        restarted.save(sess, prefix, global_step=4)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "checkpoint", "model.ckpt-3", "model.ckpt-4"]
    assert restarted.last_checkpoints == [prefix + "-3", prefix + "-4"]
