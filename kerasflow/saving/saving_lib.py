"""Saving and loading models and weights.

``model.save`` writes Keras 3's ``.keras`` file (``config.json`` in Keras'
schema via ``keras_config``, ``model.weights.h5`` in Keras' HDF5 layout via
``keras_weights``); ``load_model`` reads it, Keras 2's ``.h5`` model files,
and the zip files of earlier kerasflow versions (read only). ``save_weights``
to a ``.h5`` name writes Keras 3's ``.weights.h5``. Otherwise weights are stored in the one checkpoint format of ``kerasflow.utils.checkpoint``
(named arrays, never unpickled, CRC-checked): ``save_weights`` writes a
checkpoint file and records it in its folder's ``checkpoint`` index (as
tf.keras' ``save_weights`` does for TF-format checkpoints), so
``latest_checkpoint`` finds it and ``Saver``/Estimator readers load it; the
model file embeds the same bytes as its ``model.weights.npz`` member. Files
are written atomically. Every array is read and checked before any weight is
assigned, so a corrupt file never leaves a half-loaded model.
"""

from __future__ import annotations

import datetime
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
from kerasflow.saving import (
    config_checks,
    keras_config,
    keras_weights,
    weight_names,
)
from kerasflow.utils import checkpoint as ckpt
from kerasflow.utils import file_io

__all__ = ["save_model", "load_model", "save_weights", "load_weights", "to_json",
           "model_from_json", "to_yaml", "model_from_yaml", "model_from_config"]

FORMAT = "kerasflow-model-v1"
_CONFIG_NAME = "model.json"
_WEIGHTS_NAME = "model.weights.npz"
_KERAS_CONFIG = "config.json"
_METADATA = "metadata.json"
_H5_WEIGHTS = "model.weights.h5"
#: The Keras version whose file format ``save_model`` writes.
KERAS_VERSION = "3.15.1"


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

    optimizer = model.optimizer
    if getattr(model, "_loss_scale_wrapped", False):
        optimizer = optimizer.inner_optimizer  # what compile was given
    try:
        return {"optimizer": optimizers.serialize(optimizer),
                "loss": plain(model._loss_spec), "metrics": plain(model._metrics_spec),
                "loss_weights": plain(model._loss_weights)}
    except Exception:  # an optimizer without a config: the file stays loadable
        return None


def _keras_compile_config(model):
    cc = _compile_config(model)
    if cc is None:
        return None
    return {"optimizer": _keras_optimizer_spec(cc["optimizer"]), "loss": cc["loss"],
            "loss_weights": cc["loss_weights"],
            "metrics": cc["metrics"], "weighted_metrics": None, "run_eagerly": False,
            "steps_per_execution": 1, "jit_compile": False}


def _keras_optimizer_spec(spec):
    """An optimizer spec as Keras 3 writes it (a LossScaleOptimizer's inner
    one too)."""
    spec = {**spec, "module": "keras.optimizers"}
    spec.setdefault("registered_name", None)
    inner = spec.get("config", {}).get("inner_optimizer")
    if isinstance(inner, dict):
        spec["config"] = {**spec["config"],
                          "inner_optimizer": _keras_optimizer_spec(inner)}
    return spec


def _build_shape(model):
    inputs = getattr(model, "inputs", None) or []
    if getattr(model, "_is_functional", None) is False and not hasattr(
            model, "_stack"):
        # A subclassed model: the shape its first call built it with.
        shape = getattr(model, "_build_input_shape", None)
        return list(shape) if isinstance(shape, tuple) else None
    if getattr(model, "_is_functional", False) or not inputs:
        return None
    return list(inputs[0].shape) if len(inputs) == 1 else None


def _tensor_specs(model) -> dict:
    """{functional model name: {(layer, call, index): (shape, dtype)}} for
    ``model`` and the functional models inside it."""
    out = {}
    stack = [model]
    while stack:
        m = stack.pop()
        stack.extend(s for s in getattr(m, "layers", []) if hasattr(s, "layers"))
        if not getattr(m, "_is_functional", False):
            continue
        specs, calls = {}, {}
        for t in m.inputs:
            layer = layers.base.get_history(t)[0]
            specs[(layer.name, 0, 0)] = (list(t.shape), str(t.dtype))
        for step in m._graph_steps:
            if step.layer is None:
                continue
            k = calls.get(step.layer.name, 0)
            calls[step.layer.name] = k + 1
            for i, t in enumerate(step.outputs):
                specs[(step.layer.name, k, i)] = (
                    None if t.shape is None else list(t.shape), str(t.dtype))
        out[m.name] = specs
    return out


def save_model(model, filepath, overwrite=True):
    """Writes ``model`` as Keras 3 writes a ``.keras`` file: a zip of
    ``metadata.json``, ``config.json`` (Keras' schema, with
    ``compile_config``) and ``model.weights.h5`` (Keras' layout, the
    optimizer's variables included); Keras 3 loads it.

    Raises:
        NotImplementedError: subclassed models (no config), or ops between
            layers of a functional model; use save_weights.
        FileExistsError: the file exists and ``overwrite`` is False.
    """
    spec = keras_config.to_keras(layers.serialize(model), _build_shape(model),
                                 _tensor_specs(model))
    cc = _keras_compile_config(model)
    if cc is not None:
        spec["compile_config"] = cc
    metadata = {"keras_version": KERAS_VERSION,
                "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S"),
                "kerasflow_version": __version__}
    optimizer = model.optimizer if getattr(model, "compiled", False) else None
    weights = keras_weights.save_keras3_weights(model, optimizer)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr(_METADATA, json.dumps(metadata))
        z.writestr(_KERAS_CONFIG, json.dumps(spec))
        z.writestr(_H5_WEIGHTS, weights)
    file_io.atomic_write(filepath, buf.getvalue(), overwrite)


def save_weights(model, filepath, overwrite=True):
    """Writes the weights: a ``.h5`` name (``.weights.h5``) in Keras 3's HDF5
    layout, any other name as a checkpoint file indexed in its folder.

    Args:
        filepath: ``"w.weights.h5"`` (Keras 3) or a checkpoint name (``"w.npz"``).
        overwrite: False raises when the file exists.

    Raises:
        FileExistsError: the file exists and ``overwrite`` is False.
    """
    path = os.fspath(filepath)
    if not overwrite and os.path.exists(path):
        raise FileExistsError(f"'{path}' exists and overwrite=False.")
    if path.endswith(".h5"):
        file_io.atomic_write(path, keras_weights.save_keras3_weights(model),
                             overwrite)
        return
    arrays, metadata = _weights(model)
    ckpt.save_checkpoint(path, arrays, metadata)


def _read_weights(data: bytes, source):
    arrays, metadata = ckpt.decode_arrays(data, source)
    names = weight_names.SavedNames(arrays)
    if metadata.get("paths") is not None:
        names.paths = [str(p) for p in metadata["paths"]]
    return names, list(arrays.values())


def _check_members(z, path):
    for name in z.namelist():
        parts = name.replace("\\", "/").split("/")
        if name.startswith(("/", "\\")) or ".." in parts or ":" in parts[0]:
            raise ValueError(f"'{path}' holds a zip member with an unsafe path "
                             f"({name!r}: absolute or with '..'); refused. "
                             f"kerasflow extracts nothing, but such a file was "
                             f"not written by Keras nor kerasflow.")


def _read_zip(filepath):
    """('keras', config, h5 bytes) or ('kerasflow', config, npz bytes)."""
    path = os.fspath(filepath)
    try:
        with zipfile.ZipFile(path) as z:
            _check_members(z, path)
            members = set(z.namelist())
            if {_KERAS_CONFIG, _H5_WEIGHTS} <= members:
                text = file_io.read_zip_member(z, _KERAS_CONFIG,
                                               file_io.config_cap(), path)
                weights = file_io.read_zip_member(z, _H5_WEIGHTS,
                                                  file_io.weights_cap(), path)
                return "keras", config_checks.parse_json(text, path), weights
            if {_KERAS_CONFIG} <= members and not any(
                    m.endswith(".h5") for m in members):
                raise ValueError(f"'{path}' is a .keras file without "
                                 f"'{_H5_WEIGHTS}'; kerasflow reads Keras 3 files "
                                 f"whose weights are in one HDF5 member.")
    except (zipfile.BadZipFile, EOFError, zlib.error) as e:
        raise ValueError(f"'{path}' is not a readable kerasflow model file "
                         f"(corrupt or truncated zip: {e}).") from None
    config, weights = _open_model_file(path)
    return "kerasflow", config, weights


def _open_model_file(filepath):
    path = os.fspath(filepath)
    if not os.path.exists(path):
        raise FileNotFoundError(f"No model file at '{path}'.")
    try:
        with zipfile.ZipFile(path) as z:
            members = set(z.namelist())
            missing = {_CONFIG_NAME, _WEIGHTS_NAME} - members
            if missing:
                raise ValueError(
                    f"'{path}' is neither a Keras 3 .keras file (config.json + "
                    f"model.weights.h5) nor a kerasflow model file: it lacks "
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


def load_model(filepath, custom_objects=None, compile=True,  # noqa: A002
               safe_mode=True):
    """Rebuilds a model from a Keras 3 ``.keras`` file (written by Keras or by
    ``model.save``), a Keras 2 ``.h5`` model file, or a kerasflow zip file of
    earlier versions (read only; a warning asks to save it again).

    Args:
        custom_objects: {name: class or function} for user-defined layers,
            losses, metrics.
        compile: re-compile with the saved optimizer/loss/metrics when possible
            (and restore the optimizer's variables from a ``.keras`` file).
        safe_mode: True refuses a ``Lambda`` layer holding Python bytecode
            (Keras' rule); nothing is ever unpickled.

    Raises:
        FileNotFoundError: no file. ValueError: a corrupt, truncated or foreign
        file, a zip member with an unsafe path, a dataset over the weights cap,
        a layer class of no known module or unknown (naming it and how to pass
        it in ``custom_objects``), a Lambda under ``safe_mode``; a member
        inflating past the caps of ``kerasflow.utils.file_io`` (64 MiB config,
        16 GiB weights; zip bombs); a config past the caps of
        ``kerasflow.saving.config_checks`` (layer count, nesting) or of broken
        structure.
    """
    path = os.fspath(filepath)
    if not os.path.exists(path):
        raise FileNotFoundError(f"No model file at '{path}'.")
    with open(path, "rb") as f:
        head = f.read(8)
    if keras_weights.is_hdf5(head):
        return _load_keras2_model(path, custom_objects, compile, safe_mode)
    kind, config, weights = _read_zip(path)
    if kind == "keras":
        return _load_keras3_model(path, config, weights, custom_objects, compile,
                                  safe_mode)
    warnings.warn(f"'{path}' is a model file of an earlier kerasflow version; it "
                  f"loads, but save it again (model.save('x.keras')) to write "
                  f"Keras 3's format.", stacklevel=2)
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


def _keras_model(spec, custom_objects, safe_mode, source):
    config_checks.check_model_config(spec, source)
    ours = keras_config.from_keras(spec, custom_objects, safe_mode, source)
    try:
        return layers.deserialize(ours, custom_objects)
    except TypeError as e:  # an argument of Keras' that kerasflow lacks
        raise ValueError(f"'{source}' holds a layer kerasflow cannot rebuild as "
                         f"saved: {e}") from None


def _keras_optimizer(config, source):
    if not isinstance(config, dict):
        return config
    inner = {k: v for k, v in (config.get("config") or {}).items() if v is not None}
    if isinstance(inner.get("inner_optimizer"), dict):  # a LossScaleOptimizer
        return optimizers.LossScaleOptimizer(
            _keras_optimizer(inner.pop("inner_optimizer"), source),
            **{k: v for k, v in inner.items()
               if k in ("name", "initial_scale", "dynamic_growth_steps")})
    cls = optimizers.deserialize({"class_name": config.get("class_name"),
                                  "config": {}}).__class__
    allowed = keras_config._params(cls)
    if allowed is not None:
        inner = {k: v for k, v in inner.items() if k in allowed}
    return optimizers.deserialize({"class_name": config["class_name"],
                                   "config": inner})


def _compile_keras(model, cc, source):
    if not cc or cc.get("loss") is None:
        return False
    try:
        model.compile(optimizer=_keras_optimizer(cc.get("optimizer"), source),
                      loss=cc["loss"], metrics=cc.get("metrics"),
                      loss_weights=cc.get("loss_weights"))
        return True
    except (ValueError, TypeError, KeyError) as e:
        warnings.warn(f"Loaded '{source}' uncompiled: {e}", stacklevel=3)
        return False


def _load_keras3_model(path, spec, weights, custom_objects, compile, safe_mode):
    if not isinstance(spec, dict):
        raise ValueError(f"'{path}': config.json expects a model config "
                         f"{{'class_name': ..., 'config': {{...}}}}. Received: "
                         f"{type(spec).__name__}.")
    model = _keras_model(spec, custom_objects, safe_mode, path)
    shape = (spec.get("build_config") or {}).get("input_shape")
    if not model.built and isinstance(shape, list) and shape and all(
            d is None or isinstance(d, int) for d in shape):
        # A subclassed model has weights only once called (Keras'
        # build_from_config): called on a symbolic input of the saved shape.
        model(layers.Input(batch_shape=tuple(shape)))
    compiled = compile and _compile_keras(model, spec.get("compile_config"), path)
    optimizer = None
    if compiled:
        model.optimizer.build(model.trainable_weights)
        optimizer = model.optimizer
    with keras_weights.open_h5(weights, path) as h5:
        keras_weights.load_keras3_weights(model, h5, path, optimizer=optimizer)
    return model


def _load_keras2_model(path, custom_objects, compile, safe_mode):
    with open(path, "rb") as f:
        data = f.read()
    with keras_weights.open_h5(data, path) as h5:
        raw = h5.attrs.get("model_config")
        if raw is None:
            raise ValueError(f"'{path}' is an HDF5 file without a "
                             f"'model_config' attribute: a weights file, not a "
                             f"model. Build the model and call load_weights.")
        text = raw.decode("utf8") if isinstance(raw, bytes) else str(raw)
        if len(text) > file_io.config_cap():
            raise ValueError(f"'{path}': model_config is {len(text)} bytes, "
                             f"over the config cap.")
        spec = config_checks.parse_json(text, path)
        model = _keras_model(spec, custom_objects, safe_mode, path)
        keras_weights.load_keras2_weights(model, h5, path)
        raw = h5.attrs.get("training_config")
    if compile and raw is not None:
        text = raw.decode("utf8") if isinstance(raw, bytes) else str(raw)
        tc = config_checks.parse_json(text, path)
        if isinstance(tc, dict):
            _compile_keras(model, {"optimizer": tc.get("optimizer_config"),
                                   "loss": tc.get("loss"),
                                   "metrics": tc.get("metrics")}, path)
    return model


def load_weights(model, filepath, skip_mismatch=False, by_name=False):
    """Assigns weights from a Keras 3 ``.weights.h5`` or ``.keras`` file, a
    Keras 2 ``.h5`` file (by layer order, or ``by_name``), a ``save_weights``
    checkpoint or an earlier kerasflow model file (matched by weight name,
    else by layer structure: ``weight_names.py``).

    Args:
        skip_mismatch: HDF5 files only: skip layers whose weights differ in
            count or shape instead of raising.
        by_name: Keras 2 files only: match layers by name.

    Raises:
        ValueError: unreadable file, pickle payload, weights that match neither
            by name nor by structure (listing the unmatched names of both
            sides), or a shape mismatch naming the layer and both shapes; no
            weight changes then.
    """
    path = os.fspath(filepath)
    if not os.path.exists(path):
        raise FileNotFoundError(f"No weights file at '{path}'.")
    with open(path, "rb") as f:
        data = f.read()
    if keras_weights.is_hdf5(data):
        with keras_weights.open_h5(data, path) as h5:
            if "layer_names" in h5.attrs or "model_weights" in h5:
                keras_weights.load_keras2_weights(model, h5, path, by_name,
                                                  skip_mismatch)
            else:
                keras_weights.load_keras3_weights(model, h5, path, skip_mismatch)
        return
    if skip_mismatch or by_name:
        raise NotImplementedError(
            f"skip_mismatch and by_name apply to HDF5 weight files; "
            f"'{path}' is a checkpoint, loaded all or none. Received: "
            f"skip_mismatch={skip_mismatch}, by_name={by_name}")
    if zipfile.is_zipfile(io.BytesIO(data)):
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            _check_members(z, path)
            members = z.namelist()
            if _H5_WEIGHTS in members:
                h5data = file_io.read_zip_member(z, _H5_WEIGHTS,
                                                 file_io.weights_cap(), path)
                with keras_weights.open_h5(h5data, path) as h5:
                    keras_weights.load_keras3_weights(model, h5, path)
                return
            if _WEIGHTS_NAME in members:
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
