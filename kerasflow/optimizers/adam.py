"""Adam (Kingma & Ba, ICLR 2015), with the AMSGrad variant, and the base that
Adam's relatives (Nadam, Adamax, Lamb) share with it."""

from __future__ import annotations

from kerasflow import backend as K
from kerasflow.optimizers import kernels
from kerasflow.optimizers.base import Optimizer
from kerasflow.utils.arg_checks import check_real

__all__ = ["Adam"]


class _AdamLike(Optimizer):
    """beta_1, beta_2, epsilon with Keras 3's defaults: checks, config, the
    moment slots (``_SLOTS``) and the step's bias-correction powers."""

    _SLOTS = ("momentum", "velocity")

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-7, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, name=None, **kwargs):
        super().__init__(learning_rate, weight_decay, clipnorm, clipvalue,
                         global_clipnorm, name, **kwargs)
        owner = f"Optimizer '{self.name}'"
        self.beta_1 = check_real(owner, "beta_1", beta_1, 0.0, 1.0, high_open=True)
        self.beta_2 = check_real(owner, "beta_2", beta_2, 0.0, 1.0, high_open=True)
        self.epsilon = check_real(owner, "epsilon", epsilon, 0.0)

    def _step(self, dtype):
        # Read before this step's increment runs: t = iterations + 1.
        return K.cast(K.add(self.iterations, 1), dtype)

    def _create_slots(self, var):
        for slot in self._SLOTS:
            self.add_slot(var, slot)

    def _coefficients(self, dtype, lr):
        c = super()._coefficients(dtype, lr)
        t = self._step(dtype)
        c.update(t=t, beta_1_power=K.power(self.beta_1, t),
                 beta_2_power=K.power(self.beta_2, t))
        return c

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1,
                "beta_2": self.beta_2, "epsilon": self.epsilon}


class Adam(_AdamLike):
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
        super().__init__(learning_rate, beta_1, beta_2, epsilon, weight_decay,
                         clipnorm, clipvalue, global_clipnorm, name, **kwargs)
        self.amsgrad = bool(amsgrad)

    def _create_slots(self, var):
        super()._create_slots(var)
        if self.amsgrad:
            self.add_slot(var, "velocity_hat")

    def _coefficients(self, dtype, lr):
        # The fused step size folds in both bias corrections: no t, no powers.
        c = super(_AdamLike, self)._coefficients(dtype, lr)
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
        return {**super().get_config(), "amsgrad": self.amsgrad}
