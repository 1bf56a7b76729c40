"""`ReduceLROnPlateau`: divides the learning rate when a metric stops improving."""

from __future__ import annotations


import numpy as np

from kerasflow.callbacks._learning_rate import get_learning_rate, set_learning_rate
from kerasflow.callbacks.monitor_callback import MonitorCallback
from kerasflow.utils.arg_checks import check_count, check_real

__all__ = ["ReduceLROnPlateau"]


class ReduceLROnPlateau(MonitorCallback):
    """Multiplies the learning rate by ``factor`` when a metric plateaus.

    Follows ``keras.callbacks.ReduceLROnPlateau`` (Keras 3): after
    ``patience`` epoch ends without an improvement of more than ``min_delta``,
    the optimizer's learning rate becomes ``max(lr * factor, min_lr)`` (if it
    is above ``min_lr``), then ``cooldown`` epochs pass before the wait counter
    runs again. Every epoch end also adds ``logs["learning_rate"]`` (the rate
    used during that epoch), so `History` records it.

    Args:
        monitor: log key to watch, e.g. ``"val_loss"``.
        factor: multiplier of the learning rate, ``0 <= factor < 1``.
        patience: epochs without improvement before the rate is reduced.
        verbose: 1 prints a message on each reduction.
        mode: ``"auto"``, ``"min"`` or ``"max"`` (see `MonitorCallback`).
        min_delta: least change that counts as an improvement.
        cooldown: epochs to wait after a reduction before counting again.
        min_lr: lower bound of the learning rate.

    Raises:
        ValueError: ``factor`` outside [0, 1), NaN or infinite; a negative
            ``patience``, ``cooldown`` or ``min_lr``.
        TypeError: a non-numeric argument.
        TypeError: on epoch end, if the optimizer's learning rate is a
            schedule (it cannot be set).

    Example:
        reduce_lr = kf.callbacks.ReduceLROnPlateau(monitor="val_loss",
                                                   factor=0.2, patience=5)
        model.fit(x, y, validation_data=(xv, yv), callbacks=[reduce_lr])
    """

    def __init__(
        self,
        monitor: str = "val_loss",
        factor: float = 0.1,
        patience: int = 10,
        verbose: int = 0,
        mode: str = "auto",
        min_delta: float = 1e-4,
        cooldown: int = 0,
        min_lr: float = 0.0,
    ) -> None:
        if isinstance(factor, (int, float)) and factor >= 1.0:
            raise ValueError(
                "ReduceLROnPlateau does not support a factor >= 1.0. "
                f"Received: factor={factor}"
            )
        owner = "ReduceLROnPlateau"
        # factor < 0 would set the rate to min_lr (0) at the first plateau.
        self.factor = check_real(owner, "factor", factor, 0.0, 1.0, high_open=True)
        super().__init__(monitor, mode, min_delta)
        self.patience = check_count(owner, "patience", patience)
        self.verbose = verbose
        self.cooldown = check_count(owner, "cooldown", cooldown)
        self.min_lr = check_real(owner, "min_lr", min_lr, 0.0)
        self._reset()

    def _reset(self) -> None:
        """Clears the counters so the instance can be reused across fits."""
        self.best: float | None = None
        self.wait = 0
        self.cooldown_counter = 0

    def in_cooldown(self) -> bool:
        """True while reductions are paused after the last one."""
        return self.cooldown_counter > 0

    def on_train_begin(self, logs: dict | None = None) -> None:
        self._reset()

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        logs = logs if logs is not None else {}
        logs["learning_rate"] = get_learning_rate(self.model, "ReduceLROnPlateau")
        current = self.get_monitor_value(logs)
        if current is None:
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self._is_improvement(current, self.best):
            self.best = current
            self.wait = 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience:
                self._reduce(epoch)

    def _reduce(self, epoch: int) -> None:
        """Lowers the learning rate by ``factor``, not below ``min_lr``."""
        old_lr = get_learning_rate(self.model, "ReduceLROnPlateau")
        # Compare in float32: a rate stored in float32 may sit just above min_lr.
        if old_lr > np.float32(self.min_lr):
            new_lr = max(old_lr * self.factor, self.min_lr)
            set_learning_rate(self.model, new_lr, "ReduceLROnPlateau")
            if self.verbose > 0:
                print(
                    f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning "
                    f"rate to {new_lr}."
                )
            self.cooldown_counter = self.cooldown
            self.wait = 0
