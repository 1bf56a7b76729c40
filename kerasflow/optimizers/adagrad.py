"""Adagrad (Duchi, Hazan & Singer, JMLR 2011)."""

from __future__ import annotations

from kerasflow.optimizers import kernels
from kerasflow.optimizers.base import Optimizer
from kerasflow.utils.arg_checks import check_real

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Per-element learning rates from accumulated squared gradients.

    Duchi, Hazan & Singer, "Adaptive Subgradient Methods", JMLR 12 (2011),
    diagonal form, as Keras 3 computes it:

    ``acc += g**2``, ``w -= learning_rate * g / sqrt(acc + epsilon)``.

    Args:
        learning_rate: float or ``LearningRateSchedule``; default 0.001.
        initial_accumulator_value: float >= 0, the accumulator's start value.
        epsilon: float, added inside the square root.
        weight_decay, clipnorm, clipvalue, global_clipnorm, name, use_ema,
            ema_momentum, ema_overwrite_frequency: see ``Optimizer``.

    Example:
        >>> opt = Adagrad(learning_rate=0.1)
    """

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1,
                 epsilon=1e-7, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name="adagrad", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue,
                         global_clipnorm, name, **kwargs)
        if initial_accumulator_value < 0:
            raise ValueError(
                f"`initial_accumulator_value` must be >= 0. Received: "
                f"initial_accumulator_value={initial_accumulator_value!r}."
            )
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.epsilon = check_real(f"Optimizer '{self.name}'", "epsilon", epsilon,
                                  0.0)

    def _create_slots(self, var):
        self.add_slot(var, "accumulator", self.initial_accumulator_value)

    def _apply_dense(self, grad, var, coefficients, decay):
        return kernels.apply_adagrad(var, grad, coefficients["lr"],
                                     self.get_slot(var, "accumulator"),
                                     epsilon=self.epsilon, decay=decay)

    def get_config(self):
        return {**super().get_config(),
                "initial_accumulator_value": self.initial_accumulator_value,
                "epsilon": self.epsilon}
