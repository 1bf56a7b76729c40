"""``kerasflow.data.experimental``: tf.data.experimental's names that exist here."""

from __future__ import annotations

import itertools

import numpy as np

from kerasflow.data.cardinality import (
    AUTOTUNE,
    INFINITE_CARDINALITY,
    UNKNOWN_CARDINALITY,
)
from kerasflow.data.make_csv import make_csv_dataset
from kerasflow.data.options import AutoShardPolicy, DistributeOptions
from kerasflow.data.dataset import Dataset
from kerasflow.data.readers import CsvDataset
from kerasflow.data.structure import spec_of

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "AutoShardPolicy",
           "Counter", "CsvDataset", "DistributeOptions", "cardinality", "make_csv_dataset"]


def cardinality(dataset) -> int:
    """``dataset.cardinality()`` (tf.data.experimental.cardinality)."""
    return dataset.cardinality()


def Counter(start=0, step=1, dtype="int64") -> Dataset:  # noqa: N802 (TF's name)
    """The infinite dataset ``start, start + step, ...`` of scalars of
    ``dtype`` (``tf.data.experimental.Counter``); zip it with another to
    number that one's elements."""
    dt = np.dtype(getattr(dtype, "as_numpy_dtype", dtype))
    return Dataset(lambda: (dt.type(v) for v in itertools.count(start, step)),
                   INFINITE_CARDINALITY, spec_of(dt.type(start)))
