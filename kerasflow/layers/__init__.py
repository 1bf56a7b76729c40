"""Layers (L2): the ``Layer`` base class and one module per family.

``serialize``/``deserialize`` turn a layer into ``{"class_name", "config"}`` and
back; classes outside this package are found through ``custom_objects``.
"""

from __future__ import annotations

from kerasflow.layers.base import InputSpec, Layer
from kerasflow.layers.core import (
    Activation,
    Dense,
    Dropout,
    Flatten,
    Input,
    InputLayer,
    Lambda,
    Reshape,
)
from kerasflow.layers.merging import Add, Average, Concatenate, Multiply, Subtract
from kerasflow.utils.serialization import deserialize_object, serialize_object

__all__ = ["Layer", "InputSpec", "InputLayer", "Input", "Dense", "Activation",
           "Dropout", "Flatten", "Reshape", "Lambda", "Concatenate", "Add",
           "Subtract", "Multiply", "Average", "serialize", "deserialize"]


def serialize(layer) -> dict:
    """``{"class_name": ..., "config": layer.get_config()}``."""
    return serialize_object(layer)


def deserialize(config: dict, custom_objects: dict | None = None) -> Layer:
    """Rebuilds a layer (or a model, which is a layer) from ``serialize``'s output.

    Classes are looked up in ``custom_objects``, then in the "layer" registry
    every kerasflow layer and model class joins when defined.

    Raises:
        ValueError: a malformed config, or an unknown class name, naming it
            and how to provide it.
    """
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"A layer config is a dict with 'class_name' and "
                         f"'config'. Received: {config!r}.")
    if config["class_name"] == "Functional" and "Functional" not in (
            custom_objects or {}):  # Keras' class name for functional networks
        config = {**config, "class_name": "Model"}
    return deserialize_object(config, "layer", "layer", custom_objects)
