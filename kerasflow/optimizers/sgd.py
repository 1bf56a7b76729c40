"""Stochastic gradient descent, with optional (Nesterov) momentum."""

from __future__ import annotations

from kerasflow.optimizers import kernels
from kerasflow.optimizers.base import Optimizer

__all__ = ["SGD", "GradientDescentOptimizer"]


class SGD(Optimizer):
    """Gradient descent with momentum, as Keras 3 defines it.

    Without momentum: ``w -= learning_rate * g``. With momentum (Polyak 1964;
    Nesterov's variant as in Sutskever et al., ICML 2013, §2):

    ``velocity = momentum * velocity - learning_rate * g``, then
    ``w += velocity``, or with ``nesterov=True``
    ``w += momentum * velocity - learning_rate * g``.

    Args:
        learning_rate: float or ``LearningRateSchedule``; default 0.01.
        momentum: float in [0, 1]; 0 keeps no velocity slot.
        nesterov: bool, Nesterov momentum.
        weight_decay, clipnorm, clipvalue, global_clipnorm, name, use_ema,
            ema_momentum, ema_overwrite_frequency: see ``Optimizer``.

    Raises:
        ValueError: momentum outside [0, 1].

    Example:
        >>> opt = SGD(learning_rate=0.1, momentum=0.9)
        >>> train = K.Function([x, y], [loss], opt.get_updates(loss, [w, b]))
    """

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False,
                 weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name="SGD", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue,
                         global_clipnorm, name, **kwargs)
        if isinstance(momentum, bool) or not 0 <= momentum <= 1:
            raise ValueError(f"`momentum` must be a float between [0, 1]. "
                             f"Received: momentum={momentum!r}.")
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)

    def _create_slots(self, var):
        if self.momentum != 0:
            self.add_slot(var, "momentum")

    def _apply_dense(self, grad, var, coefficients, decay):
        lr = coefficients["lr"]
        if self.momentum != 0:
            return kernels.apply_momentum(var, grad, lr,
                                          self.get_slot(var, "momentum"),
                                          self.momentum, self.nesterov, decay)
        return kernels.apply_gradient_descent(var, grad, lr, decay)

    def get_config(self):
        return {**super().get_config(), "momentum": self.momentum,
                "nesterov": self.nesterov}


class GradientDescentOptimizer(SGD):
    """TF1's ``tf.train.GradientDescentOptimizer``: ``SGD`` with a required rate.

    Example:
        >>> train_op = GradientDescentOptimizer(0.01).minimize(cost)
    """

    def __init__(self, learning_rate, name="GradientDescent", **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
