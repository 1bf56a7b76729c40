"""EinsumDense: Keras 3 as the oracle over its equation forms (plain, leading
and trailing ellipses, bias axes), shapes, float64 gradients, contract,
errors."""

from __future__ import annotations

import numpy as np
import pytest
from contract import check_contract

from kerasflow import layers as L
from tests.backend.gradcheck import check_gradients
from tests.keras_oracle import keras_numpy

RNG = np.random.RandomState(0)


@pytest.mark.parametrize("equation,output_shape,bias_axes,shape,want", [
    ("ab,bc->ac", 7, "c", (2, 6), (2, 7)),
    ("abc,cd->abd", (5, 7), "d", (2, 5, 6), (2, 5, 7)),
    ("abc,cd->abd", (5, 7), "bd", (2, 5, 6), (2, 5, 7)),
    ("abc,cde->abde", (5, 3, 4), "de", (2, 5, 6), (2, 5, 3, 4)),
    ("...b,bc->...c", 7, None, (2, 5, 6), (2, 5, 7)),
    ("...b,bc->...c", 7, "c", (2, 3, 5, 6), (2, 3, 5, 7)),
    ("ab...,bc->ac...", (7,), "c", (2, 6, 5), (2, 7, 5)),
    ("abcd,cde->abe", (3, 4), "e", (2, 3, 2, 5), (2, 3, 4)),
])
def test_matches_keras(equation, output_shape, bias_axes, shape, want):
    keras = keras_numpy()
    kw = dict(equation=equation, output_shape=output_shape, bias_axes=bias_axes,
              activation="tanh")
    ours, theirs = L.EinsumDense(**kw), keras.layers.EinsumDense(**kw)
    x = RNG.randn(*shape).astype("float32")
    ours(x)
    theirs(x)
    weights = [(w + RNG.randn(*w.shape) * 0.3).astype(w.dtype)
               for w in ours.get_weights()]
    assert [w.shape for w in weights] == [tuple(w.shape) for w in theirs.weights]
    ours.set_weights(weights)
    theirs.set_weights(weights)
    got = ours(x)
    assert got.shape == want
    np.testing.assert_allclose(got, np.asarray(theirs(x)), rtol=1e-5, atol=1e-6)
    assert ours.compute_output_shape((None,) + shape[1:])[1:] == want[1:]


def test_gradients(float64):
    rng = np.random.RandomState(1)

    def fn(x, kernel, bias):
        layer = L.EinsumDense("abc,cde->abde", (3, 2, 4), bias_axes="de",
                              activation="sigmoid", dtype="float64")
        layer.build(x.shape)
        layer.kernel, layer.bias = kernel, bias
        return layer.call(x)

    check_gradients(fn, [rng.randn(2, 3, 5), rng.randn(5, 2, 4),
                         rng.randn(2, 4)])


def test_contract(tmp_path):
    check_contract(lambda: L.EinsumDense("abc,cd->abd", (None, 4), bias_axes="d"),
                   (4, 3, 5), (4, 3, 4), tmp_path)


def test_errors():
    with pytest.raises(ValueError, match="Invalid einsum equation"):
        L.EinsumDense("ab->b", 3)
    x = np.ones((2, 5, 6), "float32")
    with pytest.raises(ValueError, match="do not match at shared dimension 'b'"):
        L.EinsumDense("abc,cd->abd", (4, 7), name="ed_err1")(x)
    with pytest.raises(ValueError, match="Bias dimension 'x'"):
        L.EinsumDense("abc,cd->abd", (5, 7), bias_axes="x", name="ed_err2")(x)
    with pytest.raises(ValueError, match="Weight dimension 'e'"):
        L.EinsumDense("abc,cde->abd", (5, 7), name="ed_err3")(x)


def test_variance_scaling_uses_the_kernels_input_and_output_axes():
    keras = keras_numpy()
    x = np.ones((2, 5, 64), "float32")
    ours = L.EinsumDense("abc,cde->abde", (5, 16, 32), name="ed_fans")
    theirs = keras.layers.EinsumDense("abc,cde->abde", (5, 16, 32))
    ours(x)
    theirs(x)
    # glorot_uniform with fan_in = c = 64 and fan_out = d * e = 512.
    want = np.sqrt(6 / (64 + 512) / 3)
    assert abs(ours.kernel.numpy().std() / want - 1) < 0.03
    assert abs(np.asarray(theirs.kernel.value).std() / want - 1) < 0.03
