"""LAMB (You et al., "Large Batch Optimization for Deep Learning: Training
BERT in 76 minutes", ICLR 2020; arXiv 2019), as Keras 3 computes it."""

from __future__ import annotations

from kerasflow import backend as K
from kerasflow.optimizers.adam import _AdamLike

__all__ = ["Lamb"]


class Lamb(_AdamLike):
    """Layer-wise adaptive moments (You et al. 2019, Alg. 2; Keras 3's ``Lamb``).

    Adam's bias-corrected direction ``r = m_hat / (sqrt(v_hat) + epsilon)`` is
    rescaled per variable by the trust ratio ``||w|| / ||r||`` (1 when either
    norm is 0): ``w -= learning_rate * ||w|| / ||r|| * r``. Weight decay, when
    set, shrinks ``w`` first (Keras 3's decoupled decay), and the ratio uses the
    decayed ``w``.

    Args:
        learning_rate: float or ``LearningRateSchedule``; default 0.001.
        beta_1, beta_2: floats in [0, 1): decays of the moment estimates.
        epsilon: float >= 0, added to ``sqrt(v_hat)``.
        weight_decay, clipnorm, clipvalue, global_clipnorm, name, use_ema,
            ema_momentum, ema_overwrite_frequency: see ``Optimizer``.

    State: slots "momentum" and "velocity" per variable.

    Raises:
        ValueError: betas outside [0, 1), a negative epsilon.
    """

    def _apply_dense(self, grad, var, c, decay):
        m, v = self.get_slot(var, "momentum"), self.get_slot(var, "velocity")
        w = var if decay is None else var - var * decay
        new_m = m + (grad - m) * (1.0 - self.beta_1)
        new_v = v + (K.square(grad) - v) * (1.0 - self.beta_2)
        update = (new_m / (1.0 - c["beta_1_power"])) / (
            K.sqrt(new_v / (1.0 - c["beta_2_power"])) + self.epsilon)
        w_norm = K.sqrt(K.sum(K.square(w)))
        u_norm = K.sqrt(K.sum(K.square(update)))
        one = K.ones_like(w_norm)
        # Zero norms divide by a stand-in 1; the where picks ratio 1 for them.
        ratio = K.where(K.greater(w_norm, 0.0), K.where(
            K.greater(u_norm, 0.0), w_norm / K.where(K.greater(u_norm, 0.0),
                                                     u_norm, one), one), one)
        return K.group(K.assign(m, new_m), K.assign(v, new_v),
                       K.assign(var, w - ratio * c["lr"] * update))
