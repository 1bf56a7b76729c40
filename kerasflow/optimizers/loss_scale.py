"""``LossScaleOptimizer``: dynamic loss scaling around another optimizer
(Micikevicius et al., "Mixed Precision Training", ICLR 2018, §3.2; Keras 3's
``keras.optimizers.LossScaleOptimizer``)."""

from __future__ import annotations

import numpy as np

from kerasflow import backend as K
from kerasflow.backend.registry import apply, register_op
from kerasflow.optimizers.base import Optimizer
from kerasflow.utils.arg_checks import check_real

__all__ = ["LossScaleOptimizer"]

_BASE_DEFAULTS = {"weight_decay": None, "clipnorm": None, "global_clipnorm": None,
                  "clipvalue": None, "use_ema": False, "ema_momentum": 0.99,
                  "ema_overwrite_frequency": None, "loss_scale_factor": None,
                  "gradient_accumulation_steps": None}


def _restore_infer(var, finite, snapshot, *deps):
    return var.shape, var.dtype


@register_op("RestoreUnlessFinite", _restore_infer, stateful=True,
             differentiable=False)
def _restore_unless_finite(xp, var, finite, snapshot, *deps):
    # Runs after ``deps`` (the inner optimizer's updates): a step whose
    # gradients were not all finite is undone by putting the snapshot back.
    if not bool(finite):
        var.value = xp.array(snapshot, dtype=var.dtype, copy=True)
    return var.value


class LossScaleOptimizer(Optimizer):
    """Scales the loss up, its gradients back down, and skips steps whose
    gradients overflow, adapting the scale (Keras 3's ``LossScaleOptimizer``).

    Per step: if every gradient is finite, the inner optimizer applies
    ``g / scale``; after ``dynamic_growth_steps`` such steps in a row the scale
    doubles. Otherwise no variable (nor the inner optimizer's state) changes
    and the scale halves. ``fit`` multiplies the loss by the scale before
    differentiating (``scale_loss``); a custom loop calls ``scale_loss``
    itself. Checked under the default strategy; where replicas each apply
    their slice of the gradients, each slice is checked on its own.

    Args:
        inner_optimizer: the ``Optimizer`` that applies the unscaled gradients.
        initial_scale: float > 0, the first scale (2**15).
        dynamic_growth_steps: int >= 1, finite steps before the scale doubles.
        name: prefix of the optimizer's variables.

    State: ``step_counter`` (int64) and ``dynamic_scale`` (float32), then the
    inner optimizer's ``variables``. ``iterations`` and ``learning_rate`` are
    the inner optimizer's.

    Raises:
        ValueError: ``dynamic=False`` or a base argument (clipnorm,
            weight_decay, use_ema, ...) other than its default (set it on the
            inner optimizer), an unknown argument, a bad scale or growth step.
        TypeError: ``inner_optimizer`` is not an ``Optimizer``.

    Example:
        >>> opt = LossScaleOptimizer(SGD(0.1), initial_scale=1024.0)
    """

    def __init__(self, inner_optimizer, initial_scale=2.0 ** 15,
                 dynamic_growth_steps=2000, name=None, **kwargs):
        if not kwargs.pop("dynamic", True):
            raise ValueError("LossScaleOptimizer no longer supports "
                             "`dynamic=False`. Instead, simply set "
                             "`loss_scale_factor` directly on the "
                             "`inner_optimizer`.")
        for arg, default in _BASE_DEFAULTS.items():
            if arg in kwargs and kwargs.pop(arg) != default:
                raise ValueError(f"LossScaleOptimizer does not support `{arg}`. "
                                 f"Instead, set `{arg}` on the `inner_optimizer`.")
        if kwargs:
            raise ValueError(f"LossScaleOptimizer does not support arguments: "
                             f"`{'`, `'.join(kwargs)}`.")
        if not isinstance(inner_optimizer, Optimizer):
            raise TypeError(f"LossScaleOptimizer wraps an Optimizer. Received: "
                            f"inner_optimizer={inner_optimizer!r}.")
        if isinstance(dynamic_growth_steps, bool) or not isinstance(
                dynamic_growth_steps, (int, np.integer)) or dynamic_growth_steps < 1:
            raise ValueError(f"`dynamic_growth_steps` must be an int >= 1. "
                             f"Received: dynamic_growth_steps="
                             f"{dynamic_growth_steps!r}.")
        self.inner_optimizer = inner_optimizer
        super().__init__(learning_rate=0.0, name=name or "loss_scale_optimizer")
        self.initial_scale = check_real(f"Optimizer '{self.name}'",
                                        "initial_scale", initial_scale, 0.0)
        if self.initial_scale == 0.0:
            raise ValueError("`initial_scale` must be > 0. Received: "
                             "initial_scale=0.")
        self.dynamic_growth_steps = int(dynamic_growth_steps)
        with K.name_scope(self.name):
            self.step_counter = K.Variable(0, trainable=False, dtype="int64",
                                           name="step_counter")
            self.dynamic_scale = K.Variable(np.float32(self.initial_scale),
                                            trainable=False, dtype="float32",
                                            name="dynamic_scale")

    # The base class sets ``iterations`` and ``learning_rate``; both are the
    # inner optimizer's here.
    @property
    def iterations(self):
        return self.inner_optimizer.iterations

    @iterations.setter
    def iterations(self, value):
        self._own_iterations = value

    @property
    def learning_rate(self):
        return self.inner_optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        self.inner_optimizer.learning_rate = value

    lr = learning_rate

    @property
    def variables(self) -> list:
        return [self.step_counter, self.dynamic_scale] + \
            self.inner_optimizer.variables

    def build(self, var_list):
        self.inner_optimizer.build(var_list)

    def scale_loss(self, loss):
        """``loss * dynamic_scale`` (a tensor or an array)."""
        if K.is_symbolic(loss):
            return K.multiply(loss, K.cast(self.dynamic_scale, loss.dtype))
        return loss * self.dynamic_scale.numpy()

    def finalize_variable_values(self, var_list) -> None:
        self.inner_optimizer.finalize_variable_values(var_list)

    def build_updates(self, grads_and_vars) -> list:
        """The inner step on ``g / scale``, undone unless every gradient is
        finite, and the scale's own update."""
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        var_list = [v for _, v in pairs]
        self.build(var_list)
        self._graph_built = True
        with K.name_scope(self.name):
            finite = K.all(K.stack([K.all(K.isfinite(g)) for g, _ in pairs]))
            scale = self.dynamic_scale
            # Zeros on a skipped step: the undone inner step then computes no
            # inf / NaN on the way.
            unscaled = [(K.where(finite, g / K.cast(scale, g.dtype),
                                 K.zeros_like(g)), v) for g, v in pairs]
            inner = self.inner_optimizer.build_updates(unscaled)
            state = list(dict.fromkeys(var_list + self.inner_optimizer.variables))
            # Copies read before any update runs (slots change in place).
            snaps = [K.multiply(s, np.asarray(1, s.dtype)) for s in state]
            restores = [apply("RestoreUnlessFinite", s, finite, snap, *inner)
                        for s, snap in zip(state, snaps)]
            grow = K.equal(self.step_counter, self.dynamic_growth_steps - 1)
            zero = np.asarray(0, "int64")
            counter = K.where(finite, K.where(grow, zero, self.step_counter + 1),
                              zero)
            new_scale = K.where(finite, K.where(grow, scale * 2.0, scale),
                                scale * 0.5)
            return inner + restores + [K.assign(self.step_counter, counter),
                                       K.assign(self.dynamic_scale, new_scale)]

    def get_config(self) -> dict:
        from kerasflow.optimizers import serialize  # the package imports this

        return {"name": self.name,
                "inner_optimizer": serialize(self.inner_optimizer),
                "initial_scale": self.initial_scale,
                "dynamic_growth_steps": self.dynamic_growth_steps}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        from kerasflow.optimizers import deserialize

        config = dict(config)
        inner = deserialize(config.pop("inner_optimizer"), custom_objects)
        return cls(inner, **config)
