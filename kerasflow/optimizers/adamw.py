"""AdamW: Adam with decoupled weight decay (Loshchilov & Hutter, ICLR 2019)."""

from __future__ import annotations

from kerasflow.optimizers.adam import Adam

__all__ = ["AdamW"]


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter, ICLR 2019, Alg. 2).

    Each step first shrinks the weights, ``w -= w * weight_decay *
    learning_rate`` (Keras 3 scales the decay by the learning rate, so a
    schedule decays it too), then takes the ``Adam`` step; the decay never
    enters the moment estimates, unlike L2 regularization added to the loss.
    ``exclude_from_weight_decay`` exempts variables (e.g. biases).

    Args:
        learning_rate: float or ``LearningRateSchedule``; default 0.001.
        weight_decay: float, default 0.004.
        beta_1, beta_2, epsilon, amsgrad: see ``Adam``.
        clipnorm, clipvalue, global_clipnorm, name, use_ema, ema_momentum,
            ema_overwrite_frequency: see ``Optimizer``.

    Raises:
        ValueError: weight_decay is None or negative.

    Example:
        >>> opt = AdamW(learning_rate=1e-3, weight_decay=0.01)
        >>> opt.exclude_from_weight_decay(var_names=["bias"])
    """

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9,
                 beta_2=0.999, epsilon=1e-7, amsgrad=False, clipnorm=None,
                 clipvalue=None, global_clipnorm=None, name="adamw", **kwargs):
        if weight_decay is None:
            raise ValueError("Argument `weight_decay` must be a float. "
                             "Received: weight_decay=None.")
        super().__init__(learning_rate, beta_1, beta_2, epsilon, amsgrad,
                         weight_decay, clipnorm, clipvalue, global_clipnorm, name,
                         **kwargs)
