"""Weights load by name (else by layer structure), all-or-nothing, with the
unmatched names of both sides in the error; files without layer paths load by
position."""

from __future__ import annotations

import numpy as np
import pytest

import kerasflow as kf
from kerasflow import layers as L
from kerasflow.saving import weight_names
from kerasflow.utils.checkpoint import save_checkpoint


def _two_branches(first):
    inp = kf.Input((3,))
    branches = {"left": L.Dense(2, name="left"), "right": L.Dense(2, name="right")}
    order = [first, "right" if first == "left" else "left"]
    out = L.Concatenate()([branches[n](inp) for n in order])
    return kf.Model(inp, out)


def _by_layer(model):
    return {layer.name: [w.copy() for w in layer.get_weights()]
            for layer in model.layers if layer.weights}


def test_names_are_unique_and_stable_and_nested_models_prefix_them():
    inner_a = kf.Sequential([L.Dense(2, input_shape=(2,), name="dense")], name="a")
    inner_b = kf.Sequential([L.Dense(2, input_shape=(2,), name="dense")], name="b")
    inp = kf.Input((2,))
    model = kf.Model(inp, inner_b(inner_a(inp)))
    names, paths = weight_names.weight_keys(model)
    assert names == ["a/dense/kernel", "a/dense/bias", "b/dense/kernel",
                     "b/dense/bias"]
    assert paths == ["sequential/dense/kernel", "sequential/dense/bias",
                     "sequential_1/dense/kernel", "sequential_1/dense/bias"]


def test_weights_go_to_the_layer_of_their_name_not_their_position(tmp_path):
    src = _two_branches("left")
    src.set_weights([np.full(w.shape, i + 1.0, np.float32)
                     for i, w in enumerate(src.get_weights())])
    src.save_weights(tmp_path / "w.npz")
    dst = _two_branches("right")  # same names, other order in dst.weights
    assert [w.name.split("/")[0] for w in dst.weights][0] == "right"
    dst.load_weights(tmp_path / "w.npz")
    want = _by_layer(src)
    for name, arrays in _by_layer(dst).items():
        for a, b in zip(arrays, want[name]):
            np.testing.assert_array_equal(a, b)


def test_a_model_rebuilt_in_code_loads_by_structure(tmp_path):
    def build():
        return kf.Sequential([L.Dense(4, activation="relu", input_shape=(3,)),
                              L.Dense(2)])

    src, dst = build(), build()  # automatic names differ: dense_k vs dense_m
    assert src.layers[0].name != dst.layers[0].name
    src.save_weights(tmp_path / "w.npz")
    dst.load_weights(tmp_path / "w.npz")
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(dst(x), src(x))


def test_unmatched_weights_are_listed_and_nothing_loads(tmp_path):
    src = kf.Sequential([L.Dense(4, input_shape=(3,), name="hidden"),
                         L.Dense(2, name="out")])
    src.save_weights(tmp_path / "w.npz")
    dst = kf.Sequential([L.Dense(4, input_shape=(3,), name="hidden"),
                         L.Dense(2, name="head"), L.Dense(1, name="extra")])
    before = dst.get_weights()
    with pytest.raises(ValueError, match=r"In the file only: \['out/bias', "
                       r"'out/kernel'\]\. In the model only: \['extra/bias', "
                       r"'extra/kernel', 'head/bias', 'head/kernel'\]"):
        dst.load_weights(tmp_path / "w.npz")
    for a, b in zip(before, dst.get_weights()):
        np.testing.assert_array_equal(a, b)
    # Names match but a shape differs: refused by the shape check, all or nothing.
    wide = kf.Sequential([L.Dense(4, input_shape=(3,), name="hidden"),
                          L.Dense(5, name="out")])
    before = wide.get_weights()
    with pytest.raises(ValueError, match=r"Weight 'out.*expects shape"):
        wide.load_weights(tmp_path / "w.npz")
    for a, b in zip(before, wide.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_files_without_paths_load_by_position(tmp_path):
    src = kf.Sequential([L.Dense(3, input_shape=(2,)), L.Dense(1)])
    # A checkpoint of foreign names and no layer paths (e.g. a Saver's).
    save_checkpoint(tmp_path / "old.npz",
                    dict(zip(["x/kernel", "x/bias", "y/kernel", "y/bias"],
                             src.get_weights())))
    dst = kf.Sequential([L.Dense(3, input_shape=(2,)), L.Dense(1)])
    with pytest.warns(UserWarning, match="loading by position"):
        dst.load_weights(tmp_path / "old.npz")
    for a, b in zip(src.get_weights(), dst.get_weights()):
        np.testing.assert_array_equal(a, b)
