"""StringLookup, IntegerLookup and TextVectorization. Keras' versions need
TensorFlow (absent here), so the expected values are Keras 3's documented
outputs (computed by TF) and hand-derived ones from Keras' index layout and
adapt ordering (count descending, ties by token descending)."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import backend as K
from kerasflow import layers as L

VOCAB = ["a", "b", "c", "d"]
DATA = np.array([["a", "c", "d"], ["d", "z", "b"]])


def test_string_lookup_documented_outputs():
    np.testing.assert_array_equal(L.StringLookup(vocabulary=VOCAB)(DATA),
                                  [[1, 3, 4], [4, 0, 2]])
    layer = L.StringLookup()
    layer.adapt(np.array([["d", "z", "b"], ["a", "c", "d"]]))
    assert layer.get_vocabulary() == ["[UNK]", "d", "z", "c", "b", "a"]
    assert layer.get_vocabulary(include_special_tokens=False) == ["d", "z", "c",
                                                                  "b", "a"]
    assert layer.vocabulary_size() == 6
    np.testing.assert_array_equal(
        L.StringLookup(vocabulary=VOCAB, num_oov_indices=2)(DATA),
        [[2, 4, 5], [5, 1, 3]])
    np.testing.assert_array_equal(
        L.StringLookup(vocabulary=VOCAB, output_mode="one_hot")(
            np.array(["a", "b", "c", "d", "z"])),
        [[0, 1, 0, 0, 0], [0, 0, 1, 0, 0], [0, 0, 0, 1, 0], [0, 0, 0, 0, 1],
         [1, 0, 0, 0, 0]])
    np.testing.assert_array_equal(
        L.StringLookup(vocabulary=VOCAB, output_mode="multi_hot")(DATA),
        [[0, 1, 0, 1, 1], [1, 0, 1, 0, 1]])
    counts = np.array([["a", "c", "d", "d"], ["d", "z", "b", "z"]])
    np.testing.assert_array_equal(
        L.StringLookup(vocabulary=VOCAB, output_mode="count")(counts),
        [[0, 1, 0, 1, 2], [2, 0, 1, 0, 1]])
    np.testing.assert_allclose(
        L.StringLookup(output_mode="tf_idf", vocabulary=VOCAB,
                       idf_weights=[0.25, 0.75, 0.6, 0.4])(counts),
        [[0, 0.25, 0, 0.6, 0.8], [1.0, 0, 0.75, 0, 0.4]], rtol=1e-6)
    inverted = L.StringLookup(vocabulary=VOCAB, invert=True)(
        np.array([[1, 3, 4], [4, 0, 2]]))
    assert inverted.tolist() == [["a", "c", "d"], ["d", "[UNK]", "b"]]


def test_string_lookup_mask_bytes_and_scalars():
    layer = L.StringLookup(vocabulary=VOCAB, mask_token="")
    assert layer.get_vocabulary() == ["", "[UNK]", "a", "b", "c", "d"]
    np.testing.assert_array_equal(layer(np.array([["a", "", "z"]])), [[2, 0, 1]])
    np.testing.assert_array_equal(layer(np.array([b"d", b"a"])), [5, 2])
    assert layer(np.array("b")) == 3
    np.testing.assert_array_equal(layer(["a", "c"]), [2, 4])
    # In a vector mode the mask counts nowhere and takes no index.
    hot = L.StringLookup(vocabulary=VOCAB, mask_token="", output_mode="multi_hot")
    np.testing.assert_array_equal(hot(np.array([["a", "", ""]])), [[0, 1, 0, 0, 0]])


def test_string_lookup_oov_buckets_hash_with_farmhash():
    layer = L.StringLookup(vocabulary=["a"], num_oov_indices=3)
    # OOV index = oov start + farmhash64(token) % 3 (Hashing's bins).
    expected = L.Hashing(3)(np.array(["x", "yy", "zzz"])) + 0
    np.testing.assert_array_equal(layer(np.array(["x", "yy", "zzz", "a"])),
                                  list(expected) + [3])


def test_integer_lookup_documented_outputs():
    vocab, data = [12, 36, 1138, 42], np.array([[12, 1138, 42], [42, 1000, 36]])
    np.testing.assert_array_equal(L.IntegerLookup(vocabulary=vocab)(data),
                                  [[1, 3, 4], [4, 0, 2]])
    layer = L.IntegerLookup()
    layer.adapt(data)
    assert layer.get_vocabulary() == [-1, 42, 1138, 1000, 36, 12]
    np.testing.assert_array_equal(
        L.IntegerLookup(vocabulary=vocab, num_oov_indices=2)(data),
        [[2, 4, 5], [5, 0, 3]])  # 1000 % 2 == 0: floormod buckets
    np.testing.assert_array_equal(
        L.IntegerLookup(vocabulary=vocab, invert=True)(np.array([[1, 3, 4],
                                                                 [4, 0, 2]])),
        [[12, 1138, 42], [42, -1, 36]])
    np.testing.assert_array_equal(
        L.IntegerLookup(vocabulary=vocab, mask_token=0)(np.array([[12, 0, 7]])),
        [[2, 0, 1]])
    np.testing.assert_array_equal(
        L.IntegerLookup(vocabulary=vocab, output_mode="multi_hot")(data),
        [[0, 1, 0, 1, 1], [1, 0, 1, 0, 1]])


def test_lookup_adapt_max_tokens_tf_idf_and_dataset():
    docs = np.array([["a", "b", "a"], ["b", "c", "c"], ["a", "d", "e"]])
    layer = L.StringLookup(max_tokens=4, output_mode="tf_idf")
    layer.adapt(kf.data.Dataset.from_tensor_slices(docs).batch(2))
    # counts a:3 c:2 b:2 d:1 e:1 -> a, c, b (ties by token descending); 4 max.
    assert layer.get_vocabulary() == ["[UNK]", "a", "c", "b"]
    # idf = log(1 + 3 / (1 + docs with the token)); OOV gets their mean.
    idf = np.log(1 + 3 / (1 + np.array([2, 1, 2])))
    out = layer(np.array([["a", "a", "z"]]))
    np.testing.assert_allclose(out, [[idf.mean(), 2 * idf[0], 0, 0]], rtol=1e-6)
    padded = L.StringLookup(max_tokens=6, pad_to_max_tokens=True,
                            output_mode="count")
    padded.adapt(docs)
    assert padded(np.array([["e"]])).shape == (1, 6)


def test_lookup_errors():
    with pytest.raises(RuntimeError, match="no vocabulary"):
        L.StringLookup()(np.array(["a"]))
    with pytest.raises(TypeError, match="runs eagerly on numpy arrays"):
        L.StringLookup(vocabulary=VOCAB)(K.placeholder("int64", (None, 2)))
    with pytest.raises(TypeError, match="expects string inputs"):
        L.StringLookup(vocabulary=VOCAB)(np.array([1, 2]))
    with pytest.raises(TypeError, match="expects integer inputs"):
        L.IntegerLookup(vocabulary=[1, 2])(np.array([1.5]))
    with pytest.raises(ValueError, match="repeated"):
        L.StringLookup(vocabulary=["a", "a"])
    with pytest.raises(ValueError, match="reserved mask token"):
        L.StringLookup(vocabulary=["a", ""], mask_token="")
    with pytest.raises(ValueError, match="num_oov_indices=0"):
        L.StringLookup(vocabulary=VOCAB, num_oov_indices=0)(np.array(["z"]))
    with pytest.raises(ValueError, match="larger than the maximum"):
        L.StringLookup(vocabulary=VOCAB, max_tokens=3)
    with pytest.raises(ValueError, match="Cannot adapt"):
        L.StringLookup(vocabulary=VOCAB).adapt(np.array(["a"]))
    with pytest.raises(ValueError, match="invert"):
        L.StringLookup(invert=True, output_mode="count")


def test_vocabularies_from_a_file_path_as_keras(tmp_path):
    """Keras 3's string_lookup_test / text_vectorization_test: one token per
    line; the config carries the tokens, so the file may go away."""
    path = tmp_path / "vocab.txt"
    path.write_text("a\nb\nc\n", encoding="utf-8")
    layer = L.StringLookup(vocabulary=str(path), oov_token="[OOV]",
                           mask_token="[MASK]")
    assert layer.get_vocabulary() == ["[MASK]", "[OOV]", "a", "b", "c"]
    text = L.TextVectorization(vocabulary=str(path), output_mode="int")
    np.testing.assert_array_equal(text(["a b c unknown"]), [[2, 3, 4, 1]])
    ints = tmp_path / "ints.txt"
    ints.write_text("5\n7\n\n", encoding="utf-8")
    np.testing.assert_array_equal(L.IntegerLookup(vocabulary=str(ints))(
        np.array([5, 7, 9])), [1, 2, 0])
    config = layer.get_config()
    path.unlink()
    assert L.StringLookup.from_config(config).get_vocabulary() == [
        "[MASK]", "[OOV]", "a", "b", "c"]
    with pytest.raises(FileNotFoundError):
        L.StringLookup(vocabulary=str(tmp_path / "missing.txt"))


def test_lookup_config_round_trip_keeps_adapted_vocabulary():
    layer = L.StringLookup(output_mode="tf_idf", mask_token="[M]")
    layer.adapt(np.array([["x", "y"], ["y", "z"]]))
    clone = L.deserialize(L.serialize(layer))
    assert clone.get_vocabulary() == layer.get_vocabulary()
    data = np.array([["x", "y", "q"]])
    np.testing.assert_allclose(clone(data), layer(data))
    ints = L.IntegerLookup(vocabulary=[5, 7], num_oov_indices=2, name="il")
    assert L.IntegerLookup.from_config(ints.get_config()).get_config() == \
        ints.get_config()


def test_text_vectorization_int_outputs():
    layer = L.TextVectorization(max_tokens=5000, output_sequence_length=4,
                                vocabulary=["earth", "wind", "and", "fire"])
    # Keras' documented output.
    np.testing.assert_array_equal(
        layer(np.array([["earth wind and Fire!"], ["fire and earth michigan"]])),
        [[2, 3, 4, 5], [5, 4, 2, 1]])
    adapted = L.TextVectorization(max_tokens=5)
    adapted.adapt(["The cat sat.", "the DOG, the cat"])
    # the:3 cat:2 sat:1 dog:1 -> 5 indices: '', [UNK], the, cat, sat.
    assert adapted.get_vocabulary() == ["", "[UNK]", "the", "cat", "sat"]
    # No output length: padded with 0 to the longest row.
    np.testing.assert_array_equal(adapted(["cat", "the dog sat"]),
                                  [[3, 0, 0], [2, 1, 4]])


def test_text_vectorization_standardize_split_ngrams():
    layer = L.TextVectorization(output_mode="multi_hot", ngrams=2)
    layer.adapt(["a b a", "b c"])
    assert layer.get_vocabulary() == ["[UNK]", "b", "a", "c", "b c", "b a", "a b"]
    np.testing.assert_array_equal(layer(["A, b!", "c c d"]),
                                  [[0, 1, 1, 0, 0, 0, 1], [1, 0, 0, 1, 0, 0, 0]])
    chars = L.TextVectorization(split="character", standardize=None,
                                vocabulary=["a", "B"])
    np.testing.assert_array_equal(chars(["aBx"]), [[2, 3, 1]])
    whole = L.TextVectorization(split=None, standardize="lower",
                                vocabulary=["new york"])
    np.testing.assert_array_equal(whole(np.array([["New York"], ["Paris"]])),
                                  [[2], [1]])
    # ASCII-only lowercasing, as TF's strings.lower.
    uni = L.TextVectorization(vocabulary=["École", "école"])
    np.testing.assert_array_equal(uni(["École"]), [[2]])
    custom = L.TextVectorization(standardize=lambda x: np.char.upper(x),
                                 vocabulary=["HI"])
    np.testing.assert_array_equal(custom(["hi there"]), [[2, 1]])


def test_text_vectorization_tf_idf_count_and_config():
    layer = L.TextVectorization(output_mode="tf_idf")
    layer.adapt(["a b a", "b c"])
    b, a, c = np.log(1 + 2 / 3), np.log(2.0), np.log(2.0)
    np.testing.assert_allclose(layer(["a b", "c c d"]),
                               [[0, b, a, 0], [np.mean([b, a, c]), 0, 0, 2 * c]],
                               rtol=1e-6)
    counts = L.TextVectorization(output_mode="count", max_tokens=6,
                                 pad_to_max_tokens=True)
    counts.adapt(["a b a", "b c"])
    np.testing.assert_array_equal(counts(["a b", "c c d"]),
                                  [[0, 1, 1, 0, 0, 0], [1, 0, 0, 2, 0, 0]])
    for tv in (layer, counts):
        clone = L.deserialize(L.serialize(tv))
        np.testing.assert_allclose(clone(["a b", "c c d"]), tv(["a b", "c c d"]))


def test_text_vectorization_in_a_data_pipeline():
    texts = np.array(["good movie", "bad movie", "good good"])
    tv = L.TextVectorization(output_sequence_length=3)
    tv.adapt(kf.data.Dataset.from_tensor_slices(texts).batch(2))
    ds = kf.data.Dataset.from_tensor_slices((texts, np.array([1, 0, 1]))).batch(3)
    x, y = next(iter(ds.map(lambda t, label: (tv(t), label))))
    np.testing.assert_array_equal(x, tv(texts))
    assert x.dtype == np.int64 and x.shape == (3, 3)


def test_text_vectorization_errors():
    with pytest.raises(RuntimeError, match="no vocabulary"):
        L.TextVectorization()(["a"])
    with pytest.raises(ValueError, match="last shape dimension must be 1"):
        L.TextVectorization(vocabulary=["a"])(np.array([["a", "b"]]))
    with pytest.raises(ValueError, match="output_sequence_length"):
        L.TextVectorization(output_mode="count", output_sequence_length=3)
    with pytest.raises(ValueError, match="standardize"):
        L.TextVectorization(standardize="upper")
    with pytest.raises(TypeError, match="string inputs"):
        L.TextVectorization(vocabulary=["a"])(np.array([1, 2]))
    with pytest.raises(TypeError, match="runs eagerly"):
        L.TextVectorization(vocabulary=["a"])(K.placeholder("float32", (None, 1)))


def test_output_shapes_of_the_eager_layers():
    assert L.StringLookup(vocabulary=VOCAB).compute_output_shape((2, 3)) == (2, 3)
    hot = L.StringLookup(vocabulary=VOCAB, output_mode="multi_hot")
    assert hot.compute_output_shape((2, 3)) == hot(DATA).shape == (2, 5)
    one = L.StringLookup(vocabulary=VOCAB, output_mode="one_hot")
    assert one.compute_output_shape((4, 1)) == one(np.array([["a"]] * 4)).shape
    assert L.Hashing(4, output_mode="count").compute_output_shape((2, 3)) == (2, 4)
    tv = L.TextVectorization(vocabulary=["a"], output_sequence_length=5)
    assert tv.compute_output_shape((3,)) == tv(["a", "b", "a a"]).shape == (3, 5)


def test_integer_lookup_oov_methods():
    floormod = L.IntegerLookup(vocabulary=[5], num_oov_indices=3, salt=9)
    np.testing.assert_array_equal(floormod(np.array([7, -1, 5])), [1, 2, 3])
    hashed = L.IntegerLookup(vocabulary=[5], num_oov_indices=3, oov_method="farmhash")
    np.testing.assert_array_equal(hashed(np.array([7, 12])),
                                  L.Hashing(3)(np.array(["7", "12"])))
    salted = L.IntegerLookup(vocabulary=[5], num_oov_indices=3, oov_method="farmhash",
                             salt=9)
    np.testing.assert_array_equal(salted(np.array([7, 12])),
                                  L.Hashing(3, salt=9)(np.array(["7", "12"])))
