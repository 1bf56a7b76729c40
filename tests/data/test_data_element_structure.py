"""One element structure per dataset, as tf.data fixes it when a dataset is
built: ``concatenate`` of another structure or dtype and a ``map`` whose
function returns another structure per element are refused (shapes may
differ); ``from_tensors`` of a Python set is refused."""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow.backend import TensorSpec
from kerasflow.data import Dataset


def test_concatenate_of_another_structure_is_refused():
    ints = Dataset.from_tensor_slices(np.arange(2))
    pairs = Dataset.from_tensor_slices((np.arange(2), np.arange(2)))
    joined = ints.concatenate(pairs)
    with pytest.raises(TypeError, match=r"concatenate: element 2 differs in "
                       r"structure or dtype from element 0.*Expected: "
                       r"TensorSpec\(shape=\(\), dtype=int64\). Received: \("):
        list(joined)
    with pytest.raises(TypeError, match="concatenate expects datasets with one "
                                        "element structure and dtypes"):
        joined.element_spec  # noqa: B018


def test_concatenate_of_another_dtype_is_refused():
    joined = Dataset.from_tensor_slices(np.arange(2)).concatenate(
        Dataset.from_tensor_slices(np.arange(2, dtype="int32")))
    with pytest.raises(TypeError, match=r"Expected: TensorSpec\(shape=\(\), "
                       r"dtype=int64\). Received: TensorSpec\(shape=\(\), "
                       r"dtype=int32\)"):
        list(joined)


def test_concatenate_of_other_shapes_relaxes_the_spec():
    joined = Dataset.from_tensor_slices(np.zeros((2, 3))).concatenate(
        Dataset.from_tensor_slices(np.ones((1, 5))))
    assert [e.shape for e in joined] == [(3,), (3,), (5,)]
    spec = joined.element_spec
    assert (spec.shape, spec.dtype) == ((None,), np.float64)
    same = Dataset.from_tensor_slices(np.arange(2)).concatenate(Dataset.range(2))
    assert [int(e) for e in same] == [0, 1, 0, 1]


@pytest.mark.parametrize("parallel", [None, 2])
def test_map_returning_another_structure_per_element_is_refused(parallel):
    ds = Dataset.range(4).map(lambda x: (x, x) if x % 2 else x,
                              num_parallel_calls=parallel)
    with pytest.raises(TypeError, match=r"map \(the function's output\): element 1 "
                       r"differs in structure or dtype from element 0"):
        list(ds)


def test_map_returning_another_dtype_or_dict_keys_is_refused():
    floats = Dataset.range(3).map(lambda x: np.float32(x) if x else x)
    with pytest.raises(TypeError, match=r"Expected: TensorSpec\(shape=\(\), "
                       r"dtype=int64\). Received: TensorSpec\(shape=\(\), "
                       r"dtype=float32\)"):
        list(floats)
    keys = Dataset.range(2).map(lambda x: {"a": x} if x else {"b": x})
    with pytest.raises(TypeError, match=r"Expected: \{'b'.*Received: \{'a'"):
        list(keys)


def test_map_returning_other_shapes_of_one_structure_is_kept():
    ds = Dataset.range(3).map(lambda x: np.zeros(int(x) + 1, "float32"))
    assert [e.shape for e in ds] == [(1,), (2,), (3,)]
    spec = ds.element_spec  # read from the first element
    assert isinstance(spec, TensorSpec) and spec.dtype == "float32"


@pytest.mark.parametrize("value", [{1, 2, 3}, frozenset({1}), (np.ones(2), {1})])
def test_from_tensors_of_a_set_is_refused(value):
    with pytest.raises(TypeError, match=r"from_tensors expects arrays, numbers or "
                       r"strings, in tuples or dicts. Received: a (set|frozenset)"):
        Dataset.from_tensors(value)


def test_from_tensor_slices_of_a_set_is_refused():
    with pytest.raises(TypeError, match="from_tensor_slices expects arrays.*"
                                        "Received: a set"):
        Dataset.from_tensor_slices({1, 2})
