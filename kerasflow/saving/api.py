"""Keras 3's saving functions (``keras.saving.save_model`` ...) over
``kerasflow.saving.saving_lib`` and the ``kerasflow.utils.serialization`` registry."""

from __future__ import annotations

import os

from kerasflow import (
    activations,
    constraints,
    initializers,
    losses,
    metrics,
    optimizers,
    regularizers,
)
from kerasflow.saving import saving_lib
from kerasflow.utils import serialization

__all__ = ["deserialize_keras_object", "load_model", "load_weights", "save_model",
           "save_weights", "serialize_keras_object"]

_PLAIN = (bool, int, float, str)


def save_model(model, filepath, overwrite=True, zipped=None, **kwargs):
    """Writes ``model`` (architecture, weights, compile settings) as Keras 3's
    ``.keras`` zip file (``keras.saving.save_model``).

    Args:
        model: a Sequential or functional ``Model``.
        filepath: the file to write (``.keras`` or any name).
        overwrite: False raises when the file exists.
        zipped: accepted for Keras compatibility; the file is always one zip.

    Raises:
        NotImplementedError: a subclassed model (use ``save_weights``).
        FileExistsError: the file exists and ``overwrite`` is False.
        TypeError: unknown keyword arguments.
    """
    if kwargs:
        raise TypeError(f"Unrecognized keyword arguments passed to save_model: "
                        f"{sorted(kwargs)}")
    if zipped is False:
        raise ValueError("kerasflow writes model files as one zip. "
                         "Received: zipped=False")
    saving_lib.save_model(model, os.fspath(filepath), overwrite=overwrite)


def load_model(filepath, custom_objects=None, compile=True,  # noqa: A002
               safe_mode=True):
    """Rebuilds a model written by ``save_model`` / ``model.save``.

    Classes registered with ``register_keras_serializable`` or in an active
    ``custom_object_scope`` are found without ``custom_objects``.

    Args:
        filepath: the model file.
        custom_objects: {name: class or function} for user objects.
        compile: re-compile with the saved optimizer, loss and metrics.
        safe_mode: True (Keras' default) refuses a ``Lambda`` layer holding
            Python bytecode; nothing is ever unpickled.

    Raises:
        FileNotFoundError: no such file. ValueError: a corrupt or foreign file,
        or an unknown class (naming it and how to provide it).
    """
    return saving_lib.load_model(os.fspath(filepath),
                                 custom_objects=custom_objects, compile=compile,
                                 safe_mode=safe_mode)


def save_weights(model, filepath, overwrite=True, max_shard_size=None, **kwargs):
    """``model.save_weights(filepath)``: the weights in the checkpoint format.

    Raises:
        NotImplementedError: ``max_shard_size`` (kerasflow writes one file).
    """
    if max_shard_size is not None:
        raise NotImplementedError(f"kerasflow writes the weights as one file. "
                                  f"Received: max_shard_size={max_shard_size}")
    saving_lib.save_weights(model, os.fspath(filepath), overwrite=overwrite)


def load_weights(model, filepath, skip_mismatch=False, **kwargs):
    """``model.load_weights(filepath)``: Keras 3 ``.weights.h5``/``.keras``,
    Keras 2 ``.h5`` (``by_name=``) or kerasflow checkpoint files.

    Raises:
        NotImplementedError: ``skip_mismatch=True`` for a checkpoint file
            (loaded all or none).
    """
    saving_lib.load_weights(model, os.fspath(filepath), skip_mismatch=skip_mismatch,
                            by_name=kwargs.pop("by_name", False))


def serialize_keras_object(obj):
    """A JSON-ready description of ``obj`` (Keras 3's name): plain values and
    containers as themselves, a function by name, an object with
    ``get_config`` as ``{"class_name", "config"}`` (plus ``registered_name``
    for a registered class).

    Raises:
        TypeError: an object that is neither.
    """
    if obj is None or isinstance(obj, _PLAIN):
        return obj
    if isinstance(obj, (list, tuple)):
        return type(obj)(serialize_keras_object(x) for x in obj)
    if isinstance(obj, dict):
        return {k: serialize_keras_object(v) for k, v in obj.items()}
    out = serialization.serialize_object(obj)
    if isinstance(out, dict):  # which namespace, as Keras: a loss or a metric
        out = {"module": type(obj).__module__, **out}
    return out


def _all_objects(module: str) -> dict:
    # Every public class and function of the namespaces, the one named by the
    # config's "module" (Keras' key) last so that it wins a shared name
    # ("MeanSquaredError" is a loss and a metric).
    named = [("activations", activations), ("constraints", constraints),
             ("initializers", initializers), ("regularizers", regularizers),
             ("optimizers", optimizers), ("losses", losses), ("metrics", metrics)]
    named.sort(key=lambda item: item[0] in (module or ""))
    table = dict(serialization.registry("layer"))
    for _, mod in named:
        table.update({n: getattr(mod, n) for n in mod.__all__
                      if callable(getattr(mod, n, None))})
    if "layers" in (module or ""):
        table.update(serialization.registry("layer"))
    return table


def deserialize_keras_object(config, custom_objects=None, safe_mode=True,
                             **kwargs):
    """Rebuilds an object from ``serialize_keras_object`` output (or Keras 3's
    own dict form, whose "module" key is ignored).

    Args:
        config: None, a plain value (a string resolves to a registered object
            of that name, else stays a string), a list, or a dict: with
            "class_name" an object, else a dict of configs.
        custom_objects: {name: class or function}, searched first.
        safe_mode: accepted for Keras compatibility (nothing is unpickled).

    Raises:
        ValueError: an unknown class or name, listing the known ones.
    """
    if config is None or isinstance(config, (bool, int, float)):
        return config
    if isinstance(config, (list, tuple)):
        return type(config)(deserialize_keras_object(c, custom_objects)
                            for c in config)
    if isinstance(config, str):  # a registered name, else the string itself
        found = serialization.get_registered_object(config, custom_objects)
        return config if found is None else found
    if isinstance(config, dict) and "class_name" not in config:
        return {k: deserialize_keras_object(v, custom_objects)
                for k, v in config.items()}
    return serialization.deserialize_object(
        config, _all_objects(config.get("module")), "object", custom_objects)
