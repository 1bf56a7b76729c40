"""RMSprop (Tieleman & Hinton, 2012), plain or centered, with optional momentum."""

from __future__ import annotations

from kerasflow.optimizers import kernels
from kerasflow.optimizers.base import Optimizer
from kerasflow.utils.arg_checks import check_real

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """Divides the gradient by a running RMS of recent gradients, Keras 3's form.

    From Tieleman & Hinton, COURSERA Neural Networks lecture 6.5 (2012);
    centered as in Graves, arXiv:1308.0850, eq. 38-45:

    ``v = rho * v + (1 - rho) * g**2``; centered: ``mg = rho * mg + (1 - rho) *
    g`` and ``denom = v - mg**2 + epsilon``, else ``denom = v + epsilon``;
    ``inc = learning_rate * g / sqrt(denom)``; with momentum ``mom = momentum *
    mom + inc`` and ``w -= mom``, else ``w -= inc``.

    Args:
        learning_rate: float or ``LearningRateSchedule``; default 0.001.
        rho: float, discount of the squared-gradient average.
        momentum: float >= 0; 0 keeps no momentum slot.
        epsilon: float, added inside the square root.
        centered: bool, normalize by the estimated variance.
        weight_decay, clipnorm, clipvalue, global_clipnorm, name, use_ema,
            ema_momentum, ema_overwrite_frequency: see ``Optimizer``.

    Example:
        >>> opt = RMSprop(learning_rate=1e-3, rho=0.9)
    """

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7,
                 centered=False, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name="rmsprop", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue,
                         global_clipnorm, name, **kwargs)
        if momentum < 0:
            raise ValueError(f"`momentum` must be >= 0. Received: "
                             f"momentum={momentum!r}.")
        owner = f"Optimizer '{self.name}'"
        self.rho = check_real(owner, "rho", rho, 0.0, 1.0, high_open=True)
        self.momentum = check_real(owner, "momentum", momentum, 0.0)
        self.epsilon = check_real(owner, "epsilon", epsilon, 0.0)
        self.centered = bool(centered)

    def _create_slots(self, var):
        self.add_slot(var, "velocity")
        if self.momentum > 0:
            self.add_slot(var, "momentum")
        if self.centered:
            self.add_slot(var, "average_gradient")

    def _apply_dense(self, grad, var, coefficients, decay):
        mom = self.get_slot(var, "momentum") if self.momentum > 0 else None
        mg = self.get_slot(var, "average_gradient") if self.centered else None
        return kernels.apply_rmsprop(
            var, grad, coefficients["lr"], self.get_slot(var, "velocity"), mom,
            mg, rho=self.rho, momentum=self.momentum, epsilon=self.epsilon,
            decay=decay,
        )

    def get_config(self):
        return {**super().get_config(), "rho": self.rho,
                "momentum": self.momentum, "epsilon": self.epsilon,
                "centered": self.centered}
