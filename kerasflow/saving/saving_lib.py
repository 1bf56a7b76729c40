"""Saving and loading: one zip file = architecture JSON + weights checkpoint.

Weights are stored in the one checkpoint format of ``kerasflow.utils.checkpoint``
(named arrays, never unpickled, CRC-checked): ``save_weights`` writes a
checkpoint file and records it in its folder's ``checkpoint`` index (as
tf.keras' ``save_weights`` does for TF-format checkpoints), so
``latest_checkpoint`` finds it and ``Saver``/Estimator readers load it; the
model file embeds the same bytes as its ``model.weights.npz`` member. Files
are written atomically. Every array is read and checked before any weight is
assigned, so a corrupt file never leaves a half-loaded model.
"""

from __future__ import annotations

import io
import json
import os
import warnings
import zipfile
import zlib

import yaml

from kerasflow import backend as K
from kerasflow import layers, optimizers
from kerasflow._version import __version__
from kerasflow.saving import config_checks, weight_names
from kerasflow.utils import checkpoint as ckpt
from kerasflow.utils import file_io

__all__ = ["save_model", "load_model", "save_weights", "load_weights", "to_json",
           "model_from_json", "to_yaml", "model_from_yaml", "model_from_config"]

FORMAT = "kerasflow-model-v1"
_CONFIG_NAME = "model.json"
_WEIGHTS_NAME = "model.weights.npz"


def _weights(model) -> tuple[dict, dict]:
    # {unique stable name: array} in model.weights order, plus the layer-class
    # paths (weight_names.py) that loading matches when names differ.
    names, paths = weight_names.weight_keys(model)
    arrays = {n: w.numpy() for n, w in zip(names, model.weights)}
    return arrays, {"paths": paths}


def _model_config(model) -> dict:
    return {"format": FORMAT, "kerasflow_version": __version__,
            "model": layers.serialize(model), "compile": _compile_config(model)}


def _compile_config(model):
    if not getattr(model, "compiled", False):
        return None
    def plain(v):
        try:
            json.dumps(v)
            return v
        except TypeError:
            return None

    try:
        return {"optimizer": optimizers.serialize(model.optimizer),
                "loss": plain(model._loss_spec), "metrics": plain(model._metrics_spec),
                "loss_weights": plain(model._loss_weights)}
    except Exception:  # an optimizer without a config: the file stays loadable
        return None


def save_model(model, filepath, overwrite=True):
    """Writes ``model`` to one zip file holding ``model.json`` and the weights.

    Raises:
        NotImplementedError: subclassed models (no config); use save_weights.
        FileExistsError: the file exists and ``overwrite`` is False.
    """
    config = json.dumps(_model_config(model), indent=1)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(_CONFIG_NAME, config)
        z.writestr(_WEIGHTS_NAME, ckpt.encode_arrays(*_weights(model)))
    file_io.atomic_write(filepath, buf.getvalue(), overwrite)


def save_weights(model, filepath, overwrite=True):
    """Writes the weights as a checkpoint file and indexes it in its folder.

    Args:
        filepath: the checkpoint file (any name, e.g. ``"w.npz"``).
        overwrite: False raises when the file exists.

    Raises:
        FileExistsError: the file exists and ``overwrite`` is False.
    """
    path = os.fspath(filepath)
    if not overwrite and os.path.exists(path):
        raise FileExistsError(f"'{path}' exists and overwrite=False.")
    arrays, metadata = _weights(model)
    ckpt.save_checkpoint(path, arrays, metadata)


def _read_weights(data: bytes, source):
    arrays, metadata = ckpt.decode_arrays(data, source)
    names = weight_names.SavedNames(arrays)
    if metadata.get("paths") is not None:
        names.paths = [str(p) for p in metadata["paths"]]
    return names, list(arrays.values())


def _open_model_file(filepath):
    path = os.fspath(filepath)
    if not os.path.exists(path):
        raise FileNotFoundError(f"No model file at '{path}'.")
    try:
        with zipfile.ZipFile(path) as z:
            members = set(z.namelist())
            missing = {_CONFIG_NAME, _WEIGHTS_NAME} - members
            if missing:
                raise ValueError(f"'{path}' is not a kerasflow model file: it lacks "
                                 f"{sorted(missing)}.")
            config_text = file_io.read_zip_member(z, _CONFIG_NAME,
                                                  file_io.config_cap(), path)
            weights = file_io.read_zip_member(z, _WEIGHTS_NAME,
                                              file_io.weights_cap(), path)
    except (zipfile.BadZipFile, EOFError, zlib.error) as e:
        raise ValueError(f"'{path}' is not a readable kerasflow model file "
                         f"(corrupt or truncated zip: {e}).") from None
    config = config_checks.parse_json(config_text, path)
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        raise ValueError(f"'{path}' is not a kerasflow model file (format "
                         f"{config.get('format') if isinstance(config, dict) else None!r},"
                         f" expected {FORMAT!r}).")
    return config, weights


def _assign_all(model, names, arrays, source):
    for a, n in zip(arrays, names):
        if a.dtype.kind not in "biuf":
            raise ValueError(f"'{source}': weight {n!r} has non-numeric dtype "
                             f"{a.dtype}.")
    arrays = weight_names.match_weights(model, names, arrays, source)
    K.assign_all(model.weights, arrays, f"model '{model.name}' (from '{source}')")


def load_model(filepath, custom_objects=None, compile=True):  # noqa: A002
    """Rebuilds a model saved with ``model.save``.

    Args:
        custom_objects: {name: class or function} for user-defined layers,
            losses, metrics.
        compile: re-compile with the saved optimizer/loss/metrics when possible.

    Raises:
        FileNotFoundError: no file. ValueError: a corrupt, truncated or foreign
        file, a pickle payload, or an unknown layer class (naming it and how to
        pass it in ``custom_objects``); a member inflating past the caps of
        ``kerasflow.utils.file_io`` (64 MiB config, 16 GiB weights; zip
        bombs); a config past the caps of ``kerasflow.saving.config_checks``
        (layer count, nesting) or of broken structure.
    """
    config, weights = _open_model_file(filepath)
    names, arrays = _read_weights(weights, filepath)
    model = _from_config(config.get("model"), custom_objects, filepath)
    _assign_all(model, names, arrays, filepath)
    cc = config.get("compile")
    if compile and cc and cc.get("loss") is not None:
        try:
            model.compile(optimizer=optimizers.deserialize(cc["optimizer"]),
                          loss=cc["loss"], metrics=cc.get("metrics"),
                          loss_weights=cc.get("loss_weights"))
        except (ValueError, TypeError, KeyError) as e:
            warnings.warn(f"Loaded '{filepath}' uncompiled: {e}", stacklevel=2)
    return model


def load_weights(model, filepath):
    """Assigns weights from a ``save_weights`` .npz file or a model zip file,
    matched by weight name, else by layer structure (``weight_names.py``).

    Raises:
        ValueError: unreadable file, pickle payload, weights that match neither
            by name nor by structure (listing the unmatched names of both
            sides), or a shape mismatch; no weight changes then.
    """
    path = os.fspath(filepath)
    if not os.path.exists(path):
        raise FileNotFoundError(f"No weights file at '{path}'.")
    with open(path, "rb") as f:
        data = f.read()
    if zipfile.is_zipfile(io.BytesIO(data)):
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            if _WEIGHTS_NAME in z.namelist():
                data = file_io.read_zip_member(z, _WEIGHTS_NAME,
                                               file_io.weights_cap(), path)
    names, arrays = _read_weights(data, path)
    _assign_all(model, names, arrays, path)


def model_from_config(config, custom_objects=None):
    """Builds a model (with fresh weights) from ``{"class_name", "config"}``."""
    return _from_config(config, custom_objects, "model_from_config input")


def _from_config(config, custom_objects, source):
    config_checks.check_model_config(config, source)
    return layers.deserialize(config, custom_objects)


def to_json(model, **kwargs):
    """The architecture as JSON (no weights)."""
    return json.dumps(layers.serialize(model), **kwargs)


def model_from_json(json_string, custom_objects=None):
    """Rebuilds a model from ``to_json`` output (fresh weights).

    Raises:
        ValueError: invalid JSON or an unknown layer class.
    """
    config = config_checks.parse_json(json_string, "model_from_json input")
    return _from_config(config, custom_objects, "model_from_json input")


def to_yaml(model, **kwargs):
    """The architecture as YAML (plain mappings and lists only)."""
    return yaml.safe_dump(json.loads(json.dumps(layers.serialize(model))), **kwargs)


def model_from_yaml(yaml_string, custom_objects=None):
    """Rebuilds a model from ``to_yaml`` output; parsed with ``yaml.safe_load``
    only, so YAML tags that construct Python objects are refused.

    Raises:
        ValueError: invalid or unsafe YAML, or an unknown layer class.
    """
    config = config_checks.parse_yaml(yaml_string, "model_from_yaml input")
    return _from_config(config, custom_objects, "model_from_yaml input")
