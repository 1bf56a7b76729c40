"""Adafactor (Shazeer & Stern, "Adafactor: Adaptive Learning Rates with
Sublinear Memory Cost", ICML 2018), as Keras 3 computes it."""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.optimizers.base import Optimizer
from kerasflow.optimizers.schedules import LearningRateSchedule
from kerasflow.utils.arg_checks import check_real

__all__ = ["Adafactor"]


def _rms(x):
    return K.sqrt(K.mean(K.square(x)))


class Adafactor(Optimizer):
    """Factored second moments (Shazeer & Stern 2018, Alg. 4-5; Keras 3's
    ``Adafactor``).

    At step ``t``: ``rho = min(learning_rate, 1 / sqrt(t))``, ``alpha =
    max(epsilon_2, RMS(w)) * rho``, ``beta = 1 - t**beta_2_decay``, ``G = g**2
    + epsilon_1``. For a variable of rank >= 2 the second moment is kept as
    row and column means, ``r = beta r + (1 - beta) mean(G, -1)``, ``c = beta c
    + (1 - beta) mean(G, -2)``, and ``v = (r / mean(r)) c`` (outer product);
    otherwise ``v = beta v + (1 - beta) G``. Then ``u = g / sqrt(v)``, ``u /=
    max(1, RMS(u) / clip_threshold)`` and ``w -= alpha * u``.

    Args:
        learning_rate: float or ``LearningRateSchedule``; default 0.001.
        beta_2_decay: float, exponent of the second-moment decay (-0.8).
        epsilon_1: float, added to the squared gradients (1e-30).
        epsilon_2: float, lower bound of the parameter scale (1e-3).
        clip_threshold: float > 0, the update's RMS bound (1.0).
        relative_step: bool, accepted for Keras (``rho`` above is always
            bounded by ``1 / sqrt(t)``, as in Keras 3).
        weight_decay, clipnorm, clipvalue, global_clipnorm, name, use_ema,
            ema_momentum, ema_overwrite_frequency: see ``Optimizer``.

    State: slots "r" (shape ``w.shape[:-1]``) and "c" (``w.shape[:-2] +
    w.shape[-1:]``) and "velocity" (``w``'s shape) per variable of rank >= 2;
    "velocity" alone otherwise.

    Raises:
        ValueError: a non-positive clip_threshold or negative epsilons.
    """

    def __init__(self, learning_rate=0.001, beta_2_decay=-0.8, epsilon_1=1e-30,
                 epsilon_2=1e-3, clip_threshold=1.0, relative_step=True,
                 weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name="adafactor", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue,
                         global_clipnorm, name, **kwargs)
        owner = f"Optimizer '{self.name}'"
        self.beta_2_decay = check_real(owner, "beta_2_decay", beta_2_decay)
        self.epsilon_1 = check_real(owner, "epsilon_1", epsilon_1, 0.0)
        self.epsilon_2 = check_real(owner, "epsilon_2", epsilon_2, 0.0)
        self.clip_threshold = check_real(owner, "clip_threshold", clip_threshold,
                                         0.0)
        if self.clip_threshold == 0.0:
            raise ValueError(f"{owner} expects `clip_threshold` > 0. Received: "
                             f"clip_threshold={clip_threshold}.")
        self.relative_step = bool(relative_step)

    def _shaped_slot(self, var, name, shape):
        slots = self._slots.setdefault(var, {})
        if name not in slots:
            base = var.name.replace("/", "_").replace(":", "_")
            with K.name_scope(self.name):
                slots[name] = K.Variable(np.zeros(shape, var.dtype),
                                         trainable=False, dtype=var.dtype,
                                         name=f"{base}_{name}")
        return slots[name]

    def _create_slots(self, var):
        shape = tuple(var.shape)
        if len(shape) >= 2:
            self._shaped_slot(var, "r", shape[:-1])
            self._shaped_slot(var, "c", shape[:-2] + shape[-1:])
        self.add_slot(var, "velocity")

    def _coefficients(self, dtype, lr):
        c = super()._coefficients(dtype, lr)
        t = K.cast(K.add(self.iterations, 1), dtype)
        inv_sqrt = K.rsqrt(t)
        lr = c["lr"]
        if self.relative_step and not isinstance(self._learning_rate,
                                                 LearningRateSchedule):
            lr = K.minimum(lr, inv_sqrt)
        c["rho"] = K.minimum(lr, inv_sqrt)
        c["beta"] = K.subtract(1.0, K.power(t, self.beta_2_decay))
        return c

    def _apply_dense(self, grad, var, c, decay):
        w = var if decay is None else var - var * decay
        alpha = K.maximum(self.epsilon_2, _rms(w)) * c["rho"]
        beta = c["beta"]
        g2 = K.square(grad) + self.epsilon_1
        v = self.get_slot(var, "velocity")
        assigns = []
        if len(var.shape) >= 2:
            r, col = self.get_slot(var, "r"), self.get_slot(var, "c")
            new_r = beta * r + (1.0 - beta) * K.mean(g2, axis=-1)
            new_c = beta * col + (1.0 - beta) * K.mean(g2, axis=-2)
            new_v = K.expand_dims(new_r / K.mean(new_r, axis=-1, keepdims=True),
                                  -1) * K.expand_dims(new_c, -2)
            assigns += [K.assign(r, new_r), K.assign(col, new_c)]
        else:
            new_v = beta * v + (1.0 - beta) * g2
        u = grad / K.sqrt(new_v)
        u = u / K.maximum(1.0, _rms(u) / self.clip_threshold)
        return K.group(*assigns, K.assign(v, new_v), K.assign(var, w - alpha * u))

    def get_config(self):
        return {**super().get_config(), "beta_2_decay": self.beta_2_decay,
                "epsilon_1": self.epsilon_1, "epsilon_2": self.epsilon_2,
                "clip_threshold": self.clip_threshold,
                "relative_step": self.relative_step}
