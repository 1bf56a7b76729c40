"""kerasflow.tree: Keras 3's nested-structure names, checked against Keras' rules."""

from __future__ import annotations

from collections import namedtuple

import pytest

from kerasflow import tree

Point = namedtuple("Point", "x y")


def test_flatten_orders_dict_values_by_sorted_key():
    assert tree.flatten({"b": [1, 2], "a": 3}) == [3, 1, 2]
    assert tree.flatten({"a": 3, "b": [1, 2]}) == [3, 1, 2]


def test_leaves_include_none_and_strings():
    assert tree.flatten([None, "ab", (1,)]) == [None, "ab", 1]
    assert tree.flatten(5) == [5]
    assert tree.flatten([]) == []


def test_pack_sequence_as_rebuilds_containers_and_namedtuples():
    s = {"b": Point(1, [2, 3]), "a": (4,)}
    packed = tree.pack_sequence_as(s, [10, 20, 30, 40])
    assert packed == {"a": (10,), "b": Point(20, [30, 40])}
    assert isinstance(packed["b"], Point)


def test_pack_sequence_as_counts_leaves():
    with pytest.raises(ValueError, match="leaves \\(3\\). Received: 2"):
        tree.pack_sequence_as([1, (2, 3)], [1, 2])
    with pytest.raises(ValueError, match="leaves \\(1\\). Received: 2"):
        tree.pack_sequence_as([1], [1, 2])


def test_map_structure_over_several_structures():
    out = tree.map_structure(lambda a, b: a + b, {"k": [1, 2]}, {"k": [10, 20]})
    assert out == {"k": [11, 22]}


def test_assert_same_structure_names_the_difference():
    tree.assert_same_structure([1, {"a": 2}], [5, {"a": 6}])
    with pytest.raises(ValueError, match="differ"):
        tree.assert_same_structure([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="differ"):
        tree.assert_same_structure({"a": 1}, {"b": 1})
    with pytest.raises(ValueError, match="nested"):
        tree.assert_same_structure([1], 1)


def test_deep_nesting_does_not_recurse_in_flatten():
    deep = 0
    for _ in range(5_000):
        deep = [deep]
    assert tree.flatten(deep) == [0]


def test_flatten_with_path_matches_keras_order_and_paths():
    # Keras 3's keras.tree.flatten_with_path gives exactly this.
    assert tree.flatten_with_path({"b": [1, (2, {"z": 3, "y": 4})], "a": 5}) == [
        (("a",), 5), (("b", 0), 1), (("b", 1, 0), 2), (("b", 1, 1, "y"), 4),
        (("b", 1, 1, "z"), 3)]
    assert tree.flatten_with_path(7) == [((), 7)]
