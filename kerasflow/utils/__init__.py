"""Utilities (Keras ``keras.utils`` API)."""

from __future__ import annotations

from kerasflow.utils.np_utils import normalize, to_categorical
from kerasflow.utils.py_dataset import PyDataset

__all__ = ["PyDataset", "to_categorical", "normalize"]
