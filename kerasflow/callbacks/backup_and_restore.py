"""``BackupAndRestore``: resume an interrupted ``fit`` where it stopped (Keras
3's ``keras.callbacks.BackupAndRestore``)."""

from __future__ import annotations

import os
import shutil

import numpy as np

from kerasflow.callbacks.callback import Callback
from kerasflow.distribute.distribute_lib import get_strategy
from kerasflow.utils import checkpoint as ckpt
from kerasflow.utils import file_io

__all__ = ["BackupAndRestore"]

_FILE = "latest.backup.npz"


_META_KEYS = ("epoch", "model_weights", "optimizer_weights")


def _check_backup(arrays, meta, path) -> None:
    """Refuses a file that is no backup of this callback (e.g. another
    checkpoint copied into the folder), naming it."""
    problem = None
    if not all(isinstance(meta.get(k), int) and not isinstance(meta.get(k), bool)
               and meta[k] >= 0 for k in _META_KEYS):
        problem = f"metadata {sorted(meta)}"
    else:
        names = [f"model/{i}" for i in range(meta["model_weights"])] + [
            f"optimizer/{i}" for i in range(meta["optimizer_weights"])]
        rng = meta.get("numpy_rng")
        if rng is not None:
            names.append("numpy_rng/keys")
            if not (isinstance(rng, list) and len(rng) == 4):
                problem = f"numpy_rng metadata {rng!r:.80}"
        missing = [n for n in names if n not in arrays]
        if missing:
            problem = f"no arrays {missing[:5]}"
    if problem is not None:
        raise ckpt.CheckpointError(
            f"BackupAndRestore expects '{path}' to be its backup (metadata "
            f"{list(_META_KEYS)} and the arrays they count). Received: a file "
            f"with {problem}. Move the file away or give another backup_dir.")


class BackupAndRestore(Callback):
    """Backs up the training state and restores it when ``fit`` starts again
    (Keras 3's ``BackupAndRestore``).

    The backup is one file, ``<backup_dir>/latest.backup.npz`` (the
    checkpoint format of ``kerasflow.utils.checkpoint``, written atomically:
    a crash while writing leaves the previous backup whole). It holds the
    model's weights, the optimizer's state (``optimizer.get_weights()``:
    iterations, slots), numpy's global random state (the order ``fit``
    shuffles batches in) and the epoch and batch reached. When ``fit`` starts
    and a backup exists, all of that is restored and training continues at
    the epoch after the last completed one (``fit``'s ``initial_epoch`` is
    overridden, as Keras does): an interrupted and rerun ``fit`` with
    ``save_freq='epoch'`` ends with the weights of an uninterrupted one (for
    models without random layers such as dropout). At the end of a ``fit``
    that completes, the backup folder is deleted (``delete_checkpoint``).
    The optimizer state backed up is what ``optimizer.get_weights()`` reads in
    the driver process: all of it under the default strategy.

    With one process per worker (``MultiWorkerMirroredStrategy()`` under
    ``TF_CONFIG``), only the chief writes (and deletes) the backup and every
    worker restores from it, as TF's multi-worker ``BackupAndRestore`` does:
    a restarted job resumes every process from the same epoch.

    Args:
        backup_dir: folder of the backup (created when first written).
        save_freq: ``'epoch'`` (after every epoch) or an int N > 0 (every N
            batches; a resumed run restarts that epoch from its first batch,
            with the mid-epoch weights, as Keras).
        double_checkpoint: also keep the previous backup as ``.bkp`` and fall
            back to it when the latest cannot be read.
        delete_checkpoint: remove ``backup_dir`` when training completes.

    Raises:
        ValueError: an empty ``backup_dir`` or a bad ``save_freq``; on resume,
            an unbuilt model, or a backup whose weights or optimizer state do
            not match the model's (count or shapes).

    Example:
        >>> model.fit(x, y, epochs=10,
        ...           callbacks=[BackupAndRestore(backup_dir="/tmp/backup")])
    """

    def __init__(self, backup_dir, save_freq="epoch", double_checkpoint=False,
                 delete_checkpoint=True):
        super().__init__()
        if not backup_dir:
            raise ValueError("Empty `backup_dir` argument passed")
        if save_freq != "epoch" and (isinstance(save_freq, bool) or not isinstance(
                save_freq, (int, np.integer)) or save_freq <= 0):
            raise ValueError(f"Invalid value for argument `save_freq`. Received: "
                             f"save_freq={save_freq!r}. Expected either 'epoch' "
                             f"or a positive integer value.")
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = save_freq
        self.double_checkpoint = bool(double_checkpoint)
        self.delete_checkpoint = bool(delete_checkpoint)
        self._path = os.path.join(self.backup_dir, _FILE)
        self._prev_path = self._path + ".bkp"
        self._current_epoch = 0
        self._last_batch_seen = 0
        self._batches_since_save = 0

    # -- restore ----------------------------------------------------------------------
    def _writes(self):
        # One process per worker: the chief alone writes; all read its file.
        # The model's strategy decides, as fit's does: TF's guide calls fit
        # outside strategy.scope(), where the current strategy is the default.
        strategy = getattr(self.model, "distribute_strategy", None) or get_strategy()
        return bool(getattr(strategy, "is_chief", True))

    def on_train_begin(self, logs=None):
        if not getattr(self.model, "built", True):
            raise ValueError("To use the BackupAndRestore callback, your model "
                             "must be built before you call `fit()`. Model "
                             f"{self.model!r} is unbuilt: build it by calling it "
                             "on a batch of data.")
        for path in (self._path, self._prev_path):
            if not os.path.exists(path):
                continue
            try:
                arrays, meta = ckpt.load_checkpoint(path, with_metadata=True)
                _check_backup(arrays, meta, path)
            except ckpt.CheckpointError:
                if path == self._prev_path or not os.path.exists(self._prev_path):
                    raise
                continue  # a damaged latest backup: the previous one
            self._restore(arrays, meta, path)
            return

    def _restore(self, arrays, meta, path):
        model, opt = self.model, getattr(self.model, "optimizer", None)
        weights = [arrays[f"model/{i}"] for i in range(meta["model_weights"])]
        model.set_weights(weights)
        n_opt = meta["optimizer_weights"]
        if n_opt:
            if opt is None:
                raise ValueError(f"The backup '{path}' holds optimizer state but "
                                 f"the model has no optimizer: compile it first.")
            opt.build(model.trainable_weights)
            opt.set_weights([arrays[f"optimizer/{i}"] for i in range(n_opt)])
        rng = meta.get("numpy_rng")
        if rng is not None:
            np.random.set_state((rng[0], arrays["numpy_rng/keys"], rng[1], rng[2],
                                 rng[3]))
        self._current_epoch = int(meta["epoch"])
        model._initial_epoch = self._current_epoch

    # -- backup -----------------------------------------------------------------------
    def on_epoch_end(self, epoch, logs=None):
        self._current_epoch = epoch + 1
        self._last_batch_seen = 0
        if self.save_freq == "epoch":
            self._save()

    def on_train_batch_end(self, batch, logs=None):
        if self.save_freq == "epoch":
            return
        # A batch index not past the last one starts a new epoch.
        added = batch + 1 if batch <= self._last_batch_seen else \
            batch - self._last_batch_seen
        self._batches_since_save += added
        self._last_batch_seen = batch
        if self._batches_since_save >= self.save_freq:
            self._batches_since_save = 0
            self._save()

    def _save(self):
        if not self._writes():
            return
        model, opt = self.model, getattr(self.model, "optimizer", None)
        arrays = {f"model/{i}": w for i, w in enumerate(model.get_weights())}
        opt_weights = opt.get_weights() if opt is not None and hasattr(
            opt, "get_weights") else []
        arrays.update({f"optimizer/{i}": w for i, w in enumerate(opt_weights)})
        name, keys, pos, has_gauss, gauss = np.random.get_state()
        arrays["numpy_rng/keys"] = keys
        meta = {"epoch": self._current_epoch, "batch": self._last_batch_seen,
                "model_weights": len(model.weights),
                "optimizer_weights": len(opt_weights),
                "numpy_rng": [name, int(pos), int(has_gauss), float(gauss)]}
        data = ckpt.encode_arrays(arrays, meta)
        os.makedirs(self.backup_dir, exist_ok=True)
        if self.double_checkpoint and os.path.exists(self._path):
            os.replace(self._path, self._prev_path)
        file_io.atomic_write(self._path, data)

    def on_train_end(self, logs=None):
        if self.delete_checkpoint and self._writes() and os.path.isdir(self.backup_dir):
            shutil.rmtree(self.backup_dir)
