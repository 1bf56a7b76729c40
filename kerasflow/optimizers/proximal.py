"""Proximal gradient descent and proximal Adagrad (TF1's optimizers; Duchi &
Singer, "Efficient Online and Batch Learning Using Forward Backward
Splitting", JMLR 2009)."""

from __future__ import annotations

from kerasflow import backend as K
from kerasflow.optimizers.base import Optimizer

__all__ = ["ProximalAdagrad", "ProximalGradientDescent"]


def _check(name, v):
    if v < 0:
        raise ValueError(f"{name} must be >= 0. Received: {name}={v}.")
    return float(v)


def _prox(var, grad, lr, l1, l2):
    """``sign(v) * max(|v| - lr*l1, 0) / (1 + lr*l2)`` with ``v = w - lr*g``."""
    v = var - lr * grad
    if l1 > 0:
        v = K.sign(v) * K.maximum(K.abs(v) - lr * l1, 0.0)
    return v / (1.0 + lr * l2) if l2 > 0 else v


class ProximalGradientDescent(Optimizer):
    """Gradient step, then the L1/L2 proximal operator (TF1's update).

    Args:
        learning_rate: float or schedule; default 0.001.
        l1_regularization_strength, l2_regularization_strength: floats >= 0.
        clipnorm, clipvalue, global_clipnorm, name: see ``Optimizer``.
    """

    def __init__(self, learning_rate=0.001, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name="proximal_gradient_descent", **kwargs):
        super().__init__(learning_rate, None, clipnorm, clipvalue, global_clipnorm,
                         name, **kwargs)
        self.l1 = _check("l1_regularization_strength", l1_regularization_strength)
        self.l2 = _check("l2_regularization_strength", l2_regularization_strength)

    def _apply_dense(self, grad, var, coefficients, decay):
        return K.assign(var, _prox(var, grad, coefficients["lr"], self.l1, self.l2))

    def get_config(self):
        c = super().get_config()
        c.pop("weight_decay")
        return {**c, "l1_regularization_strength": self.l1,
                "l2_regularization_strength": self.l2}


class ProximalAdagrad(ProximalGradientDescent):
    """Adagrad's per-element rate ``lr / sqrt(acc)`` with the proximal step.

    ``acc += g**2``; then as ``ProximalGradientDescent`` with that rate.

    Args:
        initial_accumulator_value: float > 0; default 0.1.
        Others: as ``ProximalGradientDescent``.
    """

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1,
                 l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                 clipnorm=None, clipvalue=None, global_clipnorm=None,
                 name="proximal_adagrad", **kwargs):
        super().__init__(learning_rate, l1_regularization_strength,
                         l2_regularization_strength, clipnorm, clipvalue,
                         global_clipnorm, name, **kwargs)
        if initial_accumulator_value <= 0:
            raise ValueError(f"initial_accumulator_value must be > 0. Received: "
                             f"{initial_accumulator_value}.")
        self.initial_accumulator_value = float(initial_accumulator_value)

    def _create_slots(self, var):
        self.add_slot(var, "accumulator", self.initial_accumulator_value)

    def _apply_dense(self, grad, var, coefficients, decay):
        acc = self.get_slot(var, "accumulator")
        acc_new = acc + K.square(grad)
        lr = coefficients["lr"] * K.rsqrt(acc_new)
        return K.group(K.assign(acc, acc_new),
                       K.assign(var, _prox(var, grad, lr, self.l1, self.l2)))

    def get_config(self):
        return {**super().get_config(),
                "initial_accumulator_value": self.initial_accumulator_value}
