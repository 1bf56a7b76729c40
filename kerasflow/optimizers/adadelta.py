"""Adadelta (Zeiler, 2012), as Keras 3 computes it."""

from __future__ import annotations

from kerasflow import backend as K
from kerasflow.optimizers.base import Optimizer

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Step sizes from running averages of squared gradients and updates.

    Zeiler, "ADADELTA: An Adaptive Learning Rate Method", arXiv:1212.5701,
    Algorithm 1, with Keras 3's learning-rate factor:

    ``Eg = rho*Eg + (1-rho)*g**2``,
    ``d = sqrt(Edx + eps) / sqrt(Eg + eps) * g``,
    ``Edx = rho*Edx + (1-rho)*d**2``, ``w -= learning_rate * d``.

    Args:
        learning_rate: float or schedule; default 0.001 (Keras 3; use 1.0 for
            the paper's rule, as the Keras 2 MNIST CNN example does).
        rho: float in [0, 1), the decay of both running averages.
        epsilon: float > 0, added inside the square roots.
        weight_decay, clipnorm, clipvalue, global_clipnorm, name, use_ema,
            ema_momentum, ema_overwrite_frequency: see ``Optimizer``.

    Raises:
        ValueError: rho outside [0, 1) or epsilon <= 0.
    """

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7,
                 weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name="adadelta", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue,
                         global_clipnorm, name, **kwargs)
        if not 0.0 <= rho < 1.0:
            raise ValueError(f"`rho` must be in [0, 1). Received: rho={rho!r}.")
        if not epsilon > 0:
            raise ValueError(f"`epsilon` must be > 0. Received: "
                             f"epsilon={epsilon!r}.")
        self.rho, self.epsilon = float(rho), float(epsilon)

    def _create_slots(self, var):
        self.add_slot(var, "accumulated_grad")
        self.add_slot(var, "accumulated_delta_var")

    def _apply_dense(self, grad, var, coefficients, decay):
        rho, eps = self.rho, self.epsilon
        eg = self.get_slot(var, "accumulated_grad")
        edx = self.get_slot(var, "accumulated_delta_var")
        new_eg = eg * rho + K.square(grad) * (1.0 - rho)
        delta = K.sqrt(edx + eps) / K.sqrt(new_eg + eps) * grad
        new_edx = edx * rho + K.square(delta) * (1.0 - rho)
        step = coefficients["lr"] * delta
        if decay is not None:
            step = step + decay * var
        # Stateful nodes run after every read, so all three see old values.
        return K.group(K.assign(eg, new_eg), K.assign(edx, new_edx),
                       K.assign_sub(var, step))

    def get_config(self):
        return {**super().get_config(), "rho": self.rho, "epsilon": self.epsilon}
