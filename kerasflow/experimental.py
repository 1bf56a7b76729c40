"""``tf.keras.experimental`` names TF 1.14/1.15 programs call:
``export_saved_model`` / ``load_from_saved_model``, mapped onto kerasflow's
one safe model format (``model.save`` / ``models.load_model``: a zip of JSON
config and npz weights, never a pickle). It is NOT a TensorFlow SavedModel:
TensorFlow Serving cannot read it, kerasflow can."""

from __future__ import annotations

import os

__all__ = ["export_saved_model", "load_from_saved_model"]

_FILE = "model.keras"


def export_saved_model(model, saved_model_path, custom_objects=None,
                       as_text=None, input_signature=None, serving_only=False):
    """Saves ``model`` into the folder ``saved_model_path`` (kerasflow format).

    Raises:
        OSError: the folder cannot be written.
    """
    os.makedirs(saved_model_path, exist_ok=True)
    model.save(os.path.join(saved_model_path, _FILE))
    return saved_model_path


def load_from_saved_model(saved_model_path, custom_objects=None):
    """The model ``export_saved_model`` wrote into ``saved_model_path``.

    Raises:
        FileNotFoundError: no such export (naming the file looked for).
    """
    from kerasflow.models import load_model

    path = os.path.join(saved_model_path, _FILE)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"load_from_saved_model expects a folder written by "
                                f"export_saved_model: no '{path}'.")
    return load_model(path, custom_objects=custom_objects)
