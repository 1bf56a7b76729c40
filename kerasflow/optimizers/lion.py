"""Lion (Chen et al., "Symbolic Discovery of Optimization Algorithms",
NeurIPS 2023), as Keras 3 computes it."""

from __future__ import annotations

from kerasflow import backend as K
from kerasflow.optimizers.adam_family import _descend
from kerasflow.optimizers.base import Optimizer
from kerasflow.utils.arg_checks import check_real

__all__ = ["Lion"]


class Lion(Optimizer):
    """Evolved sign momentum (Chen et al. 2023, Alg. 2; Keras 3's ``Lion``).

    ``w -= learning_rate * sign(beta_1 * m + (1 - beta_1) * g)``, then
    ``m = beta_2 * m + (1 - beta_2) * g``. Every coordinate moves by exactly
    the learning rate, so Lion wants a 3-10x smaller one than Adam.

    Args:
        learning_rate: float or ``LearningRateSchedule``; default 0.001.
        beta_1: float in (0, 1], the interpolation of the update's sign.
        beta_2: float in [0, 1], the decay of the momentum.
        weight_decay, clipnorm, clipvalue, global_clipnorm, name, use_ema,
            ema_momentum, ema_overwrite_frequency: see ``Optimizer``.

    State: the slot "momentum" per variable.

    Raises:
        ValueError: beta_1 outside (0, 1] (Keras: the optimizer would
            degenerate to SignSGD), beta_2 outside [0, 1].
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.99,
                 weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name="lion", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue,
                         global_clipnorm, name, **kwargs)
        if not 0 < beta_1 <= 1:
            raise ValueError(
                f"Argument `beta_1` must be in the [0, 1] range. Otherwise, the "
                f"optimizer degenerates to SignSGD. Received: beta_1={beta_1}.")
        self.beta_1 = float(beta_1)
        self.beta_2 = check_real(f"Optimizer '{self.name}'", "beta_2", beta_2,
                                 0.0, 1.0)

    def _create_slots(self, var):
        self.add_slot(var, "momentum")

    def _apply_dense(self, grad, var, c, decay):
        m = self.get_slot(var, "momentum")
        step = c["lr"] * K.sign(m * self.beta_1 + grad * (1.0 - self.beta_1))
        return K.group(_descend(var, step, decay),
                       K.assign(m, m * self.beta_2 + grad * (1.0 - self.beta_2)))

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1,
                "beta_2": self.beta_2}
