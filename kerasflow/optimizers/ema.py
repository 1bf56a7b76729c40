"""Exponential moving average of the trained weights, as Keras 3 optimizers
keep it (``use_ema``, ``ema_momentum``, ``ema_overwrite_frequency``).

Built as graph updates after the optimizer's own: each average reads the
variable's *new* value (the update node's output), so the ordering holds in
one compiled plan. At the first step (``iterations == 0``) the average is set
to that value; then ``average = m * average + (1 - m) * value``. With an
overwrite frequency ``f``, the variable takes the average whenever
``(iterations + 1) % f == 0`` (``iterations`` read before this step's
increment), as ``keras.optimizers.Optimizer`` does.
"""

from __future__ import annotations

import numbers

from kerasflow import backend as K

__all__ = ["MovingAverageMixin", "check_ema_args", "ema_updates"]


def check_ema_args(owner, use_ema, ema_momentum, ema_overwrite_frequency):
    """Validated ``(use_ema, ema_momentum, ema_overwrite_frequency)``.

    Raises:
        ValueError: a momentum outside [0, 1], or a frequency that is not an
            int >= 1 or None (Keras 3's messages).
    """
    use_ema = bool(use_ema)
    if use_ema:
        if not isinstance(ema_momentum, numbers.Real) or not 0 <= ema_momentum <= 1:
            raise ValueError(f"`ema_momentum` must be in the range [0, 1]. "
                             f"Received: ema_momentum={ema_momentum}")
        if ema_overwrite_frequency is not None and (
                not isinstance(ema_overwrite_frequency, int)
                or isinstance(ema_overwrite_frequency, bool)
                or ema_overwrite_frequency < 1):
            raise ValueError(f"`ema_overwrite_frequency` must be an integer >= 1 "
                             f"or None. Received: ema_overwrite_frequency="
                             f"{ema_overwrite_frequency}")
    return use_ema, float(ema_momentum), ema_overwrite_frequency


def ema_updates(optimizer, var_list, new_values) -> list:
    """Update nodes of the moving averages (and the periodic overwrite).

    Args:
        optimizer: the ``Optimizer`` (its ``iterations``, ``ema_momentum``,
            ``ema_overwrite_frequency`` and "average" slots).
        var_list: the updated Variables.
        new_values: per variable, the tensor holding its value after this
            step's update (the update node).

    Returns:
        List of stateful tensors: one average assignment per variable, then
        (with a frequency) one conditional overwrite per variable.
    """
    it = optimizer.iterations
    first = K.equal(it, 0)
    updates, overwrites = [], []
    overwrite = None
    if optimizer.ema_overwrite_frequency:
        overwrite = K.equal(K.mod(K.add(it, 1), optimizer.ema_overwrite_frequency),
                            0)
    for var, value in zip(var_list, new_values):
        average = optimizer.get_slot(var, "average")
        momentum = K.where(first, K.cast(0.0, var.dtype),
                           K.cast(optimizer.ema_momentum, var.dtype))
        new_average = K.add(K.multiply(momentum, average),
                            K.multiply(K.subtract(1.0, momentum), value))
        updates.append(K.assign(average, new_average))
        if overwrite is not None:
            overwrites.append(K.assign(var, K.where(overwrite, new_average, value)))
    return updates + overwrites


class MovingAverageMixin:
    """Mixin of ``Optimizer``: reading and applying the moving averages."""

    @property
    def _model_variables_moving_average(self) -> list:
        """The "average" slot of every built variable (Keras 3's name)."""
        return [slots["average"] for slots in self._slots.values()
                if "average" in slots]

    def finalize_variable_values(self, var_list) -> None:
        """With ``use_ema``, sets each variable to its moving average (Keras 3
        calls it at the end of ``fit``); otherwise does nothing."""
        if not self.use_ema:
            return
        for var in var_list:
            slots = self._slots.get(var, {})
            if "average" in slots:
                var.assign(slots["average"].numpy())
