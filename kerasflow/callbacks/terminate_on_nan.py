"""`TerminateOnNaN`: stops `fit` as soon as a batch loss is NaN or infinite."""

from __future__ import annotations

import math

from kerasflow.callbacks.callback import Callback

__all__ = ["TerminateOnNaN"]


class TerminateOnNaN(Callback):
    """Stops training when a training batch's loss is NaN or ±inf.

    Follows ``keras.callbacks.TerminateOnNaN``: checks ``logs["loss"]`` after
    every training batch and, if it is not finite, prints a message and sets
    ``model.stop_training``, which `fit` checks after each batch.

    Example:
        model.fit(x, y, epochs=10, callbacks=[kf.callbacks.TerminateOnNaN()])
    """

    reads_model = False  # logs only

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            print(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True
