"""`CallbackList`: the one object the training loop calls, fanning out to callbacks."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kerasflow.callbacks.callback import Callback
from kerasflow.callbacks.history import History
from kerasflow.callbacks.progbar_logger import ProgbarLogger
from kerasflow.distribute.driver_state import sync_driver_state

__all__ = ["CallbackList"]


def _reads_model(callback: Callback, hook: str) -> bool:
    """True when ``callback`` overrides ``hook`` and may read the model's
    variables there (any callback not declaring ``reads_model = False``)."""
    return getattr(callback, "reads_model", True) and (
        getattr(type(callback), hook) is not getattr(Callback, hook))


def _dispatch(hook: str, indexed: bool):
    """A ``CallbackList`` method calling ``hook`` on every callback in order.

    Before the first callback that may read the model, weights a strategy
    keeps on its replicas are pulled into the driver (``driver_state``), so
    callbacks see current values; log-only callbacks pull nothing."""
    if indexed:
        def method(self, index: int, logs: dict | None = None) -> None:
            for callback in self.callbacks:
                if _reads_model(callback, hook):
                    sync_driver_state()
                getattr(callback, hook)(index, {} if logs is None else logs)
    else:
        def method(self, logs: dict | None = None) -> None:
            for callback in self.callbacks:
                if _reads_model(callback, hook):
                    sync_driver_state()
                getattr(callback, hook)({} if logs is None else logs)
    method.__name__ = method.__qualname__ = hook
    method.__doc__ = f"Calls ``{hook}`` on every callback (``logs`` None: {{}})."
    return method


class CallbackList(Callback):
    """A container that forwards every hook to its callbacks, in list order.

    Follows ``keras.callbacks.CallbackList``: `fit` wraps the user's callbacks
    in one, adding a `History` (``add_history``) and a `ProgbarLogger`
    (``add_progbar``) unless the list already holds one. Both go last, so they
    see keys that earlier callbacks add to the epoch logs.

    Args:
        callbacks: iterable of `Callback` instances, or ``None``.
        add_history: append a `History` unless one is present; `set_model`
            then also sets ``model.history`` to it.
        add_progbar: append a `ProgbarLogger` unless one is present.
        model: if given, passed to `set_model`.
        **params: if given, passed as a dict to `set_params` (``verbose``,
            ``epochs``, ``steps``, ``samples``, ``batch_size``).

    Raises:
        TypeError: if ``callbacks`` is a single `Callback` (not a list) or an
            element of ``callbacks`` is not a `Callback`.

    Example:
        cbs = CallbackList([EarlyStopping()], add_history=True, model=model,
                           verbose=0, epochs=10, steps=32)
        cbs.on_train_begin()
    """

    def __init__(
        self,
        callbacks: Iterable[Callback] | None = None,
        add_history: bool = False,
        add_progbar: bool = False,
        model: Any = None,
        **params: Any,
    ) -> None:
        super().__init__()
        self.callbacks: list[Callback] = []
        if isinstance(callbacks, Callback) or not (
                callbacks is None or hasattr(callbacks, "__iter__")):
            raise TypeError(
                f"`callbacks` expects a list of Callback instances. Received: "
                f"{type(callbacks).__name__} {callbacks!r}; pass "
                f"callbacks=[{type(callbacks).__name__}(...)]."
            )
        for callback in callbacks or []:
            self.append(callback)
        self._history = next(
            (cb for cb in self.callbacks if isinstance(cb, History)), None
        )
        self._progbar = next(
            (cb for cb in self.callbacks if isinstance(cb, ProgbarLogger)), None
        )
        if add_history and self._history is None:
            self._history = History()
            self.callbacks.append(self._history)
        if add_progbar and self._progbar is None:
            self._progbar = ProgbarLogger()
            self.callbacks.append(self._progbar)
        if model is not None:
            self.set_model(model)
        if params:
            self.set_params(params)

    def append(self, callback: Callback) -> None:
        """Adds ``callback`` at the end of the list."""
        if not isinstance(callback, Callback):
            raise TypeError(
                "CallbackList expects instances of kerasflow.callbacks.Callback. "
                f"Received: callback={callback!r} of type {type(callback).__name__}."
            )
        self.callbacks.append(callback)

    def set_params(self, params: dict[str, Any]) -> None:
        """Stores ``params`` here and on every callback."""
        self.params = params
        for callback in self.callbacks:
            callback.set_params(params)

    def set_model(self, model: Any) -> None:
        """Stores ``model`` here and on every callback; sets ``model.history``."""
        self.model = model
        if self._history is not None:
            model.history = self._history
        for callback in self.callbacks:
            callback.set_model(model)

    # Hooks call callbacks positionally, as Keras 3 does, so that
    # LambdaCallback functions may name their arguments freely; a missing
    # ``logs`` becomes {} (Keras' pythonify_logs), never None.
    on_batch_begin = _dispatch("on_batch_begin", indexed=True)
    on_batch_end = _dispatch("on_batch_end", indexed=True)
    on_epoch_begin = _dispatch("on_epoch_begin", indexed=True)
    on_epoch_end = _dispatch("on_epoch_end", indexed=True)
    on_train_batch_begin = _dispatch("on_train_batch_begin", indexed=True)
    on_train_batch_end = _dispatch("on_train_batch_end", indexed=True)
    on_test_batch_begin = _dispatch("on_test_batch_begin", indexed=True)
    on_test_batch_end = _dispatch("on_test_batch_end", indexed=True)
    on_predict_batch_begin = _dispatch("on_predict_batch_begin", indexed=True)
    on_predict_batch_end = _dispatch("on_predict_batch_end", indexed=True)
    on_train_begin = _dispatch("on_train_begin", indexed=False)
    on_train_end = _dispatch("on_train_end", indexed=False)
    on_test_begin = _dispatch("on_test_begin", indexed=False)
    on_test_end = _dispatch("on_test_end", indexed=False)
    on_predict_begin = _dispatch("on_predict_begin", indexed=False)
    on_predict_end = _dispatch("on_predict_end", indexed=False)

    def __iter__(self):
        return iter(self.callbacks)

    def __len__(self) -> int:
        return len(self.callbacks)
