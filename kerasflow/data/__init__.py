"""``kerasflow.data``: input pipelines with tf.data's names and semantics.

    import kerasflow as kf
    ds = (kf.data.Dataset.from_tensor_slices((x, y))
          .shuffle(1000, seed=0).batch(32).prefetch(kf.data.AUTOTUNE))
    model.fit(ds, epochs=5)

In process: elements are numpy arrays (or tuples/dicts of them); parallel
``map`` and ``prefetch`` use threads. This package knows nothing of
distribution: ``from_ray`` (Ray Data as training input) lives in
``kerasflow/distribute/ray_data.py`` and is served here as a lazy name, loaded
on first use.
"""

from __future__ import annotations

import importlib

from kerasflow.data import experimental
from kerasflow.data.cardinality import (
    AUTOTUNE,
    INFINITE_CARDINALITY,
    UNKNOWN_CARDINALITY,
)
from kerasflow.data.csv import decode_csv
from kerasflow.data.dataset import Dataset
from kerasflow.data.iterator import (
    Iterator,
    make_initializable_iterator,
    make_one_shot_iterator,
)
from kerasflow.data.options import Options
from kerasflow.data.readers import CsvDataset, TextLineDataset

__all__ = ["AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "CsvDataset",
           "Dataset", "Iterator", "Options", "TextLineDataset", "decode_csv",
           "experimental", "from_ray", "make_initializable_iterator",
           "make_one_shot_iterator"]


def __getattr__(name):  # Ray Data input belongs to distribution (one layer up)
    if name == "from_ray":
        return importlib.import_module("kerasflow.distribute.ray_data").from_ray
    raise AttributeError(f"module 'kerasflow.data' has no attribute {name!r}")
