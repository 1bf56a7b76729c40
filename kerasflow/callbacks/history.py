"""`History`: records the epoch logs of `fit`; `fit` returns it."""

from __future__ import annotations

from kerasflow.callbacks.callback import Callback

__all__ = ["History"]


class History(Callback):
    """Records every epoch's logs (``keras.callbacks.History``).

    `fit` adds one to its callbacks automatically and returns it; it is also
    ``model.history``.

    Attributes:
        history: dict mapping each log key (``loss``, ``val_loss``,
            ``accuracy``, ``learning_rate`` …) to the list of its per-epoch
            values, in epoch order.
        epoch: list of the 0-based epoch indices recorded in the last `fit`.

    Example:
        h = model.fit(x, y, epochs=3, verbose=0)
        h.history["loss"]  # three floats
    """

    reads_model = False  # logs only

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, list] = {}
        self.epoch: list[int] = []

    def on_train_begin(self, logs: dict | None = None) -> None:
        # Like Keras, `epoch` restarts per fit while `history` keeps growing
        # when the same History is passed to several fits.
        self.epoch = []

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self.epoch.append(epoch)
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(value)
        if self.model is not None:
            self.model.history = self
