"""Utilities (Keras ``keras.utils`` API)."""

from __future__ import annotations

from kerasflow.utils import checkpoint, io_utils
from kerasflow.utils.io_utils import (
    disable_interactive_logging,
    enable_interactive_logging,
    is_interactive_logging_enabled,
)
from kerasflow.utils.np_utils import normalize, to_categorical
from kerasflow.utils.py_dataset import PyDataset
from kerasflow.utils.random_seed import set_random_seed

__all__ = ["PyDataset", "checkpoint", "disable_interactive_logging",
           "enable_interactive_logging", "io_utils", "is_interactive_logging_enabled",
           "model_to_dot", "normalize", "plot_model", "set_random_seed",
           "to_categorical"]


def __getattr__(name):
    # Keras exposes these here; they read models, which sit above utils.
    if name in ("plot_model", "model_to_dot"):
        import importlib

        return getattr(importlib.import_module("kerasflow.models.plotting"), name)
    raise AttributeError(f"module 'kerasflow.utils' has no attribute {name!r}")
