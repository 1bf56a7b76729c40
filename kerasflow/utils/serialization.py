"""Name-based lookup, serialization and deserialization of Keras objects.

The shared machinery behind ``get`` / ``serialize`` / ``deserialize`` of the L1
modules (activations, initializers, regularizers, losses, metrics), after Keras 3's
``keras.saving.serialize_keras_object``: a built-in function serializes to its
name, an object to ``{"class_name": cls.__name__, "config": obj.get_config()}``.
Pure Python: it imports nothing from kerasflow.
"""

from __future__ import annotations

import inspect
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["deserialize_object", "get_object", "serialize_object", "to_snake_case"]


def to_snake_case(name: str) -> str:
    """'CategoricalAccuracy' -> 'categorical_accuracy' (Keras' naming rule)."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def serialize_object(obj: Any) -> str | dict | None:
    """A JSON-friendly description of ``obj``.

    Args:
        obj: None, a function (serialized to its ``__name__``) or an object with
            ``get_config()``.

    Returns:
        None, a name, or ``{"class_name": ..., "config": ...}``.

    Raises:
        TypeError: ``obj`` is neither a function nor has ``get_config``.
    """
    if obj is None:
        return None
    if hasattr(obj, "get_config") and not inspect.isclass(obj):
        return {"class_name": type(obj).__name__, "config": obj.get_config()}
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return obj.__name__
    raise TypeError(
        f"Cannot serialize {obj!r}: expected a function or an object with "
        f"get_config(). Received: type={type(obj).__name__}."
    )


# custom_objects of the deserialize calls in progress on this thread, so that a
# from_config deserializing nested objects (a wrapped function) still sees them.
_active = threading.local()


def _unknown(kind: str, name: str, registry: Mapping, custom_objects) -> ValueError:
    valid = sorted(set(registry) | set(custom_objects or {}))
    return ValueError(
        f"Unknown {kind} identifier: '{name}'. Valid names are: "
        f"{', '.join(valid)}. Received: identifier={name!r}."
    )


def _lookup(name: str, registry: Mapping, kind: str, custom_objects):
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    if name in registry:
        return registry[name]
    raise _unknown(kind, name, registry, custom_objects)


def deserialize_object(
    config: str | dict,
    registry: Mapping[str, Any],
    kind: str,
    custom_objects: Mapping[str, Any] | None = None,
) -> Any:
    """Rebuilds an object from a name or a ``{"class_name", "config"}`` dict.

    A name resolves to its registry entry; a class found that way is
    instantiated with its defaults (as Keras' ``get('glorot_uniform')``). A dict
    resolves ``class_name`` and calls ``cls.from_config(config)`` (or
    ``cls(**config)``).

    Args:
        config: a name or a dict with keys "class_name" and "config".
        registry: name -> function or class.
        kind: what is looked up ("activation", "loss"...), for messages.
        custom_objects: extra name -> object entries, searched first.

    Raises:
        ValueError: an unknown name, listing the valid ones.
        TypeError: ``config`` is neither a str nor such a dict.
    """
    custom_objects = {**getattr(_active, "objects", {}), **(custom_objects or {})}
    if isinstance(config, str):
        obj = _lookup(config, registry, kind, custom_objects)
        return obj() if inspect.isclass(obj) else obj
    if isinstance(config, dict) and "class_name" in config:
        name, inner = config["class_name"], config.get("config") or {}
        if name == "function":  # Keras 3's form for a serialized function.
            return _lookup(inner, registry, kind, custom_objects)
        cls = _lookup(name, registry, kind, custom_objects)
        if not inspect.isclass(cls):
            return cls
        from_config = getattr(cls, "from_config", None)
        saved = getattr(_active, "objects", {})
        _active.objects = custom_objects
        try:
            return from_config(inner) if from_config else cls(**inner)
        finally:
            _active.objects = saved
    raise TypeError(
        f"Could not interpret {kind} config: expected a name or a dict with "
        f"'class_name' and 'config'. Received: config={config!r}."
    )


def get_object(
    identifier: Any,
    registry: Mapping[str, Any],
    kind: str,
    custom_objects: Mapping[str, Any] | None = None,
    check: Callable[[Any], bool] = callable,
) -> Any:
    """Resolves a name, a config dict, or passes through a ready object.

    Args:
        identifier: None, a name, a config dict, or an object for which
            ``check(identifier)`` holds (returned as is).
        registry: name -> function or class.
        kind: what is looked up, for messages.
        custom_objects: extra name -> object entries.
        check: which objects are accepted unchanged (default: callables).

    Returns:
        None for None; otherwise the resolved object.

    Raises:
        ValueError: an unknown name. TypeError: an identifier of another type.
    """
    if identifier is None:
        return None
    if isinstance(identifier, (str, dict)):
        return deserialize_object(identifier, registry, kind, custom_objects)
    if check(identifier):
        return identifier
    raise TypeError(
        f"Could not interpret {kind} identifier: expected None, a name, a config "
        f"dict or a callable. Received: identifier={identifier!r}."
    )
