"""Utilities (Keras 3's ``keras.utils`` names)."""

from __future__ import annotations

from kerasflow.utils import checkpoint, io_utils
from kerasflow.backend.keras_backend import clear_session
from kerasflow.utils.config_utils import Config
from kerasflow.utils.data_utils import (
    get_source_inputs,
    is_keras_tensor,
    pack_x_y_sample_weight,
    standardize_dtype,
    unpack_x_y_sample_weight,
)
from kerasflow.utils.download import get_file
from kerasflow.utils.image_utils import (
    array_to_img,
    img_to_array,
    load_img,
    save_img,
)
from kerasflow.utils.io_utils import (
    disable_interactive_logging,
    enable_interactive_logging,
    is_interactive_logging_enabled,
)
from kerasflow.utils.keras_surface import missing_attribute
from kerasflow.utils.np_utils import normalize, to_categorical
from kerasflow.utils.progbar import Progbar
from kerasflow.utils.py_dataset import PyDataset
from kerasflow.utils.py_dataset import PyDataset as Sequence  # Keras 3's alias
from kerasflow.utils.random_seed import set_random_seed
from kerasflow.utils.sequence_utils import pad_sequences
from kerasflow.utils.serialization import (
    CustomObjectScope,
    custom_object_scope,
    get_custom_objects,
    get_registered_name,
    get_registered_object,
    register_keras_serializable,
)

__all__ = ["Config", "CustomObjectScope", "Progbar", "PyDataset", "array_to_img",
           "checkpoint", "clear_session", "get_file", "get_source_inputs",
           "image_dataset_from_directory", "img_to_array", "legacy", "load_img",
           "save_img", "text_dataset_from_directory",
           "custom_object_scope", "deserialize_keras_object",
           "disable_interactive_logging", "enable_interactive_logging",
           "get_custom_objects", "get_registered_name", "get_registered_object",
           "io_utils", "is_interactive_logging_enabled", "is_keras_tensor",
           "model_to_dot", "normalize", "pack_x_y_sample_weight",
           "pad_sequences", "plot_model", "register_keras_serializable",
           "Sequence", "serialize_keras_object", "set_random_seed",
           "split_dataset", "standardize_dtype", "timeseries_dataset_from_array",
           "to_categorical", "unpack_x_y_sample_weight"]

# Keras exposes these here; they live in packages above utils (models, data,
# saving), so they load on first use.
_ABOVE = {"plot_model": "kerasflow.models.plotting",
          "model_to_dot": "kerasflow.models.plotting",
          "timeseries_dataset_from_array": "kerasflow.data.timeseries",
          "split_dataset": "kerasflow.data.timeseries",
          "serialize_keras_object": "kerasflow.saving.api",
          "deserialize_keras_object": "kerasflow.saving.api",
          "image_dataset_from_directory": "kerasflow.data.directory",
          "text_dataset_from_directory": "kerasflow.data.directory"}


def __getattr__(name):
    import importlib  # noqa: PLC0415

    if name in _ABOVE:
        return getattr(importlib.import_module(_ABOVE[name]), name)
    if name == "legacy":  # keras.utils.legacy: the legacy saving functions
        return importlib.import_module("kerasflow.legacy.saving")
    raise missing_attribute("utils", name)  # a Keras name: NotImplementedError
