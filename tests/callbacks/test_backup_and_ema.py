"""BackupAndRestore (an interrupted fit rerun ends with the weights of an
uninterrupted one; atomic single-file backups; batch frequency; fallback to
the previous backup) and SwapEMAWeights (validation on the averaged weights,
training unaffected)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import kerasflow as kf
from kerasflow.callbacks import BackupAndRestore, Callback, SwapEMAWeights

RNG = np.random.RandomState(0)
X = RNG.randn(64, 3).astype("float32")
Y = X @ np.array([[1.0], [-2.0], [0.5]], "float32")


def _model(optimizer=None):
    model = kf.Sequential([
        kf.layers.InputLayer(shape=(3,)),
        kf.layers.Dense(4, activation="tanh", kernel_initializer="ones",
                        name="bk_hidden"),
        kf.layers.Dense(1, kernel_initializer="ones", name="bk_out")])
    model.compile(optimizer or kf.optimizers.Adam(0.05), "mse")
    return model


class _Interrupt(Callback):
    def __init__(self, epoch):
        super().__init__()
        self.epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.epoch:
            raise RuntimeError("interrupted")


def _uninterrupted(epochs=6):
    np.random.seed(5)
    model = _model()
    model.fit(X, Y, epochs=epochs, batch_size=16, verbose=0)
    return model


def test_interrupted_fit_resumes_with_identical_final_weights(tmp_path):
    ref = _uninterrupted()
    backup = tmp_path / "backup"
    np.random.seed(5)
    model = _model()
    with pytest.raises(RuntimeError, match="interrupted"):
        model.fit(X, Y, epochs=6, batch_size=16, verbose=0,
                  callbacks=[BackupAndRestore(backup), _Interrupt(epoch=2)])
    assert os.listdir(backup) == ["latest.backup.npz"]
    np.random.seed(123)  # the backup restores the shuffling state itself
    fresh = _model()
    history = fresh.fit(X, Y, epochs=6, batch_size=16, verbose=0,
                        callbacks=[BackupAndRestore(backup)])
    assert len(history.history["loss"]) == 3  # epochs 3, 4, 5
    assert int(fresh.optimizer.iterations.numpy()) == 24
    for a, b in zip(ref.get_weights(), fresh.get_weights()):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(ref.optimizer.get_weights(), fresh.optimizer.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert not backup.exists()  # delete_checkpoint after a completed fit


def test_batch_frequency_and_kept_backup(tmp_path):
    backup = tmp_path / "b"
    model = _model()
    with pytest.raises(RuntimeError):
        model.fit(X, Y, epochs=3, batch_size=16, verbose=0, shuffle=False,
                  callbacks=[BackupAndRestore(backup, save_freq=3,
                                              delete_checkpoint=False),
                             _Interrupt(epoch=1)])
    from kerasflow.utils import checkpoint as ckpt

    arrays, meta = ckpt.load_checkpoint(backup / "latest.backup.npz",
                                        with_metadata=True)
    # 4 batches per epoch, a backup every 3: the last at epoch 1, batch 1.
    assert (meta["epoch"], meta["batch"]) == (1, 1)
    model2 = _model()
    model2.fit(X, Y, epochs=3, batch_size=16, verbose=0, shuffle=False,
               callbacks=[BackupAndRestore(backup, delete_checkpoint=False)])
    assert backup.exists()
    assert int(model2.optimizer.iterations.numpy()) == 6 + 8  # restart of epoch 1


def test_falls_back_to_the_previous_backup(tmp_path):
    backup = tmp_path / "d"
    model = _model()
    with pytest.raises(RuntimeError):
        model.fit(X, Y, epochs=4, batch_size=16, verbose=0,
                  callbacks=[BackupAndRestore(backup, double_checkpoint=True),
                             _Interrupt(epoch=2)])
    assert sorted(os.listdir(backup)) == ["latest.backup.npz",
                                          "latest.backup.npz.bkp"]
    (backup / "latest.backup.npz").write_bytes(b"corrupt")
    model2 = _model()
    history = model2.fit(X, Y, epochs=4, batch_size=16, verbose=0,
                         callbacks=[BackupAndRestore(backup,
                                                     double_checkpoint=True)])
    assert len(history.history["loss"]) == 2  # resumed after epoch 1 (the .bkp)


def test_mismatched_backup_and_bad_arguments(tmp_path):
    backup = tmp_path / "m"
    with pytest.raises(RuntimeError):
        _model().fit(X, Y, epochs=2, verbose=0,
                     callbacks=[BackupAndRestore(backup), _Interrupt(epoch=0)])
    other = kf.Sequential([kf.layers.InputLayer(shape=(3,)),
                           kf.layers.Dense(1, name="bk_other")])
    other.compile("sgd", "mse")
    with pytest.raises(ValueError, match="expects 2|count|weights"):
        other.fit(X, Y, epochs=2, verbose=0, callbacks=[BackupAndRestore(backup)])
    with pytest.raises(ValueError, match="backup_dir"):
        BackupAndRestore("")
    with pytest.raises(ValueError, match="save_freq"):
        BackupAndRestore(tmp_path, save_freq="batch")


def _ema_model():
    model = kf.Sequential([kf.layers.InputLayer(shape=(3,)),
                           kf.layers.Dense(1, name="ema_dense")])
    model.compile(kf.optimizers.SGD(0.1, use_ema=True, ema_momentum=0.5), "mse")
    return model


class _Seen(Callback):
    def __init__(self):
        super().__init__()
        self.at_test, self.averages = [], []

    def on_test_begin(self, logs=None):
        self.at_test.append([w.copy() for w in self.model.get_weights()])


def test_swap_ema_weights_validates_on_the_averages():
    model = _ema_model()
    model.set_weights([np.zeros((3, 1), "float32"), np.zeros(1, "float32")])
    seen = _Seen()

    class Averages(Callback):
        def on_epoch_end(self, epoch, logs=None):
            opt = self.model.optimizer
            seen.averages.append([a.numpy().copy() for a in
                                  opt._model_variables_moving_average])

    history = model.fit(X, Y, epochs=2, batch_size=16, verbose=0, shuffle=False,
                        validation_data=(X, Y),
                        callbacks=[SwapEMAWeights(), seen, Averages()])
    for weights, averages, val_loss in zip(seen.at_test, seen.averages,
                                           history.history["val_loss"]):
        for w, a in zip(weights, averages):  # swapped back before epoch end
            np.testing.assert_allclose(w, a, rtol=1e-6)
        pred = X @ weights[0] + weights[1]
        np.testing.assert_allclose(val_loss, np.mean((pred - Y) ** 2), rtol=1e-5)
    # Training itself is unchanged by the swaps.
    plain = _ema_model()
    plain.set_weights([np.zeros((3, 1), "float32"), np.zeros(1, "float32")])
    plain.fit(X, Y, epochs=2, batch_size=16, verbose=0, shuffle=False,
              validation_data=(X, Y))
    for a, b in zip(plain.get_weights(), model.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_swap_on_epoch_and_errors():
    model = _ema_model()
    at_end = []

    class Record(Callback):
        def on_epoch_end(self, epoch, logs=None):
            at_end.append(self.model.get_weights()[0].copy())

    model.fit(X, Y, epochs=2, batch_size=16, verbose=0,
              callbacks=[SwapEMAWeights(swap_on_epoch=True), Record()])
    averages = model.optimizer._model_variables_moving_average
    np.testing.assert_allclose(at_end[-1], averages[0].numpy(), rtol=1e-6)
    no_ema = kf.Sequential([kf.layers.InputLayer(shape=(3,)),
                            kf.layers.Dense(1, name="ema_none")])
    no_ema.compile("sgd", "mse")
    with pytest.raises(ValueError, match="use_ema=True"):
        no_ema.fit(X, Y, epochs=1, verbose=0, validation_data=(X, Y),
                   callbacks=[SwapEMAWeights()])


def test_backup_writes_on_the_chief_of_the_model_strategy_only(tmp_path):
    """TF's multi-worker guide compiles in ``strategy.scope()`` and calls fit
    outside it: the worker that is not the chief must still not write (or
    delete) the backup, so the callback asks the model's strategy."""
    import json

    from kerasflow.distribute.mirrored.spmd import SpmdStrategy

    conf = {"cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}}
    writes = []
    for index in range(2):
        strategy = SpmdStrategy(tf_config=json.dumps(
            dict(conf, task={"type": "worker", "index": index})))
        with strategy.scope():
            model = kf.Sequential([kf.layers.Dense(1, input_shape=(2,))])
            model.compile(optimizer="sgd", loss="mse")
        cb = kf.callbacks.BackupAndRestore(str(tmp_path / f"b{index}"))
        cb.set_model(model)
        assert model.distribute_strategy is strategy
        writes.append(cb._writes())
    assert writes == [True, False]
