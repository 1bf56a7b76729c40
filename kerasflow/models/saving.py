"""Saving and loading: one zip file = architecture JSON + weights ``.npz``.

Files are written to a temporary file in the target folder and renamed into
place, so a crash never leaves a half-written file. Loading reads weights with
``allow_pickle=False``: a file carrying a pickle payload is refused, never run.
Every array is read and checked before any weight is assigned, so a corrupt file
never leaves a half-loaded model.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import warnings
import zipfile

import numpy as np
import yaml

from kerasflow import backend as K
from kerasflow.models import weight_names

__all__ = ["save_model", "load_model", "save_weights", "load_weights", "to_json",
           "model_from_json", "to_yaml", "model_from_yaml", "model_from_config"]

FORMAT = "kerasflow-model-v1"
_CONFIG_NAME = "model.json"
_WEIGHTS_NAME = "model.weights.npz"


def _atomic_write(path, data: bytes, overwrite=True):
    path = os.fspath(path)
    if not overwrite and os.path.exists(path):
        raise FileExistsError(f"'{path}' exists and overwrite=False.")
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def _weights_bytes(model) -> bytes:
    # Arrays in model.weights order under unique, stable names and layer-class
    # paths (weight_names.py), which loading matches, not positions.
    buf = io.BytesIO()
    weights = model.weights
    arrays = {f"w{i:04d}": w.numpy() for i, w in enumerate(weights)}
    names, paths = weight_names.weight_keys(model)
    np.savez(buf, __names__=np.array(names, dtype=np.str_),
             __paths__=np.array(paths, dtype=np.str_), **arrays)
    return buf.getvalue()


def _model_config(model) -> dict:
    from kerasflow import layers, __version__  # noqa: PLC0415

    return {"format": FORMAT, "kerasflow_version": __version__,
            "model": layers.serialize(model), "compile": _compile_config(model)}


def _compile_config(model):
    if not getattr(model, "compiled", False):
        return None
    from kerasflow import optimizers  # noqa: PLC0415

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
        z.writestr(_WEIGHTS_NAME, _weights_bytes(model))
    _atomic_write(filepath, buf.getvalue(), overwrite)


def save_weights(model, filepath, overwrite=True):
    """Writes the weights as a ``.npz`` file (names plus one array per weight)."""
    _atomic_write(filepath, _weights_bytes(model), overwrite)


def _read_npz(data: bytes, source):
    try:
        npz = np.load(io.BytesIO(data), allow_pickle=False)
        names = weight_names.SavedNames(str(n) for n in npz["__names__"])
        if "__paths__" in npz.files:
            names.paths = [str(p) for p in npz["__paths__"]]
        arrays = [npz[f"w{i:04d}"] for i in range(len(names))]
    except ValueError as e:
        if "allow_pickle" in str(e) or "Object arrays" in str(e):
            raise ValueError(
                f"'{source}' holds a pickled (object) array; kerasflow never "
                f"unpickles model files. Re-save the weights as numeric arrays."
            ) from None
        raise ValueError(f"'{source}' has unreadable weights: {e}") from None
    except (KeyError, OSError, zipfile.BadZipFile, EOFError) as e:
        raise ValueError(f"'{source}' has unreadable or incomplete weights: "
                         f"{e}") from None
    return names, arrays


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
            config_text = z.read(_CONFIG_NAME)
            weights = z.read(_WEIGHTS_NAME)
    except (zipfile.BadZipFile, EOFError, _zlib_error()) as e:
        raise ValueError(f"'{path}' is not a readable kerasflow model file "
                         f"(corrupt or truncated zip: {e}).") from None
    try:
        config = json.loads(config_text)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"'{path}' has a corrupt model.json: {e}") from None
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        raise ValueError(f"'{path}' is not a kerasflow model file (format "
                         f"{config.get('format') if isinstance(config, dict) else None!r},"
                         f" expected {FORMAT!r}).")
    return config, weights


def _zlib_error():
    import zlib  # noqa: PLC0415

    return zlib.error


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
        pass it in ``custom_objects``).
    """
    config, weights = _open_model_file(filepath)
    names, arrays = _read_npz(weights, filepath)
    model = model_from_config(config["model"], custom_objects)
    _assign_all(model, names, arrays, filepath)
    cc = config.get("compile")
    if compile and cc and cc.get("loss") is not None:
        try:
            from kerasflow import optimizers  # noqa: PLC0415

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
                data = z.read(_WEIGHTS_NAME)
    names, arrays = _read_npz(data, path)
    _assign_all(model, names, arrays, path)


def model_from_config(config, custom_objects=None):
    """Builds a model (with fresh weights) from ``{"class_name", "config"}``."""
    from kerasflow import layers  # noqa: PLC0415

    return layers.deserialize(config, custom_objects)


def to_json(model, **kwargs):
    """The architecture as JSON (no weights)."""
    from kerasflow import layers  # noqa: PLC0415

    return json.dumps(layers.serialize(model), **kwargs)


def model_from_json(json_string, custom_objects=None):
    """Rebuilds a model from ``to_json`` output (fresh weights).

    Raises:
        ValueError: invalid JSON or an unknown layer class.
    """
    try:
        config = json.loads(json_string)
    except json.JSONDecodeError as e:
        raise ValueError(f"model_from_json received invalid JSON: {e}") from None
    return model_from_config(config, custom_objects)


def to_yaml(model, **kwargs):
    """The architecture as YAML (plain mappings and lists only)."""
    from kerasflow import layers  # noqa: PLC0415

    return yaml.safe_dump(json.loads(json.dumps(layers.serialize(model))), **kwargs)


def model_from_yaml(yaml_string, custom_objects=None):
    """Rebuilds a model from ``to_yaml`` output; parsed with ``yaml.safe_load``
    only, so YAML tags that construct Python objects are refused.

    Raises:
        ValueError: invalid or unsafe YAML, or an unknown layer class.
    """
    try:
        config = yaml.safe_load(yaml_string)
    except yaml.YAMLError as e:
        raise ValueError(f"model_from_yaml received invalid or unsafe YAML: "
                         f"{e}") from None
    return model_from_config(config, custom_objects)
