"""Models (L3): ``Model`` (functional and subclassed), ``Sequential``, the training
loop, saving and loading."""

from kerasflow.models.model import Model
from kerasflow.models.sequential import Sequential
from kerasflow.models.saving import (
    load_model, model_from_config, model_from_json, model_from_yaml,
)

__all__ = ["Model", "Sequential", "load_model", "model_from_json",
           "model_from_yaml", "model_from_config"]
