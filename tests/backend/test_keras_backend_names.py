"""``keras.backend`` names (Keras 3) on ``kerasflow.backend``: dtype promotion
and dtype names against Keras, the backend name, ``is_keras_tensor``, unique
ids and ``clear_session``."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as B
from kerasflow import config
from tests.keras_oracle import keras_numpy

PAIRS = [("float64",), ("float64", "float64"), ("int64", "float32"),
         ("int32", float), ("bfloat16", int), ("uint8", "int8"), ("bool", int),
         (int, float), ("complex64", int), (), ("int16", "uint32"),
         (None, "int8"), ("float16", "bfloat16"), (bool,), ("uint64", "int64"),
         ("int8", "float16"), ("uint16", "int16", "float32"), ("bool", "bool")]


@pytest.mark.parametrize("dtypes", PAIRS, ids=str)
def test_result_type_equals_keras(dtypes):
    keras = keras_numpy()
    assert B.result_type(*dtypes) == keras.backend.result_type(*dtypes)


def test_result_type_errors():
    with pytest.raises(ValueError, match="float8"):
        B.result_type("float8_e4m3fn", "float32")
    with pytest.raises(ValueError, match="Invalid dtype: float"):
        B.result_type("float")


@pytest.mark.parametrize("dtype", ["int", int, float, bool, "uint8", "bfloat16",
                                   np.float64, np.dtype("int16"), None, "string"])
def test_dtype_names_equal_keras(dtype):
    keras = keras_numpy()
    kb = keras.backend
    assert B.standardize_dtype(dtype) == kb.standardize_dtype(dtype)
    if dtype != "string":
        assert B.is_float_dtype(dtype) == kb.is_float_dtype(dtype)
        assert B.is_int_dtype(dtype) == kb.is_int_dtype(dtype)


def test_backend_name_and_keras_tensor():
    assert B.backend() == config.backend() == "numpy"
    x = kf.Input((3,))
    assert B.is_keras_tensor(x) and not B.is_keras_tensor(np.ones(3))
    assert kf.utils.is_keras_tensor is B.is_keras_tensor


def test_get_uid_and_clear_session_restart_layer_names():
    B.clear_session()
    assert B.get_uid("thing") == 1 and B.get_uid("thing") == 2
    assert kf.layers.Dense(1).name == "dense"
    assert kf.layers.Dense(1).name == "dense_1"
    kf.utils.clear_session()
    assert B.get_uid("thing") == 1
    assert kf.layers.Dense(1).name == "dense"
    with B.uid_scope():
        assert kf.layers.Dense(1).name == "dense"
    assert kf.layers.Dense(1).name == "dense_1"
