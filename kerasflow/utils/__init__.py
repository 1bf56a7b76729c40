"""Utilities (Keras ``keras.utils`` API)."""

from __future__ import annotations

from kerasflow.utils import checkpoint
from kerasflow.utils.np_utils import normalize, to_categorical
from kerasflow.utils.py_dataset import PyDataset

__all__ = ["PyDataset", "checkpoint", "to_categorical", "normalize"]
