"""kerasflow.tree: Keras 3's nested-structure names, checked against Keras' rules
and against ``keras.tree`` on nested lists, tuples, named tuples and dicts."""

from __future__ import annotations

from collections import namedtuple

import pytest

from kerasflow import tree
from tests.keras_oracle import keras_numpy

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


# -- the rest of keras.tree, against Keras 3 ----------------------------------------

P = namedtuple("P", "a b")
S = {"b": [1, (2, 3)], "a": P(4, [5]), "c": None}


def _double(x):
    return x * 2 if isinstance(x, int) else None


@pytest.mark.parametrize("top_down", [True, False])
def test_traverse_equals_keras(top_down):
    keras = keras_numpy()
    assert tree.traverse(_double, S, top_down) == keras.tree.traverse(
        _double, S, top_down)


def test_traverse_map_to_none_and_replacement():
    keras = keras_numpy()

    def prune(marker):
        return lambda x: marker if isinstance(x, tuple) and not hasattr(
            x, "_fields") else None

    assert tree.traverse(prune(tree.MAP_TO_NONE), S) == keras.tree.traverse(
        prune(keras.tree.MAP_TO_NONE), S)
    assert tree.traverse(prune(tree.MAP_TO_NONE), S)["b"] == [1, None]
    # top down, a replaced node is not visited further
    assert tree.traverse(lambda x: "L" if isinstance(x, list) else None,
                         [[1], 2]) == "L"


def test_lists_to_tuples_equals_keras():
    keras = keras_numpy()
    assert tree.lists_to_tuples(S) == keras.tree.lists_to_tuples(S)
    assert tree.lists_to_tuples([1, [2, [3]]]) == (1, (2, (3,)))


def test_map_shape_structure_equals_keras():
    keras = keras_numpy()
    shapes = {"x": (None, 3), "y": [(2,), [4, 5]], "z": "q", "w": ()}
    assert tree.map_shape_structure(str, shapes) == keras.tree.map_shape_structure(
        str, shapes)


@pytest.mark.parametrize("shallow, fn, structures", [
    ((0, {"k": 0}), len, (([1, 2], {"k": [1, 2, 3]}),)),
    ([0, 0], lambda a, b: (a, b), ([[1], 2], [3, {"a": 4}])),
    ({"x": 0, "y": (0, 0)}, str, ({"y": ([1], 2), "x": {"q": 1}},)),
])
def test_map_structure_up_to_equals_keras(shallow, fn, structures):
    keras = keras_numpy()
    assert tree.map_structure_up_to(shallow, fn, *structures) == \
        keras.tree.map_structure_up_to(shallow, fn, *structures)


def test_map_structure_up_to_errors():
    with pytest.raises(ValueError, match="Must provide at least one structure"):
        tree.map_structure_up_to([0], len)
    with pytest.raises(ValueError, match="don't have the same nested structure"):
        tree.map_structure_up_to([0, 0], len, [1])


def test_assert_same_paths():
    keras = keras_numpy()
    tree.assert_same_paths([1, 2], (3, 4))
    keras.tree.assert_same_paths([1, 2], (3, 4))
    tree.assert_same_paths({"a": [1]}, {"a": (2,)})
    with pytest.raises(ValueError, match=r"don't have the same paths.*\n.*missing "
                                         r"in `b`"):
        tree.assert_same_paths([1, 2], {"a": 1})
    with pytest.raises(ValueError):
        keras.tree.assert_same_paths([1, 2], {"a": 1})
