"""`ModelCheckpoint`: saves the model or its weights during `fit`."""

from __future__ import annotations

import os

from kerasflow.callbacks.callback import check_freq
from kerasflow.callbacks.monitor_callback import MonitorCallback

__all__ = ["ModelCheckpoint"]


class ModelCheckpoint(MonitorCallback):
    """Saves the model (or only its weights) at some frequency during `fit`.

    Follows ``keras.callbacks.ModelCheckpoint`` (Keras 3). ``filepath`` is a
    format string filled with ``epoch`` (1-based), ``batch`` (1-based, for an
    integer ``save_freq``) and the log values, e.g.
    ``"ckpt-{epoch:02d}-{val_loss:.2f}.kf"``; its folder is created if needed.
    The file is written by ``model.save(path)`` or, with
    ``save_weights_only``, ``model.save_weights(path)``.

    With ``save_best_only`` a file is written only when ``monitor`` improves on
    the best value so far (``initial_value_threshold`` at the start); a fixed
    ``filepath`` then always holds the best model. If ``monitor`` is missing
    from the logs, a warning is issued and nothing is saved.

    With ``save_weights_only`` the file is a checkpoint of
    ``kerasflow.utils.checkpoint`` recorded in its folder's ``checkpoint``
    index, so ``latest_checkpoint(folder)`` finds the newest one and a
    ``compat.v1.train.Saver`` or an Estimator can restore it by weight name
    (``"dense/kernel"``).

    Args:
        filepath: str or path-like, possibly with ``{epoch}``, ``{batch}`` and
            ``{<log key>}`` fields.
        monitor: log key compared when ``save_best_only``.
        verbose: 1 prints a message on every save decision.
        save_best_only: save only when ``monitor`` improves.
        save_weights_only: call ``model.save_weights`` instead of ``model.save``.
        mode: ``"auto"``, ``"min"`` or ``"max"``; in auto, names with ``acc``
            or ``auc`` are maximised, others minimised (see `MonitorCallback`).
        save_freq: ``"epoch"`` to save at every epoch end, or an int N to save
            every N training batches (counted across epochs).
        initial_value_threshold: a value ``monitor`` must beat before the first
            save when ``save_best_only``.

    Raises:
        ValueError: if ``save_freq`` is neither ``"epoch"`` nor a positive int.
        KeyError: at save time, if ``filepath`` names a field that is not in
            the logs.

    Example:
        ckpt = kf.callbacks.ModelCheckpoint("best.kf", monitor="val_accuracy",
                                            save_best_only=True)
        model.fit(x, y, validation_data=(xv, yv), epochs=10, callbacks=[ckpt])
    """

    def __init__(
        self,
        filepath: str | os.PathLike,
        monitor: str = "val_loss",
        verbose: int = 0,
        save_best_only: bool = False,
        save_weights_only: bool = False,
        mode: str = "auto",
        save_freq: str | int = "epoch",
        initial_value_threshold: float | None = None,
    ) -> None:
        super().__init__(monitor, mode)
        self.save_freq = check_freq("ModelCheckpoint", "save_freq", save_freq)
        self.filepath = os.fspath(filepath)
        self.verbose = verbose
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        self.best = initial_value_threshold
        self._current_epoch = 0
        self._batches_since_save = 0
        self._last_batch_seen = 0

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._current_epoch = epoch

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if self._should_save_on_batch(batch):
            self._save_model(self._current_epoch, batch, logs)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if self.save_freq == "epoch":
            self._save_model(epoch, None, logs)

    def _should_save_on_batch(self, batch: int) -> bool:
        """Counts batches across epochs; True every ``save_freq`` of them."""
        if self.save_freq == "epoch":
            return False
        # A batch index that does not grow means a new epoch started.
        if batch <= self._last_batch_seen:
            self._batches_since_save += batch + 1
        else:
            self._batches_since_save += batch - self._last_batch_seen
        self._last_batch_seen = batch
        if self._batches_since_save >= self.save_freq:
            self._batches_since_save = 0
            return True
        return False

    def _save_model(self, epoch: int, batch: int | None, logs: dict | None) -> None:
        """Saves to the formatted path if `_should_save_model` agrees."""
        logs = logs or {}
        filepath = self._get_file_path(epoch, batch, logs)
        if not self._should_save_model(epoch, logs, filepath):
            return
        dirname = os.path.dirname(filepath)
        if dirname:
            os.makedirs(dirname, exist_ok=True)
        if self.save_weights_only:
            self.model.save_weights(filepath)
        else:
            self.model.save(filepath)

    def _should_save_model(self, epoch: int, logs: dict, filepath: str) -> bool:
        """Applies ``save_best_only``; updates ``best``; prints if verbose."""
        if not self.save_best_only:
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1}: saving model to {filepath}")
            return True
        current = self.get_monitor_value(logs)
        if current is None:
            return False
        if self._is_improvement(current, self.best):
            if self.verbose > 0:
                print(
                    f"\nEpoch {epoch + 1}: {self.monitor} improved from "
                    f"{self.best} to {current}, saving model to {filepath}"
                )
            self.best = current
            return True
        if self.verbose > 0:
            print(
                f"\nEpoch {epoch + 1}: {self.monitor} did not improve from "
                f"{self.best}"
            )
        return False

    def _get_file_path(self, epoch: int, batch: int | None, logs: dict) -> str:
        """``filepath`` formatted with the 1-based epoch, batch and the logs."""
        fields = dict(logs)
        fields["epoch"] = epoch + 1
        if batch is not None and "batch" not in logs:
            fields["batch"] = batch + 1
        try:
            return self.filepath.format(**fields)
        except KeyError as error:
            raise KeyError(
                f'Failed to format this callback filepath: "{self.filepath}". '
                f"Reason: {error} is not a log key. Available keys are: "
                f"{', '.join(sorted(fields))}"
            ) from None
