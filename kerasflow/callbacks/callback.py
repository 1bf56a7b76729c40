"""The `Callback` base class: hooks the training loop calls (Keras callbacks API)."""

from __future__ import annotations

from typing import Any

__all__ = ["Callback", "check_freq"]


class Callback:
    """Base class for objects that hook into `fit`, `evaluate` and `predict`.

    Subclass it and override the hooks you need; every hook is a no-op here.
    The training loop calls them in Keras 3's order (``keras.callbacks.Callback``):
    ``on_train_begin``, then per epoch ``on_epoch_begin``, per batch
    ``on_train_batch_begin`` / ``on_train_batch_end``, the validation pass as
    ``on_test_*``, ``on_epoch_end``, and finally ``on_train_end``.

    ``logs`` are dicts of Python floats: ``loss`` and the compiled metrics
    (e.g. ``accuracy``) on batch and epoch ends, plus ``val_loss`` / ``val_*``
    on epoch end when there is validation data. Callbacks may add keys to the
    epoch-end logs (``LearningRateScheduler`` adds ``learning_rate``); later
    callbacks in the list, such as ``History``, see them.

    Attributes:
        model: the model being trained, set by `set_model`; ``None`` before.
            Callbacks use ``model.stop_training``, ``model.optimizer``,
            ``model.get_weights()``/``set_weights()`` and ``model.save()``.
        params: dict of training parameters set by `set_params`: ``verbose``
            (0, 1 or 2), ``epochs``, ``steps`` (batches per epoch, or ``None``),
            ``samples`` (or ``None``) and ``batch_size``; ``None`` before.

    Example:
        class PrintLoss(kf.callbacks.Callback):
            def on_epoch_end(self, epoch, logs=None):
                print(epoch, logs["loss"])

        model.fit(x, y, epochs=3, callbacks=[PrintLoss()])
    """

    #: False when the hooks read only ``logs`` (and ``model.stop_training``),
    #: never the model's variables: a strategy keeping the weights on its
    #: replicas then needs not pull them before the hook runs.
    reads_model = True

    def __init__(self) -> None:
        self.model: Any = None
        self.params: dict[str, Any] | None = None

    def set_params(self, params: dict[str, Any]) -> None:
        """Stores the training parameters (see the class docstring)."""
        self.params = params

    def set_model(self, model: Any) -> None:
        """Stores the model the hooks act on."""
        self.model = model

    # Keras 2 names, kept as aliases: the train-batch hooks call them.
    def on_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        """Backwards-compatible alias of `on_train_batch_begin`."""

    def on_batch_end(self, batch: int, logs: dict | None = None) -> None:
        """Backwards-compatible alias of `on_train_batch_end`."""

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        """Called at the start of epoch ``epoch`` (0-based) of `fit`."""

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        """Called at the end of epoch ``epoch`` with train and ``val_`` metrics."""

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        """Called before training batch ``batch`` (0-based within the epoch)."""
        self.on_batch_begin(batch, logs)

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        """Called after training batch ``batch`` with the running metrics."""
        self.on_batch_end(batch, logs)

    def on_test_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        """Called before batch ``batch`` of `evaluate` or validation."""

    def on_test_batch_end(self, batch: int, logs: dict | None = None) -> None:
        """Called after batch ``batch`` of `evaluate` or validation."""

    def on_predict_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        """Called before batch ``batch`` of `predict`."""

    def on_predict_batch_end(self, batch: int, logs: dict | None = None) -> None:
        """Called after batch ``batch`` of `predict`."""

    def on_train_begin(self, logs: dict | None = None) -> None:
        """Called once at the start of `fit`."""

    def on_train_end(self, logs: dict | None = None) -> None:
        """Called once at the end of `fit` with the last epoch's logs."""

    def on_test_begin(self, logs: dict | None = None) -> None:
        """Called at the start of `evaluate` or of a validation pass."""

    def on_test_end(self, logs: dict | None = None) -> None:
        """Called at the end of `evaluate` or of a validation pass."""

    def on_predict_begin(self, logs: dict | None = None) -> None:
        """Called at the start of `predict`."""

    def on_predict_end(self, logs: dict | None = None) -> None:
        """Called at the end of `predict`."""


def check_freq(owner: str, name: str, value, also: tuple = ()) -> str | int:
    """``value`` if it is ``"epoch"``, one of ``also`` or a positive int of batches.

    Raises:
        ValueError: anything else, naming ``owner``, ``name`` and the value.
    """
    if value == "epoch" or value in also or (
            isinstance(value, int) and not isinstance(value, bool) and value > 0):
        return value
    allowed = ", ".join(repr(v) for v in ("epoch", *also))
    raise ValueError(f"{owner} expects {name} to be {allowed} or a positive integer "
                     f"number of batches. Received: {name}={value!r}")
