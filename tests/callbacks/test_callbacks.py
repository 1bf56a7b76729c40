"""Tests of kerasflow.callbacks: hooks driven directly, then through real fits."""

from __future__ import annotations

import csv
import math
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import summary
from kerasflow.callbacks import (
    Callback,
    CallbackList,
    CSVLogger,
    EarlyStopping,
    History,
    LambdaCallback,
    LearningRateScheduler,
    ModelCheckpoint,
    ProgbarLogger,
    ReduceLROnPlateau,
    TensorBoard,
    TerminateOnNaN,
)
from kerasflow.callbacks.progbar_logger import format_logs

# -- a stand-in model with exactly the attributes callbacks may use --------------------


class _Optimizer:
    def __init__(self, learning_rate=0.1):
        self._lr = learning_rate
        self.uses_schedule = False

    @property
    def learning_rate(self):
        return self._lr

    @learning_rate.setter
    def learning_rate(self, value):
        if self.uses_schedule:
            raise TypeError("learning_rate is a LearningRateSchedule")
        self._lr = float(value)


class FakeModel:
    """get/set_weights, stop_training, optimizer.learning_rate, save(_weights)."""

    def __init__(self, learning_rate=0.1):
        self.stop_training = False
        self.optimizer = _Optimizer(learning_rate)
        self.weights = [np.zeros(2)]
        self.saved = []

    def get_weights(self):
        return [w.copy() for w in self.weights]

    def set_weights(self, weights):
        self.weights = [np.array(w) for w in weights]

    def save(self, filepath):
        with open(filepath, "w") as f:
            f.write("model")
        self.saved.append(("model", os.path.basename(filepath)))

    def save_weights(self, filepath):
        with open(filepath, "w") as f:
            f.write("weights")
        self.saved.append(("weights", os.path.basename(filepath)))


def fake_fit(callbacks, epoch_logs, model=None, steps=2, batch_size=4, verbose=0,
             batch_loss=None):
    """Drives callbacks like Keras' fit; epoch e's weights are [full(2, e)].

    Returns (model, number of epochs run).
    """
    model = model or FakeModel()
    cbs = CallbackList(callbacks, add_history=True, add_progbar=verbose != 0,
                       model=model, verbose=verbose, epochs=len(epoch_logs),
                       steps=steps, samples=steps * batch_size, batch_size=batch_size)
    model.stop_training = False
    cbs.on_train_begin()
    logs, epochs_run = None, 0
    for epoch, epoch_log in enumerate(epoch_logs):
        cbs.on_epoch_begin(epoch)
        for batch in range(steps):
            cbs.on_train_batch_begin(batch)
            loss = batch_loss(epoch, batch) if batch_loss else epoch_log["loss"]
            cbs.on_train_batch_end(batch, {"loss": loss})
            if model.stop_training:
                break
        model.weights = [np.full(2, float(epoch))]
        val = {k[4:]: v for k, v in epoch_log.items() if k.startswith("val_")}
        if val:
            cbs.on_test_begin()
            cbs.on_test_batch_begin(0)
            cbs.on_test_batch_end(0, val)
            cbs.on_test_end(val)
        logs = dict(epoch_log)
        cbs.on_epoch_end(epoch, logs)
        epochs_run += 1
        if model.stop_training:
            break
    cbs.on_train_end(logs)
    return model, epochs_run


def val_losses(*values):
    return [{"loss": 1.0, "val_loss": v} for v in values]


class Recorder(Callback):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __getattribute__(self, name):
        attr = object.__getattribute__(self, name)
        if name.startswith("on_"):
            calls = object.__getattribute__(self, "calls")
            return lambda *args: calls.append((name, *args[:1]))
        return attr


# -- Callback, CallbackList, History ---------------------------------------------------


def test_callback_list_adds_history_and_progbar_once():
    cbs = CallbackList([History()], add_history=True, add_progbar=True)
    kinds = [type(cb).__name__ for cb in cbs]
    assert kinds == ["History", "ProgbarLogger"]
    assert len(CallbackList(add_history=False, add_progbar=False)) == 0


def test_callback_list_sets_model_params_and_model_history():
    model, early = FakeModel(), EarlyStopping()
    cbs = CallbackList([early], add_history=True, model=model, verbose=0, epochs=3,
                       steps=5)
    assert early.model is model
    assert early.params == {"verbose": 0, "epochs": 3, "steps": 5}
    assert model.history is cbs.callbacks[-1]
    assert isinstance(model.history, History)


def test_callback_list_forwards_every_hook_in_order():
    rec = Recorder()
    cbs = CallbackList([rec])
    cbs.on_train_begin()
    cbs.on_epoch_begin(0)
    cbs.on_train_batch_begin(0)
    cbs.on_train_batch_end(0, {"loss": 1.0})
    cbs.on_test_begin()
    cbs.on_test_batch_begin(0)
    cbs.on_test_batch_end(0)
    cbs.on_test_end()
    cbs.on_epoch_end(0, {"loss": 1.0})
    cbs.on_train_end()
    cbs.on_predict_begin()
    cbs.on_predict_batch_begin(0)
    cbs.on_predict_batch_end(0)
    cbs.on_predict_end()
    cbs.on_batch_begin(3)
    cbs.on_batch_end(3)
    assert [c[0] for c in rec.calls] == [
        "on_train_begin", "on_epoch_begin", "on_train_batch_begin",
        "on_train_batch_end", "on_test_begin", "on_test_batch_begin",
        "on_test_batch_end", "on_test_end", "on_epoch_end", "on_train_end",
        "on_predict_begin", "on_predict_batch_begin", "on_predict_batch_end",
        "on_predict_end", "on_batch_begin", "on_batch_end",
    ]
    assert rec.calls[3] == ("on_train_batch_end", 0)


def test_callback_list_rejects_non_callbacks():
    match = "Received: callback=<built-in function print> of type"
    with pytest.raises(TypeError, match=match):
        CallbackList([print])


def test_train_batch_hooks_call_keras2_aliases():
    seen = []

    class Old(Callback):
        def on_batch_end(self, batch, logs=None):
            seen.append((batch, logs["loss"]))

    Old().on_train_batch_end(4, {"loss": 0.5})
    assert seen == [(4, 0.5)]


def test_history_records_epoch_logs():
    model, _ = fake_fit([], [{"loss": 0.5, "val_loss": 0.75},
                             {"loss": 0.25, "val_loss": 0.5}])
    assert model.history.history == {"loss": [0.5, 0.25], "val_loss": [0.75, 0.5]}
    assert model.history.epoch == [0, 1]


# -- EarlyStopping ---------------------------------------------------------------------


def test_early_stopping_stops_after_patience_epochs_without_improvement():
    # Best at epoch 1; epochs 2 and 3 do not improve: patience 2 stops at 3.
    stop = EarlyStopping(patience=2)
    model, run = fake_fit([stop], val_losses(1.0, 0.5, 0.6, 0.7, 0.8, 0.9))
    assert run == 4
    assert stop.stopped_epoch == 3
    assert stop.best == 0.5 and stop.best_epoch == 1
    assert model.weights[0].tolist() == [3.0, 3.0]  # not restored


def test_early_stopping_restores_best_weights():
    stop = EarlyStopping(patience=1, restore_best_weights=True)
    model, run = fake_fit([stop], val_losses(1.0, 0.5, 0.7, 0.2))
    assert run == 3
    assert model.weights[0].tolist() == [1.0, 1.0]


def test_early_stopping_restores_best_weights_without_stopping():
    # Keras 3: the best weights come back even when training runs to the end.
    stop = EarlyStopping(patience=5, restore_best_weights=True)
    model, run = fake_fit([stop], val_losses(1.0, 0.25, 0.5))
    assert run == 3 and stop.stopped_epoch == 0
    assert model.weights[0].tolist() == [1.0, 1.0]


def test_early_stopping_min_delta_mode_max_and_start_from_epoch():
    logs = [{"loss": 1.0, "accuracy": a} for a in (0.5, 0.52, 0.53, 0.9)]
    stop = EarlyStopping(monitor="accuracy", min_delta=0.05, patience=1)
    _, run = fake_fit([stop], logs)
    assert run == 2 and stop.monitor_op is kf.ops.greater
    # Warm-up epochs are not monitored.
    stop = EarlyStopping(monitor="accuracy", min_delta=0.05, patience=1,
                         start_from_epoch=2)
    _, run = fake_fit([stop], logs)
    assert run == 4 and stop.best == 0.9


def test_early_stopping_baseline_must_be_beaten():
    # Improvements that miss the baseline do not reset the wait (Keras 3): it
    # reaches 3 at epoch 2, the first epoch without improvement.
    logs = val_losses(0.5, 0.4, 0.45, 0.3, 0.05)
    stop = EarlyStopping(patience=2, baseline=0.1)
    _, run = fake_fit([stop], logs)
    assert run == 3 and stop.stopped_epoch == 2 and stop.wait == 3
    _, run = fake_fit([EarlyStopping(patience=2)], logs)
    assert run == 5


def test_early_stopping_auto_mode_reads_metric_direction_from_model():
    class Metric:
        name, _direction = "top_k", "up"

    model = FakeModel()
    model.metrics = [Metric()]
    stop = EarlyStopping(monitor="val_top_k", patience=1)
    _, run = fake_fit([stop], [{"loss": 1.0, "val_top_k": v} for v in (1, 2, 3)],
                      model=model)
    assert run == 3 and stop.best == 3


def test_early_stopping_warns_on_missing_monitor_and_unknown_mode():
    with pytest.warns(UserWarning, match="unknown"):
        stop = EarlyStopping(mode="lowest")
    assert stop.mode == "auto"
    with pytest.warns(UserWarning, match="`val_loss` which is not available"):
        _, run = fake_fit([stop], [{"loss": 1.0}] * 2)
    assert run == 2


# -- ReduceLROnPlateau -----------------------------------------------------------------


def test_reduce_lr_on_plateau_halves_lr_after_patience():
    reduce = ReduceLROnPlateau(factor=0.5, patience=1)
    model, _ = fake_fit([reduce], val_losses(1.0, 1.0, 1.0, 0.5))
    # The logged rate is the one used during the epoch.
    assert model.history.history["learning_rate"] == [0.1, 0.1, 0.05, 0.025]
    assert model.optimizer.learning_rate == 0.025


def test_reduce_lr_on_plateau_cooldown_and_min_lr():
    reduce = ReduceLROnPlateau(factor=0.5, patience=1, cooldown=2, min_lr=0.03)
    model, _ = fake_fit([reduce], val_losses(1.0, 1.0, 1.0, 1.0, 1.0, 1.0))
    # 0.1 -> 0.05 at the end of epoch 1; cooldown at 2 (the counter drops to 1,
    # then 0 at epoch 3, as in Keras); 0.05 -> 0.03, the floor, at 3.
    assert model.history.history["learning_rate"] == [0.1, 0.1, 0.05, 0.05, 0.03,
                                                      0.03]


def test_reduce_lr_on_plateau_errors():
    with pytest.raises(ValueError, match="factor >= 1.0. Received: factor=2"):
        ReduceLROnPlateau(factor=2)
    model = FakeModel()
    model.optimizer.uses_schedule = True
    with pytest.raises(TypeError, match="learning-rate schedule"):
        fake_fit([ReduceLROnPlateau(patience=0)], val_losses(1.0, 1.0), model=model)


# -- LearningRateScheduler -------------------------------------------------------------


def test_learning_rate_scheduler_sets_lr_at_epoch_begin_and_logs_it():
    seen = []
    sched = LearningRateScheduler(lambda epoch, lr: lr if epoch == 0 else lr / 2)
    probe = LambdaCallback(on_train_batch_begin=lambda b, logs: seen.append(
        probe.model.optimizer.learning_rate))
    model, _ = fake_fit([sched, probe], [{"loss": 1.0}] * 3, steps=1)
    assert seen == [0.1, 0.05, 0.025]
    assert model.history.history["learning_rate"] == [0.1, 0.05, 0.025]


def test_learning_rate_scheduler_accepts_one_argument_schedule():
    model, _ = fake_fit([LearningRateScheduler(lambda epoch: 0.5 ** epoch)],
                        [{"loss": 1.0}] * 3)
    assert model.history.history["learning_rate"] == [1.0, 0.5, 0.25]


def test_learning_rate_scheduler_errors():
    with pytest.raises(TypeError, match="should be a float. Received: 'fast'"):
        fake_fit([LearningRateScheduler(lambda e, lr: "fast")], [{"loss": 1.0}])
    model = FakeModel()
    model.optimizer.uses_schedule = True
    with pytest.raises(TypeError, match="LearningRateScheduler cannot set"):
        fake_fit([LearningRateScheduler(lambda e, lr: 0.5)], [{"loss": 1.0}],
                 model=model)


# -- ModelCheckpoint -------------------------------------------------------------------


def test_model_checkpoint_formats_filepath_every_epoch(tmp_path):
    ckpt = ModelCheckpoint(tmp_path / "run" / "ckpt-{epoch:02d}-{val_loss:.2f}.kf")
    model, _ = fake_fit([ckpt], val_losses(0.5, 0.25))
    assert sorted(os.listdir(tmp_path / "run")) == ["ckpt-01-0.50.kf",
                                                     "ckpt-02-0.25.kf"]
    assert model.saved[0] == ("model", "ckpt-01-0.50.kf")


def test_model_checkpoint_save_best_only_saves_on_improvement(tmp_path):
    ckpt = ModelCheckpoint(str(tmp_path / "e{epoch}.kf"), save_best_only=True,
                           save_weights_only=True)
    model, _ = fake_fit([ckpt], val_losses(0.5, 0.75, 0.25, 0.25))
    assert model.saved == [("weights", "e1.kf"), ("weights", "e3.kf")]
    assert ckpt.best == 0.25


def test_model_checkpoint_auto_mode_maximises_accuracy(tmp_path):
    ckpt = ModelCheckpoint(str(tmp_path / "e{epoch}.kf"), monitor="val_accuracy",
                           save_best_only=True)
    logs = [{"loss": 1.0, "val_accuracy": a} for a in (0.5, 0.25, 0.75)]
    model, _ = fake_fit([ckpt], logs)
    assert [name for _, name in model.saved] == ["e1.kf", "e3.kf"]


def test_model_checkpoint_save_freq_in_batches(tmp_path):
    ckpt = ModelCheckpoint(str(tmp_path / "e{epoch}-b{batch}.kf"), save_freq=3)
    model, _ = fake_fit([ckpt], [{"loss": 1.0}] * 2, steps=4)
    # 8 batches over 2 epochs: saves after global batches 3 and 6.
    assert [name for _, name in model.saved] == ["e1-b3.kf", "e2-b2.kf"]


def test_model_checkpoint_missing_monitor_warns_and_skips(tmp_path):
    ckpt = ModelCheckpoint(str(tmp_path / "m.kf"), save_best_only=True)
    with pytest.warns(UserWarning,
                      match="ModelCheckpoint is conditioned on metric `val_loss`"):
        model, _ = fake_fit([ckpt], [{"loss": 1.0}])
    assert model.saved == []


def test_model_checkpoint_errors(tmp_path):
    with pytest.raises(ValueError, match="Received: save_freq='batch'"):
        ModelCheckpoint("m.kf", save_freq="batch")
    ckpt = ModelCheckpoint(str(tmp_path / "{val_acc}.kf"))
    with pytest.raises(KeyError, match="Failed to format"):
        fake_fit([ckpt], val_losses(0.5))


# -- CSVLogger -------------------------------------------------------------------------


def test_csv_logger_writes_header_and_rows(tmp_path):
    path = tmp_path / "log.csv"
    logs = [{"val_loss": 0.5, "loss": 0.75, "accuracy": 0.25},
            {"val_loss": 0.25, "loss": 0.5, "accuracy": 0.5}]
    fake_fit([CSVLogger(path)], logs)
    assert path.read_text() == (
        "epoch,accuracy,loss,val_loss\n0,0.25,0.75,0.5\n1,0.5,0.5,0.25\n"
    )


def test_csv_logger_append_separator_and_missing_val_columns(tmp_path):
    path = tmp_path / "log.tsv"
    fake_fit([CSVLogger(path, separator="\t")], [{"loss": 0.5}])
    fake_fit([CSVLogger(path, separator="\t", append=True)], [{"loss": 0.25}])
    rows = list(csv.reader(path.open(), delimiter="\t"))
    # Like Keras, a first epoch without val_ keys still gets val_ columns.
    assert rows == [["epoch", "loss", "val_loss"], ["0", "0.5", "NA"],
                    ["0", "0.25", "NA"]]


# -- TerminateOnNaN --------------------------------------------------------------------


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_terminate_on_nan_stops_at_the_bad_batch(bad, capsys):
    batches = []
    probe = LambdaCallback(on_train_batch_end=lambda b, logs: batches.append(b))
    loss = lambda epoch, batch: bad if batch == 2 else 1.0  # noqa: E731
    model, run = fake_fit([TerminateOnNaN(), probe], [{"loss": 1.0}] * 3, steps=5,
                          batch_loss=loss)
    assert run == 1 and batches == [0, 1, 2] and model.stop_training
    assert "Batch 2: Invalid loss, terminating training" in capsys.readouterr().out


# -- LambdaCallback --------------------------------------------------------------------


def test_lambda_callback_calls_given_functions_only():
    calls = []
    cb = LambdaCallback(
        on_train_begin=lambda logs: calls.append("train_begin"),
        on_epoch_end=lambda epoch, logs: calls.append(("epoch_end", epoch,
                                                        logs["loss"])),
        on_test_end=lambda logs: calls.append("test_end"),
    )
    fake_fit([cb], [{"loss": 0.5, "val_loss": 0.5}, {"loss": 0.25}])
    assert calls == ["train_begin", "test_end", ("epoch_end", 0, 0.5),
                     ("epoch_end", 1, 0.25)]


# -- TensorBoard -----------------------------------------------------------------------


def read_scalars(folder):
    """{tag: [(step, value)]} of the one event file in folder (CRC-checked)."""
    assert len([f for f in os.listdir(folder) if "tfevents" in f]) == 1
    return summary.read_scalars(folder)


def test_tensorboard_writes_train_and_validation_scalars(tmp_path):
    logs = [{"loss": 0.5, "accuracy": 0.25, "val_loss": 0.75},
            {"loss": 0.25, "accuracy": 0.5, "val_loss": 0.5}]
    fake_fit([TensorBoard(tmp_path / "tb")], logs)
    train = read_scalars(tmp_path / "tb" / "train")
    assert train == {
        "epoch_loss": [(0, 0.5), (1, 0.25)],
        "epoch_accuracy": [(0, 0.25), (1, 0.5)],
        "epoch_learning_rate": [(0, pytest.approx(0.1)), (1, pytest.approx(0.1))],
    }
    assert read_scalars(tmp_path / "tb" / "validation") == {
        "epoch_loss": [(0, 0.75), (1, 0.5)],
    }


def test_tensorboard_batch_scalars_every_update_freq(tmp_path):
    loss = lambda epoch, batch: 0.5 * epoch + 0.125 * batch  # noqa: E731
    fake_fit([TensorBoard(str(tmp_path), update_freq=2)], [{"loss": 1.0}] * 2,
             steps=3, batch_loss=loss)
    batch = read_scalars(tmp_path / "train")["batch_loss"]
    assert batch == [(2, 0.125), (4, 0.5), (6, 0.75)]
    with pytest.raises(ValueError, match="Received: update_freq=0"):
        TensorBoard(update_freq=0)


def test_tensorboard_takes_keras_arguments_and_writes_weight_histograms(tmp_path):
    """keras.io's guides: ``TensorBoard(histogram_freq=1, update_freq=...,
    profile_batch=..., embeddings_freq=...)``; histograms every N epochs."""
    kf.utils.set_random_seed(0)
    model = kf.Sequential([kf.Input((2,)), kf.layers.Dense(3, name="dense")])
    model.compile("sgd", "mse")
    tb = TensorBoard(tmp_path, histogram_freq=2, update_freq="epoch",
                     profile_batch=(2, 4), embeddings_freq=1, write_graph=True)
    model.fit(np.ones((4, 2)), np.ones((4, 3)), epochs=3, verbose=0, callbacks=[tb])
    steps = {}
    for event in summary.read_events(tmp_path / "train"):
        for value in event.summary.value:
            if value.tag.endswith("/histogram"):
                steps.setdefault(value.tag, []).append(event.step)
                assert value.histo.num == {"dense/kernel/histogram": 6,
                                           "dense/bias/histogram": 3}[value.tag]
    assert steps == {"dense/kernel/histogram": [0, 2],
                     "dense/bias/histogram": [0, 2]}
    with pytest.raises(ValueError, match="Received: histogram_freq=-1"):
        TensorBoard(histogram_freq=-1)


def test_import_does_not_load_tensorboardx():
    code = "import sys, kerasflow.callbacks; print('tensorboardX' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "False"


# -- ProgbarLogger ---------------------------------------------------------------------


def test_format_logs():
    logs = {"loss": 0.30114, "accuracy": 1, "lr": 1e-5, "size": 32, "w": [1.0]}
    assert format_logs(logs) == "loss: 0.3011 - accuracy: 1.0000 - lr: 1.0000e-05"


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_progbar_prints_on_a_terminal_of_0_columns():
    """``script -qc`` and some CI consoles report 0 columns and 0 lines (as a
    fresh pty does): fit(verbose=1) and evaluate still draw their bars."""
    code = ("import numpy as np, kerasflow as kf\n"
            "m = kf.Sequential([kf.Input((2,)), kf.layers.Dense(1)])\n"
            "m.compile('sgd', 'mse')\n"
            "m.fit(np.ones((8, 2)), np.ones((8, 1)), batch_size=4, verbose=1)\n"
            "m.evaluate(np.ones((8, 2)), np.ones((8, 1)), batch_size=4, verbose=1)\n")
    master, slave = os.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=slave, env=env,
                            stderr=subprocess.PIPE)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.wait(timeout=120) == 0, proc.stderr.read()
    text = out.decode(errors="replace")
    assert "Epoch 1/1" in text and "2/2" in text and "loss: " in text
    assert "Evaluate" in text


def test_progbar_verbose_2_prints_one_line_per_epoch(capsys):
    logs = [{"loss": 0.5, "val_loss": 0.25}, {"loss": 0.25, "val_loss": 0.125}]
    fake_fit([], logs, verbose=2)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert re.fullmatch(r"Epoch 1/2 - \d+\.\ds - loss: 0\.5000 - val_loss: 0\.2500",
                        lines[0])
    assert lines[1].startswith("Epoch 2/2 - ")
    assert lines[1].endswith("loss: 0.2500 - val_loss: 0.1250")


def test_progbar_verbose_1_draws_a_tqdm_bar_per_epoch(capsys):
    logs = [{"loss": 0.5, "val_loss": 0.25}, {"loss": 0.25, "val_loss": 0.125}]
    fake_fit([], logs, verbose=1, steps=3)
    out = capsys.readouterr().out
    for epoch, final in (("Epoch 1/2", "val_loss: 0.2500"),
                         ("Epoch 2/2", "val_loss: 0.1250")):
        line = [s for s in re.split(r"[\r\n]", out) if s.startswith(epoch)][-1]
        assert "3/3" in line and "batch" in line
        assert final in line and "samples/s" in line


def test_progbar_verbose_0_prints_nothing(capsys):
    fake_fit([ProgbarLogger()], [{"loss": 0.5}] * 2, verbose=0)
    assert capsys.readouterr().out == ""


def test_progbar_standalone_evaluate_prints_one_line(capsys):
    cbs = CallbackList(add_progbar=True, verbose=2, steps=2)
    cbs.on_test_begin()
    cbs.on_test_batch_end(0, {"loss": 1.0})
    cbs.on_test_batch_end(1, {"loss": 0.75})
    cbs.on_test_end({"loss": 0.75})
    assert re.fullmatch(r"Evaluate - \d+\.\ds - loss: 0\.7500\n",
                        capsys.readouterr().out)


def test_progbar_batch_cost_is_microseconds(capsys):
    bar = ProgbarLogger()
    bar.set_params({"verbose": 1, "epochs": 1, "steps": 50_000, "batch_size": 8})
    bar.on_train_begin()
    bar.on_epoch_begin(0)
    logs = {"loss": 0.5, "accuracy": 0.5}
    start = time.perf_counter()
    for batch in range(50_000):
        bar.on_train_batch_end(batch, logs)
    per_batch = (time.perf_counter() - start) / 50_000
    bar.on_epoch_end(0, logs)
    assert per_batch < 20e-6
    assert "50000/50000" in capsys.readouterr().out


# -- integration: the same callbacks through a real kerasflow fit ----------------------


def real_model(learning_rate=0.1):
    """Dense(1) on y = 2x + 1, zero-initialised: runs are deterministic."""
    import kerasflow as kf

    if not hasattr(kf, "Sequential"):
        pytest.skip("kerasflow.Sequential is not available")
    model = kf.Sequential([kf.layers.Dense(1, input_shape=(1,),
                                           kernel_initializer="zeros")])
    model.compile(optimizer="sgd", loss="mse")
    model.optimizer.learning_rate = learning_rate
    return model


def line_data():
    x = np.linspace(-2.0, 2.0, 64, dtype="float32").reshape(-1, 1)
    return x, 2.0 * x + 1.0


def real_fit(model, callbacks, epochs, verbose=0):
    x, y = line_data()
    return model.fit(x, y, epochs=epochs, batch_size=16, shuffle=False,
                     validation_data=(x[::2], y[::2]), callbacks=callbacks,
                     verbose=verbose)


def diverge_after(epoch):
    """A schedule: a converging rate, then from ``epoch`` on a diverging one."""
    return LearningRateScheduler(lambda e, lr: 0.05 if e < epoch else 1.5)


def test_fit_early_stopping_on_a_plateau():
    model = real_model(learning_rate=0.0)  # nothing changes: a flat val_loss
    stop = EarlyStopping(patience=2)
    history = real_fit(model, [stop], epochs=10)
    assert len(history.history["loss"]) == 3
    assert stop.stopped_epoch == 2 and stop.best_epoch == 0


def test_fit_early_stopping_restores_best_weights():
    weights = []
    record = LambdaCallback(on_epoch_end=lambda e, logs: weights.append(
        record.model.get_weights()))
    stop = EarlyStopping(patience=1, restore_best_weights=True)
    model = real_model()
    history = real_fit(model, [diverge_after(3), record, stop], epochs=10)
    val = history.history["val_loss"]
    assert stop.best_epoch == 2 and stop.stopped_epoch == 3 and len(val) == 4
    assert val[3] > val[2]
    for restored, best in zip(model.get_weights(), weights[2], strict=True):
        np.testing.assert_array_equal(restored, best)
    assert not np.allclose(model.get_weights()[0], weights[3][0])


def test_fit_reduce_lr_on_plateau_reduces_lr():
    # A min_delta no epoch can beat makes every epoch after the first a plateau.
    reduce = ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1,
                               min_delta=100.0)
    model = real_model(learning_rate=0.01)
    history = real_fit(model, [reduce], epochs=3)
    assert history.history["learning_rate"] == pytest.approx([0.01, 0.01, 0.005])
    assert model.optimizer.learning_rate == pytest.approx(0.0025)


def test_fit_lr_callbacks_refuse_an_optimizer_with_a_schedule():
    import kerasflow as kf

    model = real_model()
    schedule = kf.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)
    model.compile(optimizer=kf.optimizers.SGD(learning_rate=schedule), loss="mse")
    with pytest.raises(TypeError, match="LearningRateScheduler cannot set"):
        real_fit(model, [LearningRateScheduler(lambda e, lr: 0.01)], epochs=1)


def test_fit_model_checkpoint_save_best_only(tmp_path):
    import kerasflow as kf

    ckpt = ModelCheckpoint(str(tmp_path / "ckpt-{epoch:02d}.kf"),
                           save_best_only=True)
    model = real_model()
    history = real_fit(model, [diverge_after(3), ckpt], epochs=5)
    val = history.history["val_loss"]
    best = [e for e in range(5) if val[e] < min(val[:e], default=np.inf)]
    assert best[-1] == 2  # epochs 3 and 4 diverge
    assert sorted(os.listdir(tmp_path)) == [f"ckpt-{e + 1:02d}.kf" for e in best]
    # The last file holds the best model: it scores the best val_loss.
    restored = kf.models.load_model(str(tmp_path / "ckpt-03.kf"))
    x, y = line_data()
    assert restored.evaluate(x[::2], y[::2], verbose=0) == pytest.approx(
        val[2], rel=1e-5)


def test_fit_csv_logger(tmp_path):
    path = tmp_path / "log.csv"
    history = real_fit(real_model(), [CSVLogger(path)], epochs=2)
    rows = list(csv.reader(path.open()))
    assert rows[0] == ["epoch", "loss", "val_loss"]
    assert [row[0] for row in rows[1:]] == ["0", "1"]
    assert [float(row[1]) for row in rows[1:]] == history.history["loss"]
    assert [float(row[2]) for row in rows[1:]] == history.history["val_loss"]


def test_fit_terminate_on_nan_with_a_huge_learning_rate():
    losses = []
    probe = LambdaCallback(on_train_batch_end=lambda b, logs: losses.append(
        logs["loss"]))
    model = real_model(learning_rate=1e30)
    with np.errstate(all="ignore"):  # the overflow is the point of the test
        history = real_fit(model, [TerminateOnNaN(), probe], epochs=5)
    assert model.stop_training and len(history.history["loss"]) == 1
    assert not math.isfinite(losses[-1])
    assert all(math.isfinite(loss) for loss in losses[:-1])
    assert len(losses) < 4 * 5


def test_fit_tensorboard_events_match_history(tmp_path):
    history = real_fit(real_model(), [TensorBoard(tmp_path)], epochs=3)
    train = read_scalars(tmp_path / "train")
    val = read_scalars(tmp_path / "validation")
    assert [s for s, _ in train["epoch_loss"]] == [0, 1, 2]
    assert [v for _, v in train["epoch_loss"]] == pytest.approx(
        history.history["loss"], rel=1e-6)
    assert [v for _, v in val["epoch_loss"]] == pytest.approx(
        history.history["val_loss"], rel=1e-6)
    assert [v for _, v in train["epoch_learning_rate"]] == pytest.approx([0.1] * 3)


def test_fit_verbose_2_prints_one_line_per_epoch(capsys):
    real_fit(real_model(), [], epochs=3, verbose=2)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    for epoch, line in enumerate(lines, 1):
        assert line.startswith(f"Epoch {epoch}/3 - ")
        assert "loss: " in line and "val_loss: " in line


def test_fit_verbose_1_draws_bars_and_verbose_0_is_silent(capsys):
    real_fit(real_model(), [], epochs=2, verbose=1)
    out = capsys.readouterr().out
    finals = [s for s in re.split(r"[\r\n]", out) if "4/4" in s]
    assert any(s.startswith("Epoch 1/2") for s in finals)
    assert any(s.startswith("Epoch 2/2") and "val_loss: " in s and "samples/s" in s
               for s in finals)
    real_fit(real_model(), [], epochs=2, verbose=0)
    assert capsys.readouterr().out == ""


def test_evaluate_with_progbar_prints_one_line(capsys):
    model = real_model()
    x, y = line_data()
    model.evaluate(x, y, batch_size=16, verbose=2, callbacks=[ProgbarLogger()])
    assert re.fullmatch(r"Evaluate - \d+\.\ds - loss: \d+\.\d{4}\n",
                        capsys.readouterr().out)


# -- issue 19, silent results 3: Keras 3's monitor_op and a duck-typed model ----------
def test_early_stopping_monitor_op_is_keras_ops():
    """Keras 3 exposes ``ops.less`` / ``ops.greater`` as ``monitor_op``."""
    import kerasflow as kf

    stop = EarlyStopping(monitor="val_loss")
    stop._set_monitor_op()
    assert stop.monitor_op is kf.ops.less
    assert stop._is_improvement(0.5, 0.6) and not stop._is_improvement(0.6, 0.5)
    stop = EarlyStopping(monitor="val_accuracy", min_delta=0.1)
    stop._set_monitor_op()
    assert stop.monitor_op is kf.ops.greater
    assert not stop._is_improvement(0.65, 0.6) and stop._is_improvement(0.75, 0.6)


class _TokenModel:
    """Keras' DummyModel (callbacks/early_stopping_test.py): weights are an int."""

    def __init__(self):
        self.stop_training, self.weights = False, -1

    def get_weights(self):
        return self.weights

    def set_weights(self, weights):
        self.weights = weights


def test_early_stopping_restore_without_beating_baseline():
    """Ported from Keras 3's test_early_stopping_final_weights_when_restoring_
    model_weights: no epoch beats the baseline, the best one still comes back
    (this crashed with "'int' object is not iterable")."""
    stop = EarlyStopping(monitor="val_loss", patience=5, baseline=0.5,
                         restore_best_weights=True)
    stop.set_model(_TokenModel())
    losses, trained = [0.9, 0.8, 0.7, 0.71, 0.72, 0.73], 0
    stop.on_train_begin()
    for epoch, loss in enumerate(losses):
        trained += 1
        stop.model.weights = epoch
        stop.on_epoch_end(epoch, logs={"val_loss": loss})
        if stop.model.stop_training:
            break
    stop.on_train_end()
    assert trained == 5 and stop.model.get_weights() == 2


def test_monitor_direction_found_inside_compile_metrics():
    """Keras 3: a compiled metric sits in model.metrics' "compile_metrics"."""

    class Score(kf.metrics.MeanMetricWrapper):
        _direction = "up"

        def __init__(self):
            super().__init__(lambda y, p: kf.ops.mean(p, axis=-1), name="score")

    model = kf.Sequential([kf.layers.Dense(1, input_shape=(2,))])
    model.compile("sgd", "mse", metrics=[Score()])
    model.fit(np.ones((4, 2), "float32"), np.ones((4, 1), "float32"), verbose=0)
    stop = EarlyStopping(monitor="score")
    stop.set_model(model)
    assert stop._direction() == "max"
