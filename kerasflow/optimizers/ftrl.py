"""FTRL-Proximal (McMahan et al., "Ad Click Prediction: a View from the
Trenches", KDD 2013), TF's ``tf.keras.optimizers.Ftrl`` and the default
optimizer of TF's linear estimators."""

from __future__ import annotations

from kerasflow import backend as K
from kerasflow.optimizers.base import Optimizer

__all__ = ["Ftrl"]


class Ftrl(Optimizer):
    """Follow-the-regularized-leader with L1/L2 regularization (TF's update).

    Per element, with ``p = -learning_rate_power`` (0.5 by default)::

        n' = n + g**2
        sigma = (n'**p - n**p) / lr
        z = z + g - sigma * w
        w = (sign(z) * l1 - z) / (n'**p / lr + 2 * l2)   if |z| > l1 else 0

    L1 drives weights to exactly zero (sparse linear models).

    Args:
        learning_rate: float or schedule; default 0.001.
        learning_rate_power: float <= 0; default -0.5.
        initial_accumulator_value: float >= 0, start of ``n``; default 0.1.
        l1_regularization_strength, l2_regularization_strength: floats >= 0.
        clipnorm, clipvalue, global_clipnorm, name: see ``Optimizer``.

    Raises:
        ValueError: a positive learning_rate_power or a negative strength.
    """

    def __init__(self, learning_rate=0.001, learning_rate_power=-0.5,
                 initial_accumulator_value=0.1, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, weight_decay=None, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, name="ftrl", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue,
                         global_clipnorm, name, **kwargs)
        for arg, v in (("learning_rate_power", -learning_rate_power),
                       ("initial_accumulator_value", initial_accumulator_value),
                       ("l1_regularization_strength", l1_regularization_strength),
                       ("l2_regularization_strength", l2_regularization_strength)):
            if v < 0:
                raise ValueError(f"Ftrl expects {arg} "
                                 f"{'<=' if arg == 'learning_rate_power' else '>='} 0."
                                 f" Received: {arg}={-v if arg == 'learning_rate_power' else v}.")
        self.learning_rate_power = float(learning_rate_power)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.l1_regularization_strength = float(l1_regularization_strength)
        self.l2_regularization_strength = float(l2_regularization_strength)

    def _create_slots(self, var):
        self.add_slot(var, "accumulator", self.initial_accumulator_value)
        self.add_slot(var, "linear", 0.0)

    def _pow(self, x):
        p = -self.learning_rate_power
        return K.sqrt(x) if p == 0.5 else K.power(x, p)

    def _apply_dense(self, grad, var, coefficients, decay):
        lr = coefficients["lr"]
        n = self.get_slot(var, "accumulator")
        z = self.get_slot(var, "linear")
        l1, l2 = self.l1_regularization_strength, self.l2_regularization_strength
        n_new = n + K.square(grad)
        pn_new = self._pow(n_new)
        sigma = (pn_new - self._pow(n)) / lr
        z_new = z + grad - sigma * var
        quadratic = pn_new / lr + 2.0 * l2
        w_new = K.where(K.abs(z_new) > l1, (K.sign(z_new) * l1 - z_new) / quadratic,
                        K.zeros_like(z_new))
        if decay is not None:
            w_new = w_new - var * decay
        return K.group(K.assign(n, n_new), K.assign(z, z_new), K.assign(var, w_new))

    def get_config(self):
        return {**super().get_config(),
                "learning_rate_power": self.learning_rate_power,
                "initial_accumulator_value": self.initial_accumulator_value,
                "l1_regularization_strength": self.l1_regularization_strength,
                "l2_regularization_strength": self.l2_regularization_strength}
