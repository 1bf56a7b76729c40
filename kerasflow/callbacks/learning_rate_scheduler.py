"""`LearningRateScheduler`: sets the learning rate from a function of the epoch."""

from __future__ import annotations

import inspect
import math
import numbers
from collections.abc import Callable

from kerasflow.callbacks._learning_rate import get_learning_rate, set_learning_rate
from kerasflow.callbacks.callback import Callback

__all__ = ["LearningRateScheduler"]


class LearningRateScheduler(Callback):
    """Sets the learning rate at each epoch start from ``schedule``.

    Follows ``keras.callbacks.LearningRateScheduler`` (Keras 3): on epoch
    begin the optimizer's learning rate becomes ``schedule(epoch, lr)``, where
    ``epoch`` is 0-based and ``lr`` the current rate (a one-argument
    ``schedule(epoch)`` is also accepted). On epoch end ``logs["learning_rate"]``
    records the rate, so `History` has it.

    Args:
        schedule: function ``(epoch: int, lr: float) -> float``.
        verbose: 1 prints the new rate at each epoch start.

    Raises:
        ValueError: on epoch begin, if ``schedule`` returns NaN, an infinite
            or a negative rate.
        TypeError: ``schedule`` not callable; on epoch begin, if ``schedule``
            returns something other
            than a real number, or if the optimizer's learning rate is a
            schedule (it cannot be set).

    Example:
        def schedule(epoch, lr):
            return lr if epoch < 10 else lr * 0.9

        model.fit(x, y, epochs=15,
                  callbacks=[kf.callbacks.LearningRateScheduler(schedule)])
    """

    def __init__(self, schedule: Callable[..., float], verbose: int = 0) -> None:
        super().__init__()
        if not callable(schedule):
            raise TypeError(
                f"LearningRateScheduler expects `schedule` as a function (epoch, "
                f"lr) -> float. Received: {schedule!r}."
            )
        self.schedule = schedule
        self.verbose = verbose
        self._takes_lr = _takes_two_args(schedule)

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        if self._takes_lr:
            lr = get_learning_rate(self.model, "LearningRateScheduler")
            new_lr = self.schedule(epoch, lr)
        else:
            new_lr = self.schedule(epoch)
        if not isinstance(new_lr, numbers.Real) or isinstance(new_lr, bool):
            raise TypeError(
                "The output of the `schedule` function should be a float. "
                f"Received: {new_lr!r} of type {type(new_lr).__name__}."
            )
        new_lr = float(new_lr)
        if not math.isfinite(new_lr) or new_lr < 0:
            raise ValueError(
                f"LearningRateScheduler expects `schedule` to return a finite "
                f"learning rate >= 0. Received: {new_lr} at epoch {epoch}."
            )
        set_learning_rate(self.model, new_lr, "LearningRateScheduler")
        if self.verbose > 0:
            print(
                f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning "
                f"rate to {new_lr}."
            )

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if logs is not None:
            logs["learning_rate"] = get_learning_rate(
                self.model, "LearningRateScheduler"
            )


def _takes_two_args(fn: Callable) -> bool:
    """True unless ``fn`` visibly accepts a single positional argument."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # builtins without a signature
        return True
    positional = [
        p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    varargs = any(p.kind is p.VAR_POSITIONAL for p in params)
    return varargs or len(positional) >= 2
