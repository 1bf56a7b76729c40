"""Keras 3's public surface as data: the namespaces compared, the names
excluded by design (with why), and the error for a Keras name kerasflow lacks.

The one place these lists live: ``kerasflow.utils.api_coverage`` (the coverage
report) and the namespaces' module ``__getattr__`` both read them. Keras' own
name lists are in ``keras_names`` (written by ``api_coverage --update-names``
from the installed Keras), so kerasflow never imports Keras at run time.
"""

from __future__ import annotations

from kerasflow.utils import keras_names

__all__ = ["EXCLUDED", "NAMESPACES", "ALTERNATIVES", "missing_attribute",
           "qualified"]

# Keras namespace ("" is the top level) -> the kerasflow module compared with it.
NAMESPACES: dict[str, str] = {
    "": "kerasflow", "ops": "kerasflow.ops", "ops.nn": "kerasflow.ops.nn",
    "ops.numpy": "kerasflow.ops.numpy", "ops.linalg": "kerasflow.ops.linalg",
    "ops.image": "kerasflow.ops.image", "layers": "kerasflow.layers",
    "random": "kerasflow.random", "losses": "kerasflow.losses",
    "metrics": "kerasflow.metrics", "optimizers": "kerasflow.optimizers",
    "optimizers.schedules": "kerasflow.optimizers.schedules",
    "callbacks": "kerasflow.callbacks", "models": "kerasflow.models",
    "saving": "kerasflow.saving", "utils": "kerasflow.utils",
    "activations": "kerasflow.activations", "initializers": "kerasflow.initializers",
    "regularizers": "kerasflow.regularizers", "constraints": "kerasflow.constraints",
    "tree": "kerasflow.tree", "backend": "kerasflow.backend",
    "config": "kerasflow.config",
}

_WRAPPER = "wraps another backend's model"
_AUDIO = "audio processing is out of kerasflow's scope"
_BOXES = "bounding-box utilities are out of kerasflow's scope"

# Names kerasflow leaves out on purpose, per namespace, with the reason.
EXCLUDED: dict[str, dict[str, str]] = {
    "": {
        "applications": "pretrained applications need weight downloads",
        "distribution": "JAX's distribution API; use kerasflow.distribute "
                        "strategies",
        "export": "ExportArchive writes TensorFlow SavedModel, ONNX or LiteRT "
                  "artifacts, which need those runtimes; use model.save",
        "visualization": "bounding-box, segmentation-mask and image-gallery "
                         "plotting (matplotlib) is out of kerasflow's scope",
        "quantizers": "quantization is out of kerasflow's scope",
        "Quantizer": "quantization is out of kerasflow's scope",
        "src": "Keras' private implementation package, not API",
    },
    "layers": {
        "FlaxLayer": f"{_WRAPPER} (Flax on JAX)",
        "JaxLayer": f"{_WRAPPER} (JAX)",
        "TorchModuleWrapper": f"{_WRAPPER} (PyTorch)",
        "TFSMLayer": f"{_WRAPPER} (a TensorFlow SavedModel)",
        "MelSpectrogram": _AUDIO,
        "STFTSpectrogram": _AUDIO,
        "MaxNumBoundingBoxes": _BOXES,
    },
    "utils": {"audio_dataset_from_directory": _AUDIO, "bounding_boxes": _BOXES},
    "callbacks": {"OrbaxCheckpoint": "JAX's Orbax checkpointing; use "
                                     "ModelCheckpoint or BackupAndRestore"},
}

# What to use instead of a Keras name kerasflow lacks (qualified Keras name ->).
ALTERNATIVES: dict[str, str] = {
    "keras.saving.load_weights": "model.load_weights(filepath)",
    "keras.saving.save_weights": "model.save_weights(filepath)",
}


def qualified(namespace: str, name: str) -> str:
    """'keras.utils.pad_sequences' from ('utils', 'pad_sequences')."""
    return ".".join(p for p in ("keras", namespace, name) if p)


def missing_attribute(namespace: str, name: str) -> Exception:
    """The error a kerasflow namespace raises for an attribute it lacks.

    A public Keras 3 name gets ``NotImplementedError`` naming it and what to
    use instead (or why it is excluded); any other name, private and dunder
    ones included, gets ``AttributeError``, so ``hasattr`` probes keep working.

    Args:
        namespace: the Keras namespace ("" for the top level, "utils", ...).
        name: the attribute looked up.

    Returns:
        The exception to raise (the caller raises it).
    """
    module = NAMESPACES.get(namespace, "kerasflow")
    if name.startswith("_") or name not in keras_names.NAMES.get(namespace, ()):
        return AttributeError(f"module '{module}' has no attribute '{name}'")
    full = qualified(namespace, name)
    reason = EXCLUDED.get(namespace, {}).get(name)
    if reason:
        return NotImplementedError(f"{full} is excluded from kerasflow by design: "
                                   f"{reason}.")
    hint = ALTERNATIVES.get(full)
    hint = (f"instead use {hint}" if hint else
            f"docs/keras_api_coverage.md lists the names {module} offers")
    return NotImplementedError(f"{full} is not offered by kerasflow ({module}); "
                               f"{hint}.")
