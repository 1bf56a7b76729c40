"""Models (L5): ``Model`` (functional and subclassed), ``Sequential``, the training
loop and ``clone_model``; saving and loading re-exported from
``kerasflow.saving.saving_lib`` (Keras 3's ``keras.models`` names)."""

from kerasflow.models.model import Model
from kerasflow.models.sequential import Sequential
from kerasflow.models.cloning import clone_model
from kerasflow.saving.saving_lib import (
    load_model, model_from_config, model_from_json, model_from_yaml, save_model,
)
from kerasflow.utils.keras_surface import missing_attribute

__all__ = ["Model", "Sequential", "clone_model", "load_model", "model_from_json",
           "model_from_yaml", "model_from_config", "save_model"]


def __getattr__(name):  # a Keras name kerasflow lacks: NotImplementedError
    raise missing_attribute("models", name)
