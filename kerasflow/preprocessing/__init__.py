"""``keras.preprocessing`` (Keras 3): the dataset builders and the ``image``
and ``sequence`` helpers, the same functions ``kerasflow.utils`` offers."""

from __future__ import annotations

from kerasflow.data.directory import (
    image_dataset_from_directory,
    text_dataset_from_directory,
)
from kerasflow.data.timeseries import timeseries_dataset_from_array
from kerasflow.preprocessing import image, sequence

__all__ = ["image", "image_dataset_from_directory", "sequence",
           "text_dataset_from_directory", "timeseries_dataset_from_array"]
