"""The one way to turn an identifier into an object, and back.

Every ``get`` / ``serialize`` / ``deserialize`` of kerasflow (activations,
initializers, regularizers, constraints, losses, metrics, optimizers, layers and
models) goes through ``get_object`` / ``serialize_object`` /
``deserialize_object`` here, after Keras 3's ``keras.saving``
(``serialize_keras_object``, ``deserialize_keras_object``, ``get_registered_object``):
a built-in function serializes to its name, an object to
``{"class_name": cls.__name__, "config": obj.get_config()}``.

Lookup tables are per kind (``registry("layer")``). Layer classes defined in
kerasflow register themselves by class name (``Layer.__init_subclass__``), so
``layers.deserialize`` finds ``Sequential`` and ``Model`` without importing
``models``; user classes come in through ``custom_objects``, the
``register_serializable`` decorator (per kind), Keras 3's
``register_keras_serializable`` (the global custom objects, "package>name";
``get_custom_objects``) or a ``custom_object_scope``, all searched by every
deserialization. Pure Python: it imports nothing from kerasflow.
"""

from __future__ import annotations

import difflib
import inspect
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["CustomObjectScope", "GLOBAL_CUSTOM_OBJECTS", "custom_object_scope",
           "deserialize", "deserialize_object", "did_you_mean", "get",
           "get_custom_objects",
           "Configurable", "get_object", "get_registered_name",
           "get_registered_object", "lookup_functions", "register_keras_serializable",
           "register_serializable", "registry", "serialize", "serialize_object",
           "to_snake_case"]

_REGISTRIES: dict[str, dict[str, Any]] = {}
# Keras 3's global custom objects ("package>name" -> object), searched by every
# deserialization, and the reverse map naming a registered object.
GLOBAL_CUSTOM_OBJECTS: dict[str, Any] = {}
_REGISTERED_NAMES: dict[Any, str] = {}


def registry(kind: str) -> dict[str, Any]:
    """The lookup table (name -> class or function) of one kind ("layer"...)."""
    return _REGISTRIES.setdefault(kind, {})


def register_serializable(kind: str = "layer", name: str | None = None):
    """Class decorator adding a user class to ``registry(kind)``, so configs
    naming it load without ``custom_objects`` (Keras'
    ``register_keras_serializable``).

    Raises:
        ValueError: another class is registered under the same name.
    """

    def wrap(cls):
        key = name or cls.__name__
        table = registry(kind)
        if table.get(key, cls) is not cls and _is_builtin(table[key]):
            raise ValueError(f"A built-in {kind} is already registered as "
                             f"'{key}'. Received: {cls!r}; pass name=.")
        table[key] = cls
        return cls

    return wrap


def register_keras_serializable(package: str = "Custom", name: str | None = None):
    """Decorator registering a class or function under ``"package>name"`` in
    the global custom objects, so saved configs naming it load without
    ``custom_objects`` (Keras 3's ``keras.saving.register_keras_serializable``).

    Args:
        package: the namespace part of the registered name.
        name: the name part; the object's ``__name__`` by default.

    Raises:
        ValueError: a class without ``get_config``.

    Example::

        >>> @register_keras_serializable(package="my_pkg")
        ... class Scale(kerasflow.layers.Layer): ...
        >>> get_registered_name(Scale)
        'my_pkg>Scale'
    """

    def wrap(obj):
        key = f"{package}>{name or obj.__name__}"
        if inspect.isclass(obj) and not hasattr(obj, "get_config"):
            raise ValueError("Cannot register a class that does not have a "
                             "get_config() method.")
        GLOBAL_CUSTOM_OBJECTS[key] = obj
        _REGISTERED_NAMES[obj] = key
        return obj

    return wrap


def get_registered_name(obj) -> str:
    """``"package>name"`` for a registered object, else its ``__name__``."""
    return _REGISTERED_NAMES.get(obj, getattr(obj, "__name__", None))


def get_custom_objects() -> dict[str, Any]:
    """The global custom objects dict (mutable, as Keras'): entries added to it
    are found by every deserialization."""
    return GLOBAL_CUSTOM_OBJECTS


def get_registered_object(name: str, custom_objects: Mapping | None = None,
                          module_objects: Mapping | None = None) -> Any:
    """The object registered as ``name``: in an active ``custom_object_scope``,
    the global custom objects, ``custom_objects`` or ``module_objects``; None
    when absent."""
    for table in (getattr(_active, "objects", {}), GLOBAL_CUSTOM_OBJECTS,
                  custom_objects or {}, module_objects or {}):
        if name in table:
            return table[name]
    return None


class CustomObjectScope:
    """Context manager making objects findable by name during deserialization
    (Keras 3's ``keras.saving.CustomObjectScope``).

    Args:
        *objects: dicts of name -> class or function.

    Raises:
        TypeError: an argument that is not a dict.

    Example::

        >>> with custom_object_scope({"Scale": Scale}):
        ...     model = load_model("m.kf")
    """

    def __init__(self, *objects: Mapping[str, Any]):
        for obj in objects:
            if not isinstance(obj, Mapping):
                raise TypeError(f"Arguments to custom_object_scope should be "
                                f"dicts. Received: {obj!r}")
        self.custom_objects = {k: v for obj in objects for k, v in obj.items()}
        self._saved: list = []

    def __enter__(self):
        saved = getattr(_active, "objects", {})
        self._saved.append(saved)
        _active.objects = {**saved, **self.custom_objects}
        return self

    def __exit__(self, *exc):
        _active.objects = self._saved.pop()
        return False


custom_object_scope = CustomObjectScope


class Configurable:
    """Base of the objects a config rebuilds (initializers, regularizers):
    ``get_config()`` (empty here), ``from_config`` (``cls(**config)``) and a
    repr that shows the config."""

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict):
        return cls(**config)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


def _is_builtin(obj) -> bool:
    return getattr(obj, "__module__", "").startswith("kerasflow.")


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
        out = {"class_name": type(obj).__name__, "config": obj.get_config()}
        if type(obj) in _REGISTERED_NAMES:
            out["registered_name"] = _REGISTERED_NAMES[type(obj)]
        return out
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return obj.__name__
    raise TypeError(
        f"Cannot serialize {obj!r}: expected a function or an object with "
        f"get_config(). Received: type={type(obj).__name__}."
    )


# custom_objects of the deserialize calls in progress on this thread, so that a
# from_config deserializing nested objects (a wrapped function) still sees them.
_active = threading.local()


def did_you_mean(name: str, names, namespace: str) -> str:
    """The hint "Did you mean 'x'?" for the names closest to a misspelled ``name``
    (difflib, case-insensitive), else where the valid names are listed; a
    short list of names is given whole."""
    names = sorted(set(names))
    if len(names) <= 12:
        return f" Valid names are: {', '.join(names)}."
    by_lower = {n.lower(): n for n in names}
    close = difflib.get_close_matches(str(name).lower(), list(by_lower), n=3,
                                      cutoff=0.6)
    if close:
        return " Did you mean " + " or ".join(
            f"'{by_lower[c]}'" for c in close) + "?"
    return f" None of the {len(names)} known names is close: see {namespace}."


def _unknown(kind: str, name: str, table: Mapping, custom_objects,
             is_class: bool) -> ValueError:
    valid = ", ".join(sorted(set(table) | set(custom_objects or {})))
    if is_class:
        return ValueError(
            f"Unknown {kind} class: '{name}'. Known classes: {valid}. Pass it "
            f"when loading, e.g. load_model(path, custom_objects={{'{name}': "
            f"{name}}}), or decorate it with register_serializable('{kind}')."
        )
    hint = did_you_mean(name, set(table) | set(custom_objects or {}),
                        f"kerasflow.{kind}s")
    return ValueError(
        f"Unknown {kind} identifier: '{name}'.{hint} Received: identifier={name!r}."
    )


def _lookup(name, table: Mapping, kind: str, custom_objects, is_class=False,
            case_insensitive=False):
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    if name in table:
        return table[name]
    if case_insensitive and isinstance(name, str):
        for key, obj in table.items():
            if key.lower() == name.lower():
                return obj
    raise _unknown(kind, name, table, custom_objects, is_class)


def _from_config(cls, config: dict, custom_objects):
    from_config = getattr(cls, "from_config", None)
    if from_config is None:
        return cls(**config)
    try:
        params = inspect.signature(from_config).parameters
    except (TypeError, ValueError):
        params = {}
    if "custom_objects" in params:
        return from_config(config, custom_objects=custom_objects)
    return from_config(config)


def deserialize_object(
    config: str | dict,
    registry: Mapping[str, Any] | str,
    kind: str,
    custom_objects: Mapping[str, Any] | None = None,
    case_insensitive: bool = False,
) -> Any:
    """Rebuilds an object from a name or a ``{"class_name", "config"}`` dict.

    A name resolves to its registry entry; a class found that way is
    instantiated with its defaults (as Keras' ``get('glorot_uniform')``). A dict
    resolves ``class_name`` and calls ``cls.from_config(config)`` (passing
    ``custom_objects=`` when it takes them), or ``cls(**config)``.

    Args:
        config: a name or a dict with keys "class_name" and "config" (other
            keys, e.g. Keras' "module", are ignored).
        registry: name -> function or class, or a kind whose ``registry(kind)``
            to use.
        kind: what is looked up ("activation", "loss"...), for messages.
        custom_objects: extra name -> object entries, searched first.
        case_insensitive: names also match ignoring case ("adam", "Adam").

    Raises:
        ValueError: an unknown name or class, listing the valid ones (and, for
            a class, how to pass it).
        TypeError: ``config`` is neither a str nor such a dict.
    """
    table = _REGISTRIES.get(registry, {}) if isinstance(registry, str) else registry
    custom_objects = {**GLOBAL_CUSTOM_OBJECTS, **getattr(_active, "objects", {}),
                      **(custom_objects or {})}
    if isinstance(config, str):
        obj = _lookup(config, table, kind, custom_objects,
                      case_insensitive=case_insensitive)
        return obj() if inspect.isclass(obj) else obj
    if isinstance(config, dict) and "class_name" in config:
        name, inner = config["class_name"], config.get("config") or {}
        if config.get("registered_name") in custom_objects:
            name = config["registered_name"]
        if name == "function":  # Keras 3's form for a serialized function.
            return _lookup(inner, table, kind, custom_objects)
        cls = _lookup(name, table, kind, custom_objects, True, case_insensitive)
        if not inspect.isclass(cls):
            return cls
        saved = getattr(_active, "objects", {})
        _active.objects = custom_objects
        try:
            return _from_config(cls, dict(inner), custom_objects)
        finally:
            _active.objects = saved
    raise TypeError(
        f"Could not interpret {kind} config: expected a name or a dict with "
        f"'class_name' and 'config'. Received: config={config!r}."
    )


def get_object(
    identifier: Any,
    registry: Mapping[str, Any] | str,
    kind: str,
    custom_objects: Mapping[str, Any] | None = None,
    check: Callable[[Any], bool] = callable,
    case_insensitive: bool = False,
) -> Any:
    """Resolves a name, a config dict, or passes through a ready object.

    Args:
        identifier: None, a name, a config dict, or an object for which
            ``check(identifier)`` holds (returned as is).
        registry: name -> function or class, or a kind (see ``registry``).
        kind: what is looked up, for messages.
        custom_objects: extra name -> object entries.
        check: which objects are accepted unchanged (default: callables).
        case_insensitive: names also match ignoring case.

    Returns:
        None for None; otherwise the resolved object.

    Raises:
        ValueError: an unknown name. TypeError: an identifier of another type.
    """
    if identifier is None:
        return None
    if isinstance(identifier, (str, dict)):
        return deserialize_object(identifier, registry, kind, custom_objects,
                                  case_insensitive)
    if check(identifier):
        return identifier
    raise TypeError(
        f"Could not interpret {kind} identifier: expected None, a name, a config "
        f"dict or a callable. Received: identifier={identifier!r}."
    )


def lookup_functions(module: str, table: Mapping[str, Any], kind: str,
                     get_doc: str, deserialize_doc: str | None = None) -> tuple:
    """A package's public ``serialize``, ``deserialize`` and ``get`` for one
    kind (``initializers.get``...): ``serialize_object``, and
    ``deserialize_object`` / ``get_object`` over the package's ``table``.

    Args:
        module: the package's ``__name__``, the functions' ``__module__``.
        table: name -> function or class.
        kind: what is looked up ("initializer"...), for messages.
        get_doc: ``get``'s docstring (the identifiers the package takes).
        deserialize_doc: ``deserialize``'s docstring; by default it names
            ``kind``.

    Returns:
        ``(serialize, deserialize, get)``.
    """

    def deserialize(config, custom_objects=None):
        return deserialize_object(config, table, kind, custom_objects)

    def get(identifier):
        return get_object(identifier, table, kind)

    deserialize.__doc__ = deserialize_doc or (
        f"A new {kind} from a name or a class_name/config dict.\n\n"
        f"    Raises:\n        ValueError: an unknown name, listing the valid "
        f"ones.\n    ")
    get.__doc__ = get_doc
    for fn in (deserialize, get):
        fn.__module__, fn.__qualname__ = module, fn.__name__
    return serialize_object, deserialize, get


# Keras 3's names for the same three functions.
get = get_object
serialize = serialize_object
deserialize = deserialize_object
