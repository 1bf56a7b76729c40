"""One element structure per dataset, as tf.data fixes it when a dataset is
built: ``concatenate`` of another structure or dtype and a ``map`` whose
function returns another structure per element are refused (shapes may
differ); ``from_tensors`` of a Python set is refused."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
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


def test_elements_have_tf2_numpy_and_training_reads_plain_arrays():
    # TF 2 code: for x, y in ds.take(1): print(x.numpy()); element.numpy().
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    ds = kf.data.Dataset.from_tensor_slices((x, np.array([0, 1, 1])))
    for a, b in ds.take(1):
        assert type(a.numpy()) is np.ndarray and a.shape == (2,)
        np.testing.assert_array_equal(a.numpy(), [0.0, 1.0])
        assert type(b.numpy()) is np.int64 and b.numpy() == 0
        assert a.dtype == np.float32 and float(a.sum()) == 1.0
    (text,) = list(kf.data.Dataset.from_tensor_slices(np.array([b"hi"], object)))
    assert text.numpy() == b"hi" and type(text.numpy()) is bytes
    batch = next(iter(ds.batch(3)))[0]
    assert type(batch.numpy()) is np.ndarray and batch.numpy().shape == (3, 2)
    assert all(type(v) is np.ndarray for v in next(ds.batch(3).as_numpy_iterator()))
    model = kf.Sequential([kf.layers.Dense(1, input_shape=(2,))])
    model.compile("sgd", "mse")
    assert type(model.predict(ds.batch(2).map(lambda a, b: a), verbose=0)) \
        is np.ndarray


def test_mapped_dataset_pickles_with_its_function():
    # Multi-worker strategies ship a pipeline to each replica (cloudpickle).
    pickle = pytest.importorskip("ray.cloudpickle")
    ds = Dataset.range(3).map(_double)
    list(ds)  # after a pass, the function holds its state
    assert [int(v) for v in pickle.loads(pickle.dumps(ds))] == [0, 2, 4]


def _double(x):
    return x * 2
