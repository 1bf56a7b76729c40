"""Nadam and Adamax: Adam's relatives of Kingma & Ba and Dozat, as Keras 3
computes them (graph updates; stateful nodes run after every read, so each
update sees the step's old slot values)."""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.optimizers.adam import _AdamLike

__all__ = ["Nadam", "Adamax"]


def _descend(var, step, decay):
    """``var -= step`` after Keras 3's decoupled decay ``var -= var * decay``
    (in that order, so float32 results round as Keras')."""
    if decay is None:
        return K.assign_sub(var, step)
    return K.assign(var, (var - var * decay) - step)


class Nadam(_AdamLike):
    """Adam with Nesterov momentum (Dozat, "Incorporating Nesterov Momentum into
    Adam", ICLR 2016 workshop; Keras 3's ``Nadam``).

    At step ``t``, with momentum schedule ``u_t = beta_1 * (1 - 0.5 *
    0.96**t)`` and ``P_t = u_1 * ... * u_t`` (the ``u_product`` state):

    ``m += (1 - beta_1) * (g - m)``, ``v += (1 - beta_2) * (g**2 - v)``,
    ``m_hat = u_{t+1} m / (1 - P_t u_{t+1}) + (1 - u_t) g / (1 - P_t)``,
    ``v_hat = v / (1 - beta_2**t)``,
    ``w -= learning_rate * m_hat / (sqrt(v_hat) + epsilon)``.

    Args:
        learning_rate: float or ``LearningRateSchedule``; default 0.001.
        beta_1, beta_2: floats in [0, 1): decays of the moment estimates.
        epsilon: float >= 0, added to ``sqrt(v_hat)``.
        weight_decay, clipnorm, clipvalue, global_clipnorm, name, use_ema,
            ema_momentum, ema_overwrite_frequency: see ``Optimizer``.

    State: slots "momentum" and "velocity" per variable, and the scalar
    ``u_product`` (last in ``variables``).

    Raises:
        ValueError: betas outside [0, 1), a negative epsilon.
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-7, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name="nadam", **kwargs):
        super().__init__(learning_rate, beta_1, beta_2, epsilon, weight_decay,
                         clipnorm, clipvalue, global_clipnorm, name, **kwargs)
        with K.name_scope(self.name):
            self._u_product = K.Variable(np.asarray(1.0, K.floatx()),
                                         trainable=False, name="u_product")

    @property
    def variables(self) -> list:
        return super().variables + [self._u_product]

    def _u(self, t):
        return K.multiply(self.beta_1, K.subtract(1.0, K.multiply(
            0.5, K.power(0.96, t))))

    def _coefficients(self, dtype, lr):
        c = super()._coefficients(dtype, lr)
        u_t, u_next = self._u(c["t"]), self._u(K.add(c["t"], 1.0))
        # The u_product after this step's factor, read from its old value.
        product = K.multiply(self._cast(self._u_product, dtype), u_t)
        c.update(u_t=u_t, u_next=u_next, product=product,
                 product_next=K.multiply(product, u_next))
        return c

    def build_updates(self, grads_and_vars) -> list:
        updates = super().build_updates(grads_and_vars)
        dtype = self._u_product.dtype
        t = self._step(dtype)
        new = K.multiply(self._u_product, self._u(t))
        # Before the iteration increment (the last update).
        updates.insert(len(updates) - 1, K.assign(self._u_product, new))
        return updates

    def _apply_dense(self, grad, var, c, decay):
        m, v = self.get_slot(var, "momentum"), self.get_slot(var, "velocity")
        new_m = m + (grad - m) * (1.0 - self.beta_1)
        new_v = v + (K.square(grad) - v) * (1.0 - self.beta_2)
        m_hat = c["u_next"] * new_m / (1.0 - c["product_next"]) + \
            (1.0 - c["u_t"]) * grad / (1.0 - c["product"])
        v_hat = new_v / (1.0 - c["beta_2_power"])
        step = m_hat * c["lr"] / (K.sqrt(v_hat) + self.epsilon)
        return K.group(K.assign(m, new_m), K.assign(v, new_v),
                       _descend(var, step, decay))


class Adamax(_AdamLike):
    """Adam with the infinity norm (Kingma & Ba, ICLR 2015, §7.1, Alg. 2;
    Keras 3's ``Adamax``).

    ``m += (1 - beta_1) * (g - m)``, ``u = max(beta_2 * u, |g|)``,
    ``w -= learning_rate * m / ((1 - beta_1**t) * (u + epsilon))``.

    Args:
        learning_rate: float or ``LearningRateSchedule``; default 0.001.
        beta_1, beta_2: floats in [0, 1): decays of the first moment and of
            the norm.
        epsilon: float >= 0.
        weight_decay, clipnorm, clipvalue, global_clipnorm, name, use_ema,
            ema_momentum, ema_overwrite_frequency: see ``Optimizer``.

    State: slots "momentum" and "norm" per variable.

    Raises:
        ValueError: betas outside [0, 1), a negative epsilon.
    """

    _SLOTS = ("momentum", "norm")

    def _apply_dense(self, grad, var, c, decay):
        m, u = self.get_slot(var, "momentum"), self.get_slot(var, "norm")
        new_m = m + (grad - m) * (1.0 - self.beta_1)
        new_u = K.maximum(u * self.beta_2, K.abs(grad))
        step = c["lr"] * new_m / ((1.0 - c["beta_1_power"]) * (new_u + self.epsilon))
        return K.group(K.assign(m, new_m), K.assign(u, new_u),
                       _descend(var, step, decay))
