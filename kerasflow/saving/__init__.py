"""``kerasflow.saving`` (L4): Keras 3's ``keras.saving`` names.

ONNX export of an inference graph (``onnx_export``: ``export_onnx``, which
``Model.export(format="onnx")`` calls). Saving and loading whole models and
weights (``saving_lib``: one zip of
architecture JSON and the one checkpoint format; configs checked by
``config_checks`` before any layer is built, weights matched by
``weight_names``), and the object
registry of ``kerasflow.utils.serialization``: ``register_keras_serializable``,
``get_custom_objects``, ``custom_object_scope``, ``serialize_keras_object`` /
``deserialize_keras_object``, ``get_registered_name`` /
``get_registered_object``.
"""

from __future__ import annotations

from kerasflow.saving.api import (
    deserialize_keras_object,
    load_model,
    load_weights,
    save_model,
    save_weights,
    serialize_keras_object,
)
from kerasflow.saving.onnx_export import export_onnx
from kerasflow.utils.keras_surface import missing_attribute
from kerasflow.utils.serialization import (
    CustomObjectScope,
    custom_object_scope,
    get_custom_objects,
    get_registered_name,
    get_registered_object,
    register_keras_serializable,
)

__all__ = ["CustomObjectScope", "custom_object_scope", "deserialize_keras_object",
           "export_onnx", "get_custom_objects", "get_registered_name",
           "get_registered_object", "load_model", "load_weights", "register_keras_serializable",
           "save_model", "save_weights", "serialize_keras_object"]


def __getattr__(name):
    raise missing_attribute("saving", name)
