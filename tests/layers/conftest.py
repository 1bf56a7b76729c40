"""Layer test setup: ``tests.backend.gradcheck`` and ``contract`` importable
under both ``python -m pytest`` and plain ``pytest``; the ``mixed_float16``
fixture."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import kerasflow as kf
from tests.keras_oracle import keras_numpy

for _p in (Path(__file__).resolve().parents[2], Path(__file__).resolve().parent):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))


@pytest.fixture
def mixed_float16():
    """The global policy "mixed_float16" in kerasflow and in Keras' oracle
    (yielded); both back to unset / "float32" afterwards."""
    keras = keras_numpy()
    kf.mixed_precision.set_global_policy("mixed_float16")
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        yield keras
    finally:
        # Unset, not a pinned float32: later tests switch floatx and expect
        # layers to follow it.
        kf.dtype_policies._GLOBAL[0] = None
        keras.mixed_precision.set_global_policy("float32")
