"""Unit tests of kerasflow.models.input_checks (the pure checks fit calls)."""

from __future__ import annotations

import numpy as np
import pytest

from kerasflow import callbacks, layers, models
from kerasflow.models import input_checks as C


# -- as_array ------------------------------------------------------------------------
def test_as_array_passes_rectangular_data():
    a = C.as_array([[1, 2], [3, 4]])
    assert a.shape == (2, 2) and a.dtype.kind == "i"
    x = np.ones((2, 3), "float32")
    assert C.as_array(x) is x


@pytest.mark.parametrize("ragged, where, lens", [
    ([[1.0, 2.0], [3.0]], r"x \(top level\)", r"\[2, 1\]"),
    ([[[1, 2], [3, 4]], [[5, 6], [7]]], r"x\[1\]", r"\[2, 1\]"),
    ([[1.0, 2.0], 3.0], r"x \(top level\)", r"\[2, None\]"),
])
def test_as_array_names_where_lists_are_ragged(ragged, where, lens):
    with pytest.raises(ValueError, match=rf"rectangular array.*Received: ragged "
                                         rf"lists at {where}, item lengths {lens}"):
        C.as_array(ragged)


def test_as_array_refuses_strings_and_objects():
    with pytest.raises(TypeError, match=r"`y` expects numbers.*dtype <U1"):
        C.as_array(["a", "b"], "y")
    with pytest.raises(TypeError, match=r"expects numbers.*Received: ndarray"):
        C.as_array(np.array([object(), object()]))


# -- epochs, callbacks, generator arguments, validation_data ---------------------------
def test_check_epochs():
    assert C.check_epochs(5, 2) == (5, 2)
    assert C.check_epochs(np.int64(3)) == (3, 0)
    with pytest.raises(ValueError, match=r"`epochs` >= 0\. Received: epochs=-3"):
        C.check_epochs(-3)
    with pytest.raises(ValueError, match=r"initial_epoch <= epochs.*epochs=2, "
                                         r"initial_epoch=5"):
        C.check_epochs(2, 5)
    with pytest.raises(TypeError, match=r"`epochs` as an integer.*epochs=2\.5"):
        C.check_epochs(2.5)
    with pytest.raises(TypeError, match=r"epochs=True"):
        C.check_epochs(True)


def test_check_callbacks():
    es = callbacks.EarlyStopping()
    assert C.check_callbacks(None) == []
    assert C.check_callbacks((es,)) == [es]
    with pytest.raises(TypeError, match=r"list of Callback instances\. Received: "
                                        r"EarlyStopping.*\[EarlyStopping\(\.\.\.\)\]"):
        C.check_callbacks(es)
    with pytest.raises(TypeError, match=r"Received: callbacks\[1\]=str 'x'"):
        C.check_callbacks([es, "x"])


def test_check_generator_args():
    C.check_generator_args()
    with pytest.raises(ValueError, match=r"`y` to be None\. Received: y=ndarray of "
                                         r"shape \(2, 1\)"):
        C.check_generator_args(y=np.ones((2, 1)))
    with pytest.raises(ValueError, match=r"sample_weight"):
        C.check_generator_args(sample_weight=np.ones(2))
    with pytest.raises(ValueError, match=r"class_weight=None"):
        C.check_generator_args(class_weight={0: 1.0})
    with pytest.raises(ValueError, match=r"validation_split=0"):
        C.check_generator_args(validation_split=0.2)


def test_check_validation_data():
    x, y = np.ones((2, 3)), np.ones((2, 1))
    assert C.check_validation_data((x, y))[2] is None
    assert C.check_validation_data([x, y, np.ones(2)])[2].shape == (2,)
    with pytest.raises(ValueError, match=r"Received: a tuple of length 1"):
        C.check_validation_data((x,))
    with pytest.raises(ValueError, match=r"y_val=None"):
        C.check_validation_data((x, None))
    with pytest.raises(TypeError, match=r"Received: ndarray of shape \(2, 3\)"):
        C.check_validation_data(x)


# -- targets -------------------------------------------------------------------------
def test_check_targets_count():
    y = np.ones((4, 1))
    C.check_targets_count(y, ["out"])
    C.check_targets_count([y, y], ["a", "b"])
    C.check_targets_count({"a": y, "b": y}, ["a", "b"])
    with pytest.raises(ValueError, match=r"'m' has 2 outputs \['a', 'b'\] and "
                                         r"expects 2 target arrays.*Received: one "
                                         r"ndarray of shape \(4, 1\)"):
        C.check_targets_count(y, ["a", "b"], "m")
    with pytest.raises(ValueError, match=r"Received: a list of 3 item\(s\)"):
        C.check_targets_count([y, y, y], ["a", "b"])
    with pytest.raises(ValueError, match=r"missing \['b'\], unknown \['c'\]"):
        C.check_targets_count({"a": y, "c": y}, ["a", "b"])


def test_check_class_weight():
    assert C.check_class_weight({0: 1, np.int64(2): 0.5}, 3) == {0: 1.0, 2: 0.5}
    with pytest.raises(ValueError, match=r"\[0, 2\]\. Received: key -1"):
        C.check_class_weight({0: 1.0, -1: 5.0}, 3)
    with pytest.raises(ValueError, match=r"\[0, 2\]\. Received: key 3"):
        C.check_class_weight({3: 1.0}, 3)
    with pytest.raises(ValueError, match=r"key -1"):
        C.check_class_weight({-1: 1.0})  # n_classes unknown: still refused
    with pytest.raises(ValueError, match=r"finite weights >= 0\. Received: "
                                         r"class_weight\[1\]=nan"):
        C.check_class_weight({0: 1.0, 1: float("nan")}, 2)
    with pytest.raises(ValueError, match=r"class_weight\[0\]=-1\.0"):
        C.check_class_weight({0: -1.0}, 2)
    with pytest.raises(TypeError, match=r"integer class indices as keys\. "
                                        r"Received: key '0' of type str"):
        C.check_class_weight({"0": 1.0}, 2)
    with pytest.raises(TypeError, match=r"dict \{class index: weight\}"):
        C.check_class_weight([1.0, 2.0], 2)


def test_check_sparse_labels():
    out = C.check_sparse_labels(np.array([0.0, 2.0, 1.0]), 3)
    assert out.dtype == np.int64 and out.tolist() == [0, 2, 1]
    with pytest.raises(ValueError, match=r"`y` expect whole class indices\. "
                                         r"Received: 2\.7 at index \(1,\)"):
        C.check_sparse_labels([0.0, 2.7, 1.0], 3)
    with pytest.raises(ValueError, match=r"Received: nan at index \(0, 0\)"):
        C.check_sparse_labels([[np.nan], [1.0]], 3)
    with pytest.raises(ValueError, match=r"`labels` expect class indices in \[0, "
                                         r"2\]\. Received: 3 at index \(2,\)"):
        C.check_sparse_labels([0, 1, 3], 3, "labels")
    with pytest.raises(ValueError, match=r"Received: -1 at index \(0,\)"):
        C.check_sparse_labels([-1, 0], None)


def test_check_trainable():
    model = models.Sequential([layers.Dense(2, input_shape=(3,), name="d")],
                              name="frozen")
    C.check_trainable(model)
    model.layers[0].trainable = False
    with pytest.raises(ValueError, match=r"model 'frozen' to have trainable "
                                         r"weights\. Received: a model with none "
                                         r"\(2 non-trainable weight\(s\)\)"):
        C.check_trainable(model)


def test_check_steps():
    assert C.check_steps(None) is None and C.check_steps(np.int32(3)) == 3
    with pytest.raises(ValueError, match=r"`steps` expects None or an integer >= "
                                         r"1\. Received: steps=-1"):
        C.check_steps(-1)
    with pytest.raises(TypeError, match=r"validation_steps=2\.0"):
        C.check_steps(2.0, "validation_steps")


def test_check_loss_weights():
    C.check_loss_weights(None, ["a"])
    C.check_loss_weights([1.0, 0.5], ["a", "b"])
    C.check_loss_weights({"b": 2}, ["a", "b"])
    with pytest.raises(ValueError, match=r"finite weights >= 0\. Received: nan for "
                                         r"output 'a'"):
        C.check_loss_weights([float("nan")], ["a"])
    with pytest.raises(ValueError, match=r"one weight per output \(2: \['a', "
                                         r"'b'\]\)\. Received: 1 weight"):
        C.check_loss_weights([1.0], ["a", "b"])
    with pytest.raises(ValueError, match=r"unknown \['c'\]"):
        C.check_loss_weights({"c": 1.0}, ["a", "b"])
    with pytest.raises(TypeError, match=r"Received: float 1\.0"):
        C.check_loss_weights(1.0, ["a"])


# -- match_input_ranks ----------------------------------------------------------------
def test_match_input_ranks_adds_or_drops_a_trailing_axis_of_one():
    a, b, c = np.zeros((4, 28, 28)), np.zeros((4, 5, 1)), np.zeros((4, 3))
    got = C.match_input_ranks([a, b, c], [(None, 28, 28, 1), (None, 5), (None, 3)])
    assert [g.shape for g in got] == [(4, 28, 28, 1), (4, 5), (4, 3)]
    assert got[0].base is a  # a view, no copy
    same = C.match_input_ranks([a, c], [(None, 28, 28, 2), None])  # left alone
    assert [g.shape for g in same] == [(4, 28, 28), (4, 3)]
    assert C.match_input_ranks([a], None)[0] is a


def test_fit_evaluate_predict_expand_the_trailing_axis_as_keras():
    """keras.io's siamese example feeds (N, 28, 28) to Input((28, 28, 1))."""
    inputs = layers.Input((28, 28, 1))
    model = models.Model(inputs, layers.Dense(1)(layers.Flatten()(inputs)))
    model.compile("sgd", "mse")
    x = np.random.default_rng(0).random((8, 28, 28)).astype("float32")
    y = np.zeros((8, 1), "float32")
    model.fit(x, y, epochs=1, batch_size=4, verbose=0)
    np.testing.assert_array_equal(model.predict(x, verbose=0),
                                  model.predict(x[..., None], verbose=0))
    assert model.evaluate(x, y, verbose=0) == model.evaluate(x[..., None], y,
                                                             verbose=0)
    with pytest.raises(ValueError, match=r"expects data of shape \(None, 28, 28, 1\)"
                                         r". Received: data of shape \(8, 28, 27\)"):
        model.predict(x[..., :27], verbose=0)
