"""`EarlyStopping`: stops `fit` when a monitored metric has stopped improving."""

from __future__ import annotations

from kerasflow.callbacks.monitor_callback import MonitorCallback
from kerasflow.utils.arg_checks import check_count, check_real

__all__ = ["EarlyStopping"]


class EarlyStopping(MonitorCallback):
    """Stops training when a monitored metric has stopped improving.

    Follows ``keras.callbacks.EarlyStopping`` (Keras 3) exactly: at each epoch
    end from ``start_from_epoch`` on, the wait counter grows by one and is
    reset when the value improves on the best so far (and on ``baseline``, if
    given). When it reaches ``patience`` (and the epoch is not the first),
    ``model.stop_training`` is set, so `fit` ends after this epoch. With
    ``patience=2`` and a loss that never improves after epoch 0, training
    stops at epoch 2 (0-based): three epochs run.

    Args:
        monitor: log key to watch, e.g. ``"val_loss"``.
        min_delta: least change that counts as an improvement.
        patience: number of epochs without improvement after which training
            stops.
        verbose: 1 prints a message when stopping and when restoring weights.
        mode: ``"auto"``, ``"min"`` or ``"max"`` (see `MonitorCallback`).
        baseline: a value the metric must beat; until it does, the wait counter
            is never reset, so training stops after ``patience`` epochs.
        restore_best_weights: at the end of training, set the model's weights
            to those of the best epoch (``model.get_weights()`` copied at that
            epoch end). As in Keras 3 this happens whenever a best epoch was
            seen, also when training ran to the last epoch.
        start_from_epoch: number of warm-up epochs before monitoring starts.

    Attributes:
        stopped_epoch: 0-based epoch at which training was stopped; 0 if it
            was not.
        best: best monitored value seen, or ``None``.
        best_epoch: 0-based epoch of ``best``.
        wait: epochs since the last improvement.

    Example:
        stop = kf.callbacks.EarlyStopping(monitor="val_loss", patience=3,
                                          restore_best_weights=True)
        model.fit(x, y, validation_split=0.2, epochs=100, callbacks=[stop])
    """

    def __init__(
        self,
        monitor: str = "val_loss",
        min_delta: float = 0,
        patience: int = 0,
        verbose: int = 0,
        mode: str = "auto",
        baseline: float | None = None,
        restore_best_weights: bool = False,
        start_from_epoch: int = 0,
    ) -> None:
        super().__init__(monitor, mode, min_delta)
        self.patience = check_count("EarlyStopping", "patience", patience)
        self.verbose = verbose
        self.baseline = (None if baseline is None
                         else check_real("EarlyStopping", "baseline", baseline))
        self.restore_best_weights = restore_best_weights
        self.start_from_epoch = check_count("EarlyStopping", "start_from_epoch",
                                            start_from_epoch)
        self._reset()

    def _reset(self) -> None:
        """Clears the state so the instance can be reused across fits."""
        self.wait = 0
        self.stopped_epoch = 0
        self.best: float | None = None
        self.best_weights: list | None = None
        self.best_epoch = 0

    def on_train_begin(self, logs: dict | None = None) -> None:
        self._reset()

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        current = self.get_monitor_value(logs)
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            # Until an epoch improves, the first monitored one is the best.
            self.best_weights = _snapshot(self.model)
            self.best_epoch = epoch
        self.wait += 1
        if self._is_improvement(current, self.best):
            self.best = current
            self.best_epoch = epoch
            if self.restore_best_weights:
                self.best_weights = _snapshot(self.model)
            # Restart the wait only when beating both the best and the baseline.
            if self.baseline is None or self._is_improvement(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs: dict | None = None) -> None:
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                print(
                    "Restoring model weights from the end of the best epoch: "
                    f"{self.best_epoch + 1}."
                )
            self.model.set_weights(self.best_weights)


def _snapshot(model):
    """Copies of the model's weights: in-place optimizer updates can't alter them.

    Whatever ``get_weights()`` returns that is not a list (a duck-typed model's
    own token, as in Keras' tests) is kept as it is.
    """
    weights = model.get_weights()
    if not isinstance(weights, (list, tuple)):
        return weights
    return [w.copy() if hasattr(w, "copy") else w for w in weights]
