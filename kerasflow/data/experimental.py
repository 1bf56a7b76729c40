"""``kerasflow.data.experimental``: tf.data.experimental's names that exist here."""

from __future__ import annotations

from kerasflow.data.cardinality import (
    AUTOTUNE,
    INFINITE_CARDINALITY,
    UNKNOWN_CARDINALITY,
)
from kerasflow.data.make_csv import make_csv_dataset
from kerasflow.data.options import AutoShardPolicy, DistributeOptions
from kerasflow.data.readers import CsvDataset

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "AutoShardPolicy",
           "CsvDataset", "DistributeOptions", "cardinality", "make_csv_dataset"]


def cardinality(dataset) -> int:
    """``dataset.cardinality()`` (tf.data.experimental.cardinality)."""
    return dataset.cardinality()
