"""CategoryEncoding and Discretization against Keras 3 (numpy backend);
Hashing's FarmHash / SipHash bins against Keras' documented outputs and
FarmHash's reference values (Keras' Hashing needs TensorFlow, absent here)."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from kerasflow import layers as L
from kerasflow.layers.preprocessing.hash_functions import fingerprint64, siphash64
from tests.keras_oracle import keras_numpy

_INPUTS = [np.array(3), np.array([1, 2, 2]), np.array([[1], [3]]),
           np.array([[0, 1, 1], [3, 3, 2]])]


@pytest.mark.parametrize("mode", ["one_hot", "multi_hot", "count"])
@pytest.mark.parametrize("x", _INPUTS, ids=["scalar", "vector", "column", "matrix"])
def test_category_encoding_matches_keras(mode, x):
    keras = keras_numpy()
    ours = L.CategoryEncoding(5, mode)(x)
    theirs = np.asarray(keras.layers.CategoryEncoding(5, mode)(x))
    np.testing.assert_array_equal(ours, theirs)
    assert ours.dtype == theirs.dtype == np.float32


def test_category_encoding_count_weights_literal_and_symbolic():
    keras = keras_numpy()
    x = np.array([[0, 1, 1], [3, 3, 2]])
    w = np.array([[0.5, 1.0, 2.0], [1.0, 1.0, 4.0]], "float32")
    ours = L.CategoryEncoding(4, "count")(x, count_weights=w)
    np.testing.assert_allclose(ours, [[0.5, 3.0, 0, 0], [0, 0, 4.0, 2.0]])
    np.testing.assert_allclose(ours, np.asarray(
        keras.layers.CategoryEncoding(4, "count")(x, count_weights=w)))
    layer = L.CategoryEncoding(4)
    model = kf.Model(inp := kf.Input((3,), dtype="int64"), layer(inp))
    np.testing.assert_array_equal(model.predict(x, verbose=0),
                                  [[1, 1, 0, 0], [0, 0, 1, 1]])


def test_category_encoding_errors():
    with pytest.raises(ValueError, match="num_tokens must be set"):
        L.CategoryEncoding()
    with pytest.raises(ValueError, match="output_mode"):
        L.CategoryEncoding(3, "tf_idf")
    with pytest.raises(ValueError, match="count_weights"):
        L.CategoryEncoding(3, "multi_hot")(np.array([1]), count_weights=np.ones(1))
    with pytest.raises(TypeError, match="integer inputs"):
        L.CategoryEncoding(3)(np.array([0.5]))


@pytest.mark.parametrize("mode", ["int", "one_hot", "multi_hot", "count"])
def test_discretization_matches_keras(mode):
    keras = keras_numpy()
    x = np.array([[-1.0, 0.0, 0.5, 1.0], [2.0, 3.0, -5, 1.5]], "float32")
    ours = L.Discretization([0.0, 1.0, 2.0], output_mode=mode)(x)
    theirs = np.asarray(keras.layers.Discretization([0.0, 1.0, 2.0],
                                                    output_mode=mode)(x))
    np.testing.assert_array_equal(ours, theirs)
    assert ours.dtype == theirs.dtype
    if mode == "int":
        np.testing.assert_array_equal(ours, [[0, 1, 1, 2], [3, 3, 0, 2]])


@pytest.mark.parametrize("kw", [{"num_bins": 4}, {"num_bins": 7, "epsilon": 0.05}])
def test_discretization_adapt_matches_keras(kw):
    keras = keras_numpy()
    d = np.random.RandomState(0).randn(1000).astype("float32")
    ours = L.Discretization(**kw)
    ours.adapt(d)
    theirs = keras.layers.Discretization(**kw)
    theirs.update_state(d)  # Keras' adapt minus its tf.data type check
    theirs.finalize_state()
    np.testing.assert_allclose(ours.bin_boundaries, theirs.bin_boundaries)
    # In batches through kf.data: the merged summary, as Keras merges.
    batched = L.Discretization(**kw)
    batched.adapt(kf.data.Dataset.from_tensor_slices(d).batch(250))
    theirs = keras.layers.Discretization(**kw)
    for i in range(0, 1000, 250):
        theirs.update_state(d[i:i + 250])
    theirs.finalize_state()
    np.testing.assert_allclose(batched.bin_boundaries, theirs.bin_boundaries)
    clone = L.Discretization.from_config(ours.get_config())
    np.testing.assert_array_equal(clone(d[:20]), ours(d[:20]))


def test_discretization_symbolic_and_errors():
    layer = L.Discretization([0.0, 1.0])
    y = layer(K.placeholder("float32", (None, 2)))
    assert K.is_symbolic(y) and y.dtype == np.int32
    with pytest.raises(ValueError, match="call `adapt"):
        L.Discretization(num_bins=3)(np.array([1.0]))
    with pytest.raises(ValueError, match="Both `num_bins` and `bin_boundaries`"):
        L.Discretization([0.0], num_bins=2)
    with pytest.raises(ValueError, match="use `num_bins`"):
        L.Discretization([0.0]).adapt(np.array([1.0]))


def test_farmhash_and_siphash_reference_values():
    # FarmHash Fingerprint64 reference values (pyfarmhash 0.5.1, which wraps
    # Google's farmhash.cc) across the length classes 0-16, 17-32, 33-64, >64.
    assert fingerprint64(b"") == 0x9AE16A3B2F90404F
    assert fingerprint64(b"kerasflow") == 8346690367326412150
    assert fingerprint64("préprocessing ünicode".encode()) == 16013643972087633017
    assert fingerprint64(b"a string of more than thirty-two bytes!!") == \
        3227307137213508884
    assert fingerprint64(b"x" * 100) == 6590480085648050719
    # SipHash-2-4 test vector of the paper (key 00..0f, message 00..0e).
    key = (int.from_bytes(bytes(range(8)), "little"),
           int.from_bytes(bytes(range(8, 16)), "little"))
    assert siphash64(key, bytes(range(15))) == 0xA129CA6149BE45E5


def test_hashing_matches_keras_documented_bins():
    inp = np.array([["A"], ["B"], ["C"], ["D"], ["E"]])
    np.testing.assert_array_equal(L.Hashing(3)(inp).ravel(), [1, 0, 1, 1, 2])
    np.testing.assert_array_equal(L.Hashing(3, salt=[133, 137])(inp).ravel(),
                                  [1, 2, 1, 0, 2])
    np.testing.assert_array_equal(L.Hashing(3, salt=133)(inp).ravel(),
                                  [0, 0, 2, 1, 0])
    masked = L.Hashing(3, mask_value="")(np.array([["A"], ["B"], [""], ["C"],
                                                   ["D"]]))
    np.testing.assert_array_equal(masked.ravel(), [1, 1, 0, 2, 2])
    # TF's documented to_hash_bucket_fast(["Hello", "TensorFlow", "2.x"], 3).
    np.testing.assert_array_equal(L.Hashing(3)(np.array(["Hello", "TensorFlow",
                                                         "2.x"])), [0, 2, 2])
    # Integers hash as their decimal text; bytes as themselves.
    np.testing.assert_array_equal(L.Hashing(7)(np.array([12, 345])),
                                  L.Hashing(7)(np.array(["12", "345"])))
    np.testing.assert_array_equal(L.Hashing(3)(np.array([b"A", b"B"])), [1, 0])
    out = L.Hashing(3, output_mode="multi_hot")(np.array([["A", "B"]]))
    np.testing.assert_array_equal(out, [[1.0, 1.0, 0.0]])
    assert out.dtype == np.float32
    assert L.Hashing(3)(inp).dtype == np.int64


def test_hashing_config_and_errors():
    layer = L.Hashing(5, mask_value="", salt=7, name="h")
    config = layer.get_config()
    assert config["salt"] == [7, 7]
    clone = L.deserialize(L.serialize(layer))
    np.testing.assert_array_equal(clone(np.array(["a", "", "b"])),
                                  layer(np.array(["a", "", "b"])))
    with pytest.raises(ValueError, match="num_bins"):
        L.Hashing(0)
    with pytest.raises(ValueError, match="salt"):
        L.Hashing(3, salt="x")
    with pytest.raises(TypeError, match="runs eagerly on numpy arrays"):
        L.Hashing(3)(K.placeholder("int64", (None, 1)))
