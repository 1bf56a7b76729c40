"""``SwapEMAWeights``: evaluate (and optionally checkpoint) with the
optimizer's moving averages of the weights (Keras 3's
``keras.callbacks.SwapEMAWeights``)."""

from __future__ import annotations

from kerasflow.callbacks.callback import Callback

__all__ = ["SwapEMAWeights"]


class SwapEMAWeights(Callback):
    """Swaps the model's trained weights with the optimizer's exponential
    moving averages (``use_ema=True``) around evaluation and prediction, so
    validation metrics are those of the averaged weights (Keras 3's
    ``SwapEMAWeights``; Polyak & Juditsky 1992 averaging).

    With ``swap_on_epoch=True`` the averages are also in the model from each
    epoch's end (so later callbacks, e.g. ``ModelCheckpoint``, save them) to
    the next epoch's start; after the last epoch they stay, and the averages
    are set to them. Put it before such callbacks in the list. Unlike Keras
    3.15, ``predict`` swaps back at its end.

    Args:
        swap_on_epoch: also swap at epoch ends (see above).

    Raises:
        ValueError: (when a swap is due) the model's optimizer (or a
            ``LossScaleOptimizer``'s inner one) has no ``use_ema``.

    Example:
        >>> model.compile(optimizer=SGD(use_ema=True), loss="mse")
        >>> model.fit(x, y, validation_data=(vx, vy),
        ...           callbacks=[SwapEMAWeights(swap_on_epoch=True)])
    """

    def __init__(self, swap_on_epoch=False):
        super().__init__()
        self.swap_on_epoch = bool(swap_on_epoch)
        self._ema_in_model = False

    def _pairs(self):
        opt = self.model.optimizer
        opt = getattr(opt, "inner_optimizer", opt)
        if not getattr(opt, "use_ema", False):
            raise ValueError(f"SwapEMAWeights must be used when `use_ema=True` is "
                             f"set on the optimizer. Received: use_ema="
                             f"{getattr(opt, 'use_ema', None)}")
        return [(var, slots["average"]) for var, slots in opt._slots.items()
                if "average" in slots]

    def _swap(self):
        for var, average in self._pairs():
            value = var.numpy()
            var.assign(average.numpy())
            average.assign(value)
        self._ema_in_model = not self._ema_in_model

    def on_epoch_begin(self, epoch, logs=None):
        if self.swap_on_epoch and self._ema_in_model:
            self._swap()

    def on_epoch_end(self, epoch, logs=None):
        if self.swap_on_epoch and not self._ema_in_model:
            self._swap()
            if self.params and epoch == self.params.get("epochs", 0) - 1:
                for var, average in self._pairs():  # both hold the averages
                    average.assign(var.numpy())

    def on_test_begin(self, logs=None):
        if not self._ema_in_model:
            self._swap()

    def on_test_end(self, logs=None):
        if self._ema_in_model:
            self._swap()

    on_predict_begin = on_test_begin
    on_predict_end = on_test_end
