"""BackupAndRestore finding a file in its folder that is not its backup: a
clear error naming the file (never a KeyError), or the previous backup with
``double_checkpoint``."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow.callbacks import BackupAndRestore
from kerasflow.utils.checkpoint import CheckpointError, save_checkpoint

X = np.random.RandomState(0).randn(32, 3).astype("float32")
Y = X.sum(axis=1, keepdims=True)


def _model():
    model = kf.Sequential([kf.layers.InputLayer(shape=(3,)),
                           kf.layers.Dense(1, name="bf_out")])
    model.compile("sgd", "mse")
    return model


def test_another_checkpoint_in_the_backup_folder_is_named(tmp_path):
    # model.save_weights' kind of file: a kerasflow checkpoint, no backup metadata.
    foreign = tmp_path / "latest.backup.npz"
    save_checkpoint(foreign, {"bf_out/kernel": np.ones((3, 1))},
                    metadata={"layers": ["bf_out"]}, update_state=False)
    with pytest.raises(CheckpointError, match=(
            f"BackupAndRestore expects '{foreign}' to be its backup \\(metadata "
            f"\\['epoch', 'model_weights', 'optimizer_weights'\\].*Received: a file "
            f"with metadata \\['layers'\\]")):
        _model().fit(X, Y, epochs=1, verbose=0,
                     callbacks=[BackupAndRestore(tmp_path)])


def test_a_backup_missing_its_arrays_is_named(tmp_path):
    foreign = tmp_path / "latest.backup.npz"
    save_checkpoint(foreign, {"model/0": np.ones((3, 1))}, update_state=False,
                    metadata={"epoch": 1, "model_weights": 2,
                              "optimizer_weights": 0})
    with pytest.raises(CheckpointError, match=r"Received: a file with no arrays "
                                              r"\['model/1'\]"):
        _model().fit(X, Y, epochs=1, verbose=0,
                     callbacks=[BackupAndRestore(tmp_path)])


def test_a_plain_npz_in_the_backup_folder_is_named(tmp_path):
    foreign = tmp_path / "latest.backup.npz"
    with open(foreign, "wb") as f:
        np.savez(f, x=np.ones(2))
    with pytest.raises(CheckpointError, match=f"'{foreign}' is unreadable: not a "
                                              f"kerasflow checkpoint"):
        _model().fit(X, Y, epochs=1, verbose=0,
                     callbacks=[BackupAndRestore(tmp_path)])


def test_a_foreign_latest_falls_back_to_the_previous_backup(tmp_path):
    model = _model()
    model.fit(X, Y, epochs=2, verbose=0,
              callbacks=[BackupAndRestore(tmp_path, double_checkpoint=True,
                                          delete_checkpoint=False)])
    save_checkpoint(tmp_path / "latest.backup.npz", {"x": np.ones(1)},
                    update_state=False)
    history = _model().fit(X, Y, epochs=3, verbose=0, callbacks=[
        BackupAndRestore(tmp_path, double_checkpoint=True)])
    assert len(history.history["loss"]) == 2  # resumed after epoch 1 (the .bkp)
