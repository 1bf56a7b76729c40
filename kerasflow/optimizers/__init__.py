"""Optimizers (layer L1): Keras 3 names and update rules on TF1-style graphs.

Each optimizer turns gradients into stateful graph nodes, one fused kernel per
variable per step::

    from kerasflow import optimizers
    opt = optimizers.get("adam")
    train = K.Function([x, y], [loss], opt.get_updates(loss, params))  # Keras
    train_op = optimizers.GradientDescentOptimizer(0.01).minimize(loss)  # TF1
"""

from __future__ import annotations

from kerasflow.optimizers import fused as _fused  # noqa: F401  (registers kernels)
from kerasflow.optimizers import schedules
from kerasflow.optimizers.adadelta import Adadelta
from kerasflow.optimizers.adagrad import Adagrad
from kerasflow.optimizers.adam import Adam
from kerasflow.optimizers.adamw import AdamW
from kerasflow.optimizers.base import (
    Optimizer,
    TrainOp,
    train_op_info,
    trainable_variables_of,
)
from kerasflow.optimizers.ftrl import Ftrl
from kerasflow.optimizers.proximal import ProximalAdagrad, ProximalGradientDescent
from kerasflow.optimizers.rmsprop import RMSprop
from kerasflow.optimizers.sgd import SGD, GradientDescentOptimizer
from kerasflow.utils.serialization import deserialize_object, did_you_mean

# -- Keras 3 optimizers of issue 25 (one block) ------------------------------------
from kerasflow.optimizers.adafactor import Adafactor  # noqa: E402
from kerasflow.optimizers.adam_family import Adamax, Nadam  # noqa: E402
from kerasflow.optimizers.lamb import Lamb  # noqa: E402
from kerasflow.optimizers.lion import Lion  # noqa: E402
from kerasflow.optimizers.loss_scale import LossScaleOptimizer  # noqa: E402

_ISSUE_25 = {"nadam": Nadam, "adamax": Adamax, "lion": Lion, "lamb": Lamb,
             "adafactor": Adafactor, "lossscaleoptimizer": LossScaleOptimizer}

__all__ = [
    "SGD",
    "Adadelta",
    "Adagrad",
    "Adam",
    "AdamW",
    "Ftrl",
    "ProximalAdagrad",
    "ProximalGradientDescent",
    "GradientDescentOptimizer",
    "Optimizer",
    "RMSprop",
    "TrainOp",
    "deserialize",
    "get",
    "schedules",
    "serialize",
    "train_op_info",
    "trainable_variables_of",
    *(cls.__name__ for cls in _ISSUE_25.values()),
]

_BY_NAME = {
    "sgd": SGD, "adam": Adam, "adamw": AdamW, "rmsprop": RMSprop,
    "adagrad": Adagrad, "adadelta": Adadelta,
    "gradientdescentoptimizer": GradientDescentOptimizer,
    "ftrl": Ftrl, "proximalgradientdescent": ProximalGradientDescent,
    "proximaladagrad": ProximalAdagrad,
    **{k: v for k, v in _ISSUE_25.items() if v is not LossScaleOptimizer},
}


def serialize(optimizer: Optimizer) -> dict:
    """``{"class_name": ..., "config": ...}``, JSON-compatible (Keras' form).

    Raises:
        TypeError: not an ``Optimizer``.
    """
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"serialize expects an Optimizer. Received: {optimizer!r}.")
    return {"module": "kerasflow.optimizers",
            "class_name": type(optimizer).__name__,
            "config": optimizer.get_config()}


def deserialize(config: dict, custom_objects: dict | None = None) -> Optimizer:
    """Rebuilds an optimizer (without state) from ``serialize()``'s output.

    Args:
        config: ``{"class_name": ..., "config": ...}``; class names match
            case-insensitively ("Adam", "adam").
        custom_objects: extra ``{class_name: class}`` (optimizers, schedules).

    Raises:
        ValueError: an unknown class name or a malformed dict.
    """
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"deserialize expects a dict with 'class_name' and "
                         f"'config'. Received: {config!r}.")
    return deserialize_object(config, {**_BY_NAME, **_ISSUE_25}, "optimizer",
                              custom_objects,
                              case_insensitive=True)


def get(identifier) -> Optimizer:
    """An optimizer from a name, a config dict or an instance.

    Args:
        identifier: 'sgd', 'adam', 'adamw', 'rmsprop', 'adagrad', 'adadelta',
            'ftrl', 'nadam', 'adamax', 'lion', 'lamb', 'adafactor' (any case;
            Keras defaults), a ``serialize()`` dict, or an ``Optimizer``
            (returned as is).

    Raises:
        ValueError: anything else, naming it.

    Example:
        >>> get("adam").learning_rate
        0.0010000000474974513
    """
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str) and identifier.lower() in _BY_NAME:
        cls = _BY_NAME[identifier.lower()]
        if cls is GradientDescentOptimizer:
            return cls(0.01)
        return cls()
    hint = did_you_mean(identifier, _BY_NAME, "kerasflow.optimizers") if \
        isinstance(identifier, str) else ""
    raise ValueError(f"Could not interpret optimizer identifier: {identifier!r}."
                     f"{hint} Expected an optimizer name, a config dict or an "
                     f"Optimizer.")


def __getattr__(name):  # a Keras name kerasflow lacks: NotImplementedError
    from kerasflow.utils.keras_surface import missing_attribute

    raise missing_attribute("optimizers", name)
