"""Layers (L2): the ``Layer`` base class and one module per family.

``serialize``/``deserialize`` turn a layer into ``{"class_name", "config"}`` and
back; classes outside this package are found through ``custom_objects``.
"""

from __future__ import annotations

import inspect

from kerasflow.layers.base import InputSpec, Layer
from kerasflow.layers.core import (
    Activation, Dense, Dropout, Flatten, Input, InputLayer, Lambda, Reshape,
)
from kerasflow.layers.merging import Add, Average, Concatenate, Multiply, Subtract
from kerasflow.layers import convolutional as _convolutional
from kerasflow.layers import embedding as _embedding
from kerasflow.layers import normalization as _normalization
from kerasflow.layers import merging_extra as _merging_extra
from kerasflow.layers import noise as _noise
from kerasflow.layers import pooling as _pooling
from kerasflow.layers import recurrent as _recurrent
from kerasflow.layers import reshaping as _reshaping
from kerasflow.layers import wrappers as _wrappers
from kerasflow.layers.convolutional import *  # noqa: F403
from kerasflow.layers.embedding import *  # noqa: F403
from kerasflow.layers.normalization import *  # noqa: F403
from kerasflow.layers.merging_extra import *  # noqa: F403
from kerasflow.layers.noise import *  # noqa: F403
from kerasflow.layers.pooling import *  # noqa: F403
from kerasflow.layers.recurrent import *  # noqa: F403
from kerasflow.layers.reshaping import *  # noqa: F403
from kerasflow.layers.wrappers import *  # noqa: F403

_FAMILIES = (_convolutional, _pooling, _normalization, _embedding, _recurrent,
             _wrappers, _reshaping, _merging_extra, _noise)

__all__ = ["Layer", "InputSpec", "InputLayer", "Input", "Dense", "Activation",
           "Dropout", "Flatten", "Reshape", "Lambda", "Concatenate", "Add",
           "Subtract", "Multiply", "Average", "serialize", "deserialize",
           *(n for m in _FAMILIES for n in m.__all__)]


def _builtin_classes():
    import kerasflow.models as models  # noqa: PLC0415  (models are layers too)

    classes = {c.__name__: c for c in (
        InputLayer, Dense, Activation, Dropout, Flatten, Reshape, Concatenate, Add,
        Subtract, Multiply, Average)}
    for module in _FAMILIES:
        for n in module.__all__:
            cls = getattr(module, n)
            if isinstance(cls, type) and issubclass(cls, Layer):
                classes.setdefault(n, cls)
    classes.update(Sequential=models.Sequential, Model=models.Model,
                   Functional=models.Model)
    return classes


def serialize(layer) -> dict:
    """``{"class_name": ..., "config": layer.get_config()}``."""
    return {"class_name": type(layer).__name__, "config": layer.get_config()}


def deserialize(config: dict, custom_objects: dict | None = None) -> Layer:
    """Rebuilds a layer from ``serialize``'s output.

    Raises:
        ValueError: an unknown class name, naming it and how to provide it.
    """
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"A layer config is a dict with 'class_name' and "
                         f"'config'. Received: {config!r}.")
    name = config["class_name"]
    classes = _builtin_classes()
    classes.update(custom_objects or {})
    cls = classes.get(name)
    if cls is None:
        raise ValueError(
            f"Unknown layer class: '{name}'. Pass it when loading, e.g. "
            f"load_model(path, custom_objects={{'{name}': {name}}})."
        )
    from_config = getattr(cls, "from_config", None)
    if from_config is None:
        return cls(**config["config"])
    if "custom_objects" in inspect.signature(from_config).parameters:
        return from_config(config["config"], custom_objects=custom_objects)
    return from_config(config["config"])
