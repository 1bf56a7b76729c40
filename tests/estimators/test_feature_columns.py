"""Each feature column's output against hand-computed values."""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import backend as K
from kerasflow import feature_column as fc
from kerasflow.feature_column.base import fingerprint64


def _run(t):
    return np.asarray(K.Function([], [t])()[0]) if K.is_symbolic(t) else t


def test_numeric_column_shape_default_and_normalizer():
    col = fc.numeric_column("x", shape=[2], normalizer_fn=lambda v: (v - 1.0) / 2.0)
    out = fc.input_layer({"x": np.array([[1.0, 3.0], [5.0, 7.0]])}, [col])
    np.testing.assert_allclose(_run(out), [[0.0, 1.0], [2.0, 3.0]])
    d = fc.numeric_column("d", default_value=4.0)
    out = fc.transform_features({"other": np.zeros(3)}, [d])["d"]
    np.testing.assert_allclose(out, [[4.0]] * 3)


def test_bucketized_column_ids_and_one_hot():
    col = fc.bucketized_column(fc.numeric_column("age"), [18, 30, 50])
    f = {"age": np.array([5.0, 18.0, 29.9, 30.0, 80.0])}
    ids = fc.transform_features(f, [col])["age_bucketized/ids"][:, 0]
    np.testing.assert_array_equal(ids, [0, 1, 1, 2, 3])   # [b_i, b_{i+1})
    dense = _run(fc.input_layer(f, [col]))
    np.testing.assert_array_equal(dense, np.eye(4)[[0, 1, 1, 2, 3]])


def test_vocabulary_list_oov_bucket_and_default():
    oov = fc.categorical_column_with_vocabulary_list("c", ["a", "b", "c"],
                                                     num_oov_buckets=2)
    f = {"c": np.array(["b", "zzz", "a", ""])}
    t = fc.transform_features(f, [oov])
    expected_oov = 3 + fingerprint64(b"zzz") % 2
    np.testing.assert_array_equal(t["c/ids"][:, 0], [1, expected_oov, 0, 0])
    np.testing.assert_array_equal(t["c/weights"][:, 0], [1, 1, 1, 0])  # "" missing
    ind = _run(fc.input_layer(f, [fc.indicator_column(oov)]))
    want = np.zeros((4, 5))
    want[0, 1] = want[1, expected_oov] = want[2, 0] = 1
    np.testing.assert_array_equal(ind, want)
    # Without OOV buckets TF drops unseen values (-1): an all-zero indicator row.
    plain = fc.categorical_column_with_vocabulary_list("c", ["a", "b"])
    ind = _run(fc.input_layer({"c": np.array(["q", "b"])},
                              [fc.indicator_column(plain)]))
    np.testing.assert_array_equal(ind, [[0, 0], [0, 1]])
    dflt = fc.categorical_column_with_vocabulary_list("c", ["a", "b"],
                                                      default_value=0)
    assert fc.transform_features({"c": np.array(["q"])}, [dflt])["c/ids"][0, 0] == 0


def test_vocabulary_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("red\ngreen\nblue\n")
    col = fc.categorical_column_with_vocabulary_file("color", str(path))
    t = fc.transform_features({"color": np.array(["blue", "red"])}, [col])
    np.testing.assert_array_equal(t["color/ids"][:, 0], [2, 0])
    assert col.num_buckets == 3


def test_hash_bucket_fixed_expected_ids():
    col = fc.categorical_column_with_hash_bucket("h", 100)
    t = fc.transform_features({"h": np.array(["apple", "banana", "apple", "42"])},
                              [col])
    # Fixed values: fingerprint64 is BLAKE2b-64 of the UTF-8 text, stable forever.
    assert fingerprint64(b"apple") == int.from_bytes(
        __import__("hashlib").blake2b(b"apple", digest_size=8).digest(), "little")
    np.testing.assert_array_equal(t["h/ids"][:, 0], [
        fingerprint64(b"apple") % 100, fingerprint64(b"banana") % 100,
        fingerprint64(b"apple") % 100, fingerprint64(b"42") % 100])
    # Integers hash as their decimal text, as TF does.
    ints = fc.transform_features({"h": np.array([42])}, [col])["h/ids"][0, 0]
    assert ints == fingerprint64(b"42") % 100
    # Pinned ids: any change of the hash would break saved models.
    np.testing.assert_array_equal(t["h/ids"][:, 0], [18, 56, 18, 83])


def test_identity_column_and_out_of_range():
    col = fc.categorical_column_with_identity("i", 4)
    t = fc.transform_features({"i": np.array([0, 3, -1])}, [col])
    np.testing.assert_array_equal(t["i/ids"][:, 0], [0, 3, 0])
    np.testing.assert_array_equal(t["i/weights"][:, 0], [1, 1, 0])
    with pytest.raises(ValueError, match=r"expects values in \[0, 4\)"):
        fc.transform_features({"i": np.array([7])}, [col])
    d = fc.categorical_column_with_identity("i", 4, default_value=2)
    assert fc.transform_features({"i": np.array([7])}, [d])["i/ids"][0, 0] == 2


def test_crossed_column_hashes_documented_join():
    b = fc.bucketized_column(fc.numeric_column("age"), [30])
    cross = fc.crossed_column([b, "edu"], 50)
    t = fc.transform_features({"age": np.array([20.0, 40.0]),
                               "edu": np.array(["BS", "MS"])}, [cross])
    want = [fingerprint64(b"age_bucketized=0\x1fBS") % 50,
            fingerprint64(b"age_bucketized=1\x1fMS") % 50]
    np.testing.assert_array_equal(t["age_bucketized_X_edu/ids"][:, 0], want)
    # Multi-valued: the cartesian product of present values.
    multi = fc.crossed_column(["a", "b"], 1000)
    t = fc.transform_features({"a": np.array([["x", "y"]]),
                               "b": np.array([["z", ""]])}, [multi])
    got = sorted(t["a_X_b/ids"][0][t["a_X_b/weights"][0] > 0].tolist())
    assert got == sorted([fingerprint64(b"x\x1fz") % 1000,
                          fingerprint64(b"y\x1fz") % 1000])


def test_embedding_column_mean_combiner_matches_manual_lookup():
    cat = fc.categorical_column_with_vocabulary_list("w", ["a", "b", "c"])
    emb = fc.embedding_column(cat, 2, combiner="mean")
    state = {}
    f = {"w": np.array([["a", "c"], ["b", ""]])}
    out = _run(fc.input_layer(f, [emb], state=state))
    table = next(v for v in state.values()).numpy()
    np.testing.assert_allclose(out[0], (table[0] + table[2]) / 2, rtol=1e-6)
    np.testing.assert_allclose(out[1], table[1], rtol=1e-6)
    s = fc.embedding_column(cat, 2, combiner="sqrtn")
    st2 = {}
    out = _run(fc.input_layer(f, [s], state=st2))
    t2 = next(v for v in st2.values()).numpy()
    np.testing.assert_allclose(out[0], (t2[0] + t2[2]) / np.sqrt(2), rtol=1e-6)


def test_weighted_categorical_column_in_linear_model():
    cat = fc.categorical_column_with_identity("ids", 3)
    w = fc.weighted_categorical_column(cat, "wts")
    f = {"ids": np.array([[0, 2], [1, -1]]), "wts": np.array([[0.5, 2.0],
                                                             [3.0, 0.0]])}
    state = {}
    logits = fc.linear_model(f, [w], units=1, state=state)
    table = state[("linear", w.name)]
    table.assign(np.array([[1.0], [10.0], [100.0]], np.float32))
    np.testing.assert_allclose(_run(logits)[:, 0], [0.5 + 200.0, 30.0])


def test_missing_feature_key_names_it():
    col = fc.numeric_column("age")
    with pytest.raises(KeyError, match="expects feature key 'age'.*'height'"):
        fc.transform_features({"height": np.zeros(2)}, [col])


def test_categorical_column_in_input_layer_is_a_type_error():
    cat = fc.categorical_column_with_identity("i", 3)
    with pytest.raises(TypeError, match="DenseColumn"):
        fc.input_layer({"i": np.array([1])}, [cat])
