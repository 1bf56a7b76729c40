"""Adam (Kingma & Ba, ICLR 2015), with the AMSGrad variant."""

from __future__ import annotations

from kerasflow.optimizers import kernels
from kerasflow.optimizers.base import Optimizer
from kerasflow.utils.arg_checks import check_real

__all__ = ["Adam"]


class Adam(Optimizer):
    """Adaptive moment estimation (Kingma & Ba, ICLR 2015, Alg. 1), Keras 3's form.

    At step ``t`` (1 for the first update):

    ``m += (1 - beta_1) * (g - m)``, ``v += (1 - beta_2) * (g**2 - v)``,
    ``alpha = learning_rate * sqrt(1 - beta_2**t) / (1 - beta_1**t)``,
    ``w -= alpha * m / (sqrt(v) + epsilon)``.

    The bias correction is folded into ``alpha`` and ``epsilon`` is the paper's
    "epsilon hat" (§2, before 2.1). With ``amsgrad=True`` (Reddi et al., ICLR
    2018) ``v_hat = max(v_hat, v)`` replaces ``v`` in the last line.

    Args:
        learning_rate: float or ``LearningRateSchedule``; default 0.001.
        beta_1: float, decay of the first-moment estimate.
        beta_2: float, decay of the second-moment estimate.
        epsilon: float, added to ``sqrt(v)``.
        amsgrad: bool.
        weight_decay, clipnorm, clipvalue, global_clipnorm, name, use_ema,
            ema_momentum, ema_overwrite_frequency: see ``Optimizer``.

    Example:
        >>> opt = Adam(learning_rate=1e-3)
        >>> train = K.Function([x, y], [loss], opt.get_updates(loss, [w, b]))
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-7, amsgrad=False, weight_decay=None, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, name="adam", **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue,
                         global_clipnorm, name, **kwargs)
        owner = f"Optimizer '{self.name}'"
        self.beta_1 = check_real(owner, "beta_1", beta_1, 0.0, 1.0, high_open=True)
        self.beta_2 = check_real(owner, "beta_2", beta_2, 0.0, 1.0, high_open=True)
        self.epsilon = check_real(owner, "epsilon", epsilon, 0.0)
        self.amsgrad = bool(amsgrad)

    def _create_slots(self, var):
        self.add_slot(var, "momentum")
        self.add_slot(var, "velocity")
        if self.amsgrad:
            self.add_slot(var, "velocity_hat")

    def _coefficients(self, dtype, lr):
        c = super()._coefficients(dtype, lr)
        # Reads iterations before this step's increment runs: t = iterations + 1.
        c["alpha"] = kernels.adam_step_size(c["lr"], self.iterations,
                                            beta_1=self.beta_1, beta_2=self.beta_2)
        return c

    def _apply_dense(self, grad, var, coefficients, decay):
        v_hat = self.get_slot(var, "velocity_hat") if self.amsgrad else None
        return kernels.apply_adam(
            var, grad, coefficients["alpha"], self.get_slot(var, "momentum"),
            self.get_slot(var, "velocity"), v_hat, beta_1=self.beta_1,
            beta_2=self.beta_2, epsilon=self.epsilon, decay=decay,
        )

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1,
                "beta_2": self.beta_2, "epsilon": self.epsilon,
                "amsgrad": self.amsgrad}
