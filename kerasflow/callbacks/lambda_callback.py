"""`LambdaCallback`: a callback built from plain functions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kerasflow.callbacks.callback import Callback

__all__ = ["LambdaCallback"]


class LambdaCallback(Callback):
    """A callback whose hooks are the functions given (``keras.callbacks``).

    Each function replaces the hook of the same name and is called with the
    same positional arguments: ``(epoch, logs)`` for epoch hooks,
    ``(batch, logs)`` for batch hooks, ``(logs)`` for train begin/end. Hooks
    not given stay no-ops. Any other hook (``on_test_begin``, …) can be passed
    as a keyword argument too.

    Args:
        on_epoch_begin: called at the start of each epoch.
        on_epoch_end: called at the end of each epoch.
        on_train_begin: called at the start of training.
        on_train_end: called at the end of training.
        on_train_batch_begin: called before each training batch.
        on_train_batch_end: called after each training batch.
        **kwargs: further hooks or attributes to set on the callback.

    Example:
        losses = []
        log_loss = kf.callbacks.LambdaCallback(
            on_epoch_end=lambda epoch, logs: losses.append(logs["loss"]))
        model.fit(x, y, epochs=3, callbacks=[log_loss])
    """

    def __init__(
        self,
        on_epoch_begin: Callable | None = None,
        on_epoch_end: Callable | None = None,
        on_train_begin: Callable | None = None,
        on_train_end: Callable | None = None,
        on_train_batch_begin: Callable | None = None,
        on_train_batch_end: Callable | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        self.__dict__.update(kwargs)
        hooks = {
            "on_epoch_begin": on_epoch_begin,
            "on_epoch_end": on_epoch_end,
            "on_train_begin": on_train_begin,
            "on_train_end": on_train_end,
            "on_train_batch_begin": on_train_batch_begin,
            "on_train_batch_end": on_train_batch_end,
        }
        for name, fn in hooks.items():
            if fn is not None:
                setattr(self, name, fn)
