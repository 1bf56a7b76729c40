"""`MonitorCallback`: the "did the monitored metric improve?" logic, shared."""

from __future__ import annotations

import warnings

from kerasflow import ops
from kerasflow.callbacks.callback import Callback
from kerasflow.utils.arg_checks import check_real

__all__ = ["MonitorCallback"]

# Metric names that improve upwards when the model does not say otherwise;
# everything else (losses, errors) improves downwards.
_MAXIMIZED = ("acc", "auc", "precision", "recall", "fmeasure")


class MonitorCallback(Callback):
    """Base of callbacks that act when a monitored metric stops improving.

    Mirrors ``keras.callbacks.MonitorCallback`` (Keras 3): a value improves on a
    reference when it is lower by more than ``min_delta`` (mode ``"min"``) or
    higher by more than ``min_delta`` (mode ``"max"``). In mode ``"auto"`` the
    direction is read from the model's metric of that name when it has a
    ``_direction`` (``"up"``/``"down"``); otherwise names containing ``acc``,
    ``auc``, ``precision``, ``recall`` or ``fmeasure`` are maximised and all
    others (``loss``, errors) minimised. The direction is resolved on first
    use, once the model's metrics exist.

    Args:
        monitor: log key to watch, e.g. ``"val_loss"`` or ``"accuracy"``.
        mode: ``"auto"``, ``"min"`` or ``"max"``; anything else warns and
            falls back to ``"auto"``.
        min_delta: least change that counts as an improvement (its sign is
            ignored).

    Attributes:
        monitor_op: the resolved comparison, ``kf.ops.less`` (minimising) or
            ``kf.ops.greater`` (maximising) as in Keras 3, or ``None`` until
            first use.
    """

    def __init__(
        self, monitor: str = "val_loss", mode: str = "auto", min_delta: float = 0.0
    ) -> None:
        super().__init__()
        if mode not in ("auto", "min", "max"):
            warnings.warn(
                f"{type(self).__name__} mode '{mode}' is unknown, falling back to "
                "'auto'. Expected one of 'auto', 'min', 'max'.",
                stacklevel=3,
            )
            mode = "auto"
        self.monitor = monitor
        self.mode = mode
        # NaN would make every comparison False: never an improvement.
        self.min_delta = abs(check_real(type(self).__name__, "min_delta", min_delta))
        self.monitor_op = None

    def get_monitor_value(self, logs: dict | None) -> float | None:
        """``logs[monitor]`` as a float; warns and returns None if absent."""
        logs = logs or {}
        value = logs.get(self.monitor)
        if value is None:
            warnings.warn(
                f"{type(self).__name__} is conditioned on metric `{self.monitor}` "
                f"which is not available: skipped. Available metrics are: "
                f"{','.join(logs)}.",
                stacklevel=3,
            )
            return None
        return float(value)

    def _direction(self) -> str:
        """``"max"`` or ``"min"``: the way ``monitor`` improves."""
        if self.mode != "auto":
            return self.mode
        name = self.monitor.removeprefix("val_")
        if name == "loss":
            return "min"
        metrics = []
        for metric in getattr(self.model, "metrics", None) or []:
            # Keras 3: the compiled metrics sit inside one "compile_metrics".
            metrics += [metric] + list(getattr(metric, "metrics", None) or [])
        for metric in metrics:
            if getattr(metric, "name", None) == name and hasattr(metric, "_direction"):
                return "max" if metric._direction == "up" else "min"
        return "max" if any(word in name for word in _MAXIMIZED) else "min"

    def _set_monitor_op(self) -> None:
        """Resolves ``monitor_op`` from the mode (and the model, in auto)."""
        if self._direction() == "max":
            self.monitor_op = ops.greater
        else:
            self.monitor_op = ops.less

    def _is_improvement(self, value: float, reference: float | None) -> bool:
        """True if ``value`` beats ``reference`` by ``min_delta`` (None: True)."""
        if self.monitor_op is None:
            self._set_monitor_op()
        if reference is None:
            return True
        # Keras 3: value - delta compared with the reference, the delta's sign
        # following the direction (a decrease must exceed min_delta to count).
        delta = self.min_delta if self.monitor_op is ops.greater else -self.min_delta
        return bool(self.monitor_op(float(value) - delta, float(reference)))
